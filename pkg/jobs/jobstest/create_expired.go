package jobstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// ItemDeleter is what the suite needs of a store to test an intent whose
// items expired: a way to delete one item, as DynamoDB's TTL does. DynamoDB
// deletes an expired item some time after its expires_at (typically within
// two days, AWS says) and in no particular order, and reads return the
// item until then; so a test deletes exactly the items it wants gone. key
// is a job id, or jobs.IntentKey(tenant, intent) for an intent's marker.
// Every store handed to Run must implement it (a harness may wrap the store
// to do so).
type ItemDeleter interface {
	DeleteItem(ctx context.Context, key string) error
}

func deleter(t *testing.T, s jobs.Store) ItemDeleter {
	t.Helper()
	d, ok := s.(ItemDeleter)
	require.True(t, ok, "the store handed to jobstest.Run must implement jobstest.ItemDeleter (%T does not)", s)
	return d
}

// endedJob creates the job of intent (its id derived from the intent, as
// intake's is), fails it, and moves the clock past the TTL of the job and
// of the intent's marker: both items have expired, and neither is deleted.
func (b *bundle) endedJob(t *testing.T, intent string, spec map[string]string) jobs.Job {
	t.Helper()
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{IntentID: intent, Tenant: b.tenant, Spec: spec})
	require.NoError(t, err)
	require.False(t, res.Existing)
	return b.end(t, res.Job)
}

// end fails the new job j and moves the clock past the TTL of the job and
// of its intent's marker.
func (b *bundle) end(t *testing.T, j jobs.Job) jobs.Job {
	t.Helper()
	j = b.claim(t, j.ID, "attempt-a", time.Minute)
	b.clock.Advance(time.Second)
	f, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: j.ID, AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
		Failure: jobs.Failure{Code: "source_gone"}})
	require.NoError(t, err)
	b.clock.Set(f.ExpiresAt.Add(time.Hour))
	return f
}

// requireNewJob checks that res is a job Create has just written for req:
// pending, at generation and version 0, created now, with its run command.
func (b *bundle) requireNewJob(t *testing.T, req jobs.CreateRequest, res jobs.CreateResult, id string) {
	t.Helper()
	require.False(t, res.Existing, "a new job, not the expired one")
	j := res.Job
	require.Equal(t, id, j.ID)
	require.Equal(t, req.IntentID, j.IntentID)
	require.Equal(t, b.tenant, j.Tenant)
	require.Equal(t, jobs.StatusPending, j.Status)
	require.Zero(t, j.Generation)
	require.Zero(t, j.Version)
	require.Zero(t, j.Progress)
	require.Empty(t, j.LeaseOwner)
	require.Equal(t, jobs.Failure{}, j.Error)
	require.Equal(t, req.Spec, j.Spec)
	require.Equal(t, ms(b.clock.Now()), j.CreatedAt)
	require.True(t, j.ExpiresAt.IsZero(), "a live job has no TTL")
	require.Equal(t, jobs.Message{ID: id + "/v0", Type: jobs.MessageRun}, j.Outbox)
	require.Equal(t, j, b.get(t, id))
	// The intent now names the new job: a retry is answered with it.
	again, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, j, again.Job)
}

// testCreateAfterTheIntentsJobExpired: the rule for an intent whose job
// has expired is that the job item decides, whatever became of the
// marker. While the item is there (expired or not: reads return it until
// DynamoDB deletes it), a retry is answered with it, as GET shows it. Once
// it is deleted, the intent is free and a retry creates a new job, with the
// spec it carries: exactly what happens once both items are deleted, which
// leaves no trace of the intent. A marker that outlived its job is thus
// never an error (it used to be, for ever, until its own deletion).
//
// The new job written over a marker gets jobs.SuccessorJobID of the id the
// marker names, never the expired job's id: the projections of a job id
// never expire, and a new job under an old id would meet the old job's
// final cursor. Once both items are deleted nothing remembers the old id,
// and the new job gets the derived id again (the limitation package jobs
// documents).
func testCreateAfterTheIntentsJobExpired(t *testing.T, newStore NewStore) {
	spec := map[string]string{"source": "articles"}
	for _, tc := range []struct {
		name                string
		deleteMarker        bool
		deleteJob           bool
		retrySpec           map[string]string
		wantNew             bool
		proposeAnotherJobID bool
	}{
		{name: "nothing deleted yet: the expired job", retrySpec: spec},
		{name: "marker deleted first: the expired job", deleteMarker: true, retrySpec: spec},
		{name: "job deleted first: a new job", deleteJob: true, retrySpec: spec, wantNew: true},
		{name: "both deleted: a new job", deleteMarker: true, deleteJob: true, retrySpec: spec, wantNew: true},
		{name: "job deleted first, another spec: a new job", deleteJob: true, retrySpec: map[string]string{"source": "articles", "page_size": "10"}, wantNew: true},
		{name: "both deleted, another spec: a new job", deleteMarker: true, deleteJob: true, retrySpec: map[string]string{"page_size": "10"}, wantNew: true},
		{name: "job deleted first, another proposed id: a new job of that id", deleteJob: true, retrySpec: spec, wantNew: true, proposeAnotherJobID: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, newStore)
			del := deleter(t, b.store)
			ended := b.endedJob(t, "export-intent-7", spec)
			if tc.deleteMarker {
				require.NoError(t, del.DeleteItem(b.ctx, jobs.IntentKey(b.tenant, "export-intent-7")))
			}
			if tc.deleteJob {
				require.NoError(t, del.DeleteItem(b.ctx, ended.ID))
			}
			b.clock.Advance(time.Minute)
			req := jobs.CreateRequest{IntentID: "export-intent-7", Tenant: b.tenant, Spec: tc.retrySpec}
			id := ended.ID
			if tc.wantNew && !tc.deleteMarker {
				id = jobs.SuccessorJobID(b.tenant, "export-intent-7", ended.ID)
				require.NotEqual(t, ended.ID, id)
			}
			if tc.proposeAnotherJobID {
				req.JobID, id = b.id("job-43"), b.id("job-43")
			}
			res, err := b.store.Create(b.ctx, req)
			require.NoError(t, err)
			if tc.wantNew {
				b.requireNewJob(t, req, res, id)
				return
			}
			require.True(t, res.Existing)
			require.Equal(t, ended, res.Job)
			b.requireUnchanged(t, ended)
		})
	}
}

