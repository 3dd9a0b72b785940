package jobstest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testLive: the live listing holds the jobs that are not final, by their
// last transition, oldest first, strictly before the cutoff and at most
// limit of them. The test's clock runs years before every other test's, so
// a store shared with them lists only this test's jobs before its cutoffs.
func testLive(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-5, 0, 0)
	b := setupAt(t, t0, newStore, jobs.Config{})
	lister, ok := b.store.(jobs.Lister)
	require.True(t, ok, "%T does not implement jobs.Lister", b.store)
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }

	a := b.create(t, "job-a") // t0
	at(time.Minute)
	bb := b.create(t, "job-b")
	at(2 * time.Minute)
	c := b.create(t, "job-c")
	at(3 * time.Minute)
	d := b.create(t, "job-d")
	at(4 * time.Minute)
	b.claim(t, d.ID, "attempt-d", time.Minute) // running, updated at t0+4m
	at(5 * time.Minute)
	e := b.create(t, "job-e")
	at(6 * time.Minute)
	_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: e.ID}) // final
	require.NoError(t, err)
	at(7 * time.Minute)
	f := b.create(t, "job-f")
	fj := b.claim(t, f.ID, "attempt-f", time.Minute)
	at(8 * time.Minute)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: f.ID, AttemptID: "attempt-f", Generation: 1, Version: fj.Version,
		Result: result(f.ID, "attempt-f", 1)}) // final
	require.NoError(t, err)

	live := func(before time.Duration, limit int, want ...string) {
		t.Helper()
		// The DynamoDB index is eventually consistent: give it a moment.
		var got []string
		for try := 0; ; try++ {
			got, err = lister.Live(b.ctx, t0.Add(before), limit)
			require.NoError(t, err)
			if slices.Equal(want, got) || try == 20 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, append([]string{}, want...), append([]string{}, got...), "live before t0+%v, limit %d", before, limit)
	}
	live(0, 10)
	live(time.Millisecond, 10, a.ID)
	live(4*time.Minute, 10, a.ID, bb.ID, c.ID) // d was updated at the cutoff: not before it
	live(4*time.Minute+time.Millisecond, 10, a.ID, bb.ID, c.ID, d.ID)
	live(time.Hour, 10, a.ID, bb.ID, c.ID, d.ID) // e and f are final
	live(time.Hour, 2, a.ID, bb.ID)

	// A transition moves a job's last update: a nudged job goes to the end.
	at(9 * time.Minute)
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: a.ID, Generation: 0, Version: 0})
	require.NoError(t, err)
	live(9*time.Minute, 10, bb.ID, c.ID, d.ID)
	live(time.Hour, 10, bb.ID, c.ID, d.ID, a.ID)

	for _, limit := range []int{0, -1} {
		_, err = lister.Live(b.ctx, t0.Add(time.Hour), limit)
		require.ErrorIs(t, err, jobs.ErrInvalid)
	}
}

