package jobstest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// indexReads counts the reads of each index a listing makes.
type indexReads struct {
	jobs.ListStore
	live, finished atomic.Int64
}

func (r *indexReads) LiveAfter(ctx context.Context, after jobs.LivePosition, before time.Time, limit int) ([]jobs.LivePosition, error) {
	r.live.Add(1)
	return r.ListStore.LiveAfter(ctx, after, before, limit)
}

func (r *indexReads) Finished(ctx context.Context, after string, before time.Time, limit int) ([]jobs.FinishedJob, error) {
	r.finished.Add(1)
	return r.ListStore.Finished(ctx, after, before, limit)
}

// testListByStatus: a listing of one status shows that status's jobs
// only, in the order of their index, at every page size; a live status
// reads only the live index and a final one only the finished index; a
// token refuses another status; an unknown status, or one the other
// options leave out, is refused. The test's clock runs three years
// before the others', after every other listing test's bounds.
func testListByStatus(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-3, 0, 0)
	b := setupAt(t, t0, newStore, jobs.Config{})
	st, ok := b.store.(jobs.ListStore)
	require.True(t, ok, "%T does not implement jobs.ListStore", b.store)
	reads := &indexReads{ListStore: st}
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }
	claim := func(name string) jobs.Job {
		t.Helper()
		return b.claim(t, b.create(t, name).ID, "attempt-"+name, 10*time.Minute)
	}
	p1 := b.create(t, "job-p1").ID
	at(time.Minute)
	r1 := claim("job-r1").ID
	at(2 * time.Minute)
	c := claim("job-c1")
	_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: c.ID, AttemptID: "attempt-job-c1", Generation: 1, Version: c.Version,
		Result: result(c.ID, "attempt-job-c1", 1)})
	require.NoError(t, err)
	at(3 * time.Minute)
	f := claim("job-f1")
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: f.ID, AttemptID: "attempt-job-f1", Generation: 1, Version: f.Version,
		Failure: jobs.Failure{Code: "source_gone"}})
	require.NoError(t, err)
	at(4 * time.Minute)
	x1 := b.create(t, "job-x1").ID
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: x1})
	require.NoError(t, err)
	at(5 * time.Minute)
	p2 := b.create(t, "job-p2").ID
	r2 := claim("job-r2").ID
	at(10 * time.Minute)

	list := func(o jobs.ListOptions) (jobs.ListPage, error) { return jobs.List(b.ctx, reads, o, b.clock.Now()) }
	for status, want := range map[jobs.Status][]string{
		jobs.StatusPending: {p1, p2}, jobs.StatusRunning: {r1, r2},
		jobs.StatusCompleted: {c.ID}, jobs.StatusFailed: {f.ID}, jobs.StatusCancelled: {x1},
	} {
		for limit := 1; limit <= 3; limit++ {
			reads.live.Store(0)
			reads.finished.Store(0)
			walkList(t, b, list, jobs.ListOptions{Limit: limit, Tenant: b.tenant, Status: status}, want...)
			if status.Final() {
				require.Zero(t, reads.live.Load(), "%s reads the finished index only", status)
			} else {
				require.Zero(t, reads.finished.Load(), "%s reads the live index only", status)
			}
		}
		walkList(t, b, list, jobs.ListOptions{Status: status}, want...) // every tenant's
	}

	// A token is its status's.
	first, err := list(jobs.ListOptions{Limit: 1, Tenant: b.tenant, Status: jobs.StatusPending})
	require.NoError(t, err)
	require.True(t, first.More)
	for _, o := range []jobs.ListOptions{
		{Limit: 1, Tenant: b.tenant, Status: jobs.StatusRunning, Token: first.Token},
		{Limit: 1, Tenant: b.tenant, Token: first.Token},
		{Limit: 1, Tenant: b.tenant, LiveOnly: true, Token: first.Token},
	} {
		_, err := list(o)
		require.ErrorIs(t, err, jobs.ErrBadToken, "%+v", o)
	}
	walkList(t, b, list, jobs.ListOptions{Limit: 1, Tenant: b.tenant, Status: jobs.StatusPending, Token: first.Token}, p2)
	unfiltered, err := list(jobs.ListOptions{Limit: 1, Tenant: b.tenant})
	require.NoError(t, err)
	_, err = list(jobs.ListOptions{Limit: 1, Tenant: b.tenant, Status: jobs.StatusPending, Token: unfiltered.Token})
	require.ErrorIs(t, err, jobs.ErrBadToken, "a listing of any status's token")

	// Bad statuses, and statuses the other options leave out.
	for _, o := range []jobs.ListOptions{
		{Status: "paused"}, {Status: "Pending"},
		{Status: jobs.StatusCompleted, LiveOnly: true}, {Status: jobs.StatusRunning, Since: time.Hour},
	} {
		_, err := list(o)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", o)
		require.NotErrorIs(t, err, jobs.ErrBadToken, "%+v", o)
	}
	// What they may be combined with.
	walkList(t, b, list, jobs.ListOptions{Tenant: b.tenant, Status: jobs.StatusRunning, LiveOnly: true}, r1, r2)
	walkList(t, b, list, jobs.ListOptions{Tenant: b.tenant, Status: jobs.StatusCancelled, Since: 7 * time.Minute}, x1)
	walkList(t, b, list, jobs.ListOptions{Tenant: b.tenant, Status: jobs.StatusCompleted, Since: 7 * time.Minute})
}