// testThirdIncarnationOfAnIntent: each job written over a dangling marker
// gets an id that no earlier job of the intent had, the third as well as
// the second.
func testThirdIncarnationOfAnIntent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	del := deleter(t, b.store)
	const intent = "export-intent-7"
	req := jobs.CreateRequest{IntentID: intent, Tenant: b.tenant}
	first := b.endedJob(t, intent, nil)
	require.NoError(t, del.DeleteItem(b.ctx, first.ID))
	res, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	second := jobs.SuccessorJobID(b.tenant, intent, first.ID)
	b.requireNewJob(t, req, res, second)
	b.end(t, res.Job)
	require.NoError(t, del.DeleteItem(b.ctx, second))
	res, err = b.store.Create(b.ctx, req)
	require.NoError(t, err)
	third := jobs.SuccessorJobID(b.tenant, intent, second)
	require.NotContains(t, []string{first.ID, second}, third)
	b.requireNewJob(t, req, res, third)
	_, err = b.store.Get(b.ctx, first.ID)
	require.ErrorIs(t, err, jobs.ErrNotFound, "the first job's id is not reused while the marker remembers the intent")
}

// testConcurrentCreatesAfterTheJobExpired: retries racing over a marker
// whose job was deleted, each proposing no id (as intake's do), make one
// new job between them, under the successor id they all derive.
func testConcurrentCreatesAfterTheJobExpired(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	del := deleter(t, b.store)
	ended := b.endedJob(t, "export-intent-7", nil)
	require.NoError(t, del.DeleteItem(b.ctx, ended.ID))
	j := b.raceCreates(t, func(int) jobs.CreateRequest {
		return jobs.CreateRequest{IntentID: "export-intent-7", Tenant: b.tenant}
	})
	require.Equal(t, jobs.SuccessorJobID(b.tenant, "export-intent-7", ended.ID), j.ID)
	require.Equal(t, jobs.StatusPending, j.Status)
	require.Zero(t, j.Version)
}

// testConcurrentCreatesWithTheirOwnIDsAfterTheJobExpired: retries racing
// over a marker whose job was deleted, each proposing its own job id (as an
// intake with random ids would), make one new job between them. Unlike the
// race above, their job puts name distinct items and cannot serialise them:
// only the condition on the old marker does, so this race is what proves
// it (with that condition always true, every caller wrote its own job).
// Two callers must both read the old marker before either writes, which
// one race does not always bring about: the race is run raceRounds times,
// each on an intent of its own (on PostgreSQL, one race caught a store
// without the condition in 5 runs of 20, twenty races in 27 runs of 30).
func testConcurrentCreatesWithTheirOwnIDsAfterTheJobExpired(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	del := deleter(t, b.store)
	for round := range raceRounds {
		intent := fmt.Sprintf("export-intent-%d", round)
		ended := b.endedJob(t, intent, nil)
		require.NoError(t, del.DeleteItem(b.ctx, ended.ID))
		j := b.createConcurrently(t, intent, fmt.Sprintf("job-r%d", round))
		require.NotEqual(t, ended.ID, j.ID)
		require.Equal(t, jobs.StatusPending, j.Status)
		require.Zero(t, j.Version)
		res, err := b.store.Create(b.ctx, jobs.CreateRequest{IntentID: intent, Tenant: b.tenant})
		require.NoError(t, err)
		require.True(t, res.Existing, "the marker names the winner's job")
		require.Equal(t, j, res.Job)
	}
}

// raceRounds is how many times a race that need not show its fault every
// time is run.
const raceRounds = 20