// testFinished: the finished listing holds the final jobs (completed,
// failed, cancelled), by the time of their final transition and then by id,
// strictly after the cursor and strictly before the bound, at most limit of
// them; a live job is never in it. The test's clock runs years before every
// other test's (and testLive's), so a store shared with them lists only
// this test's jobs before its bounds.
func testFinished(t *testing.T, newStore NewStore) {
	t0 := Start.AddDate(-6, 0, 0)
	b := setupAt(t, t0, newStore, jobs.Config{})
	lister, ok := b.store.(jobs.FinishedLister)
	require.True(t, ok, "%T does not implement jobs.FinishedLister", b.store)
	at := func(d time.Duration) { t.Helper(); b.clock.Set(t0.Add(d)) }

	a := b.create(t, "job-a")
	c := b.create(t, "job-c")
	d := b.create(t, "job-d")
	live := b.create(t, "job-live")
	b.claim(t, live.ID, "attempt-l", 10*time.Minute)
	at(time.Minute)
	_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: c.ID}) // final at t0+1m
	require.NoError(t, err)
	aj := b.claim(t, a.ID, "attempt-a", 10*time.Minute)
	dj := b.claim(t, d.ID, "attempt-d", 10*time.Minute)
	at(2 * time.Minute)
	// Two jobs end in the same millisecond: by id.
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: d.ID, AttemptID: "attempt-d", Generation: 1, Version: dj.Version,
		Failure: jobs.Failure{Code: "source_gone", Message: "gone"}})
	require.NoError(t, err)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: a.ID, AttemptID: "attempt-a", Generation: 1, Version: aj.Version,
		Result: result(a.ID, "attempt-a", 1)})
	require.NoError(t, err)
	at(3 * time.Minute)
	e := b.create(t, "job-e")
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: e.ID}) // final at t0+3m
	require.NoError(t, err)

	key := func(id string, d time.Duration) jobs.FinishedJob {
		return jobs.FinishedJob{ID: id, Key: jobs.FinishedKey(id, t0.Add(d))}
	}
	fc, fa, fd, fe := key(c.ID, time.Minute), key(a.ID, 2*time.Minute), key(d.ID, 2*time.Minute), key(e.ID, 3*time.Minute)
	finished := func(after string, before time.Duration, limit int, want ...jobs.FinishedJob) {
		t.Helper()
		// The DynamoDB index is eventually consistent: give it a moment.
		var got []jobs.FinishedJob
		for try := 0; ; try++ {
			got, err = lister.Finished(b.ctx, after, t0.Add(before), limit)
			require.NoError(t, err)
			if slices.Equal(want, got) || try == 20 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Equal(t, append([]jobs.FinishedJob{}, want...), append([]jobs.FinishedJob{}, got...),
			"finished after %q before t0+%v, limit %d", after, before, limit)
	}
	finished("", time.Minute, 10) // c ended at the bound: not before it
	finished("", time.Minute+time.Millisecond, 10, fc)
	ab, db := fa, fd
	if db.ID < ab.ID {
		ab, db = db, ab
	}
	finished("", time.Hour, 10, fc, ab, db, fe) // never the live job
	finished("", time.Hour, 2, fc, ab)
	finished(ab.Key, time.Hour, 2, db, fe) // strictly after the cursor
	finished(fe.Key, time.Hour, 10)
	finished(jobs.FinishedBound(t0.Add(2*time.Minute)), time.Hour, 10, ab, db, fe)
	finished(jobs.FinishedBound(t0.Add(2*time.Minute)), 2*time.Minute, 10) // the cursor is at the bound
	finished(jobs.FinishedBound(t0.Add(time.Hour)), 2*time.Minute, 10)     // and past it

	// The live job ends: it joins the listing at its final transition.
	at(4 * time.Minute)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: live.ID})
	require.NoError(t, err)
	finished(fe.Key, time.Hour, 10, key(live.ID, 4*time.Minute))

	for _, limit := range []int{0, -1} {
		_, err = lister.Finished(b.ctx, "", t0.Add(time.Hour), limit)
		require.ErrorIs(t, err, jobs.ErrInvalid)
	}
}

// testGetMany: GetMany reads what Get reads, each job once, and leaves out
// jobs that do not exist; more than one batch's worth of ids is fine.
func testGetMany(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	getter, ok := b.store.(jobs.BatchGetter)
	require.True(t, ok, "%T does not implement jobs.BatchGetter", b.store)
	a := b.create(t, "job-a")
	c := b.create(t, "job-c")
	b.claim(t, c.ID, "attempt-c", time.Minute)
	ids := []string{a.ID, c.ID, a.ID}
	for i := range 120 {
		ids = append(ids, b.id(fmt.Sprintf("job-missing-%d", i)))
	}
	got, err := getter.GetMany(b.ctx, ids)
	require.NoError(t, err)
	require.Equal(t, map[string]jobs.Job{a.ID: b.get(t, a.ID), c.ID: b.get(t, c.ID)}, got)

	none, err := getter.GetMany(b.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = getter.GetMany(b.ctx, []string{a.ID, jobs.IntentKey(b.tenant, "intent-job-a")})
	require.ErrorIs(t, err, jobs.ErrInvalid, "an intent marker is not a job")
}
