package jobstest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testCreateIsIdempotentPerIntent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	req := jobs.CreateRequest{
		JobID: b.id("job-42"), IntentID: "export-intent-7", Tenant: b.tenant,
		Spec: map[string]string{"source": "articles", "format": "json"},
	}
	first, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.False(t, first.Existing)
	j := first.Job
	require.Equal(t, req.JobID, j.ID)
	require.Equal(t, "export-intent-7", j.IntentID)
	require.Equal(t, b.tenant, j.Tenant)
	require.Equal(t, jobs.StatusPending, j.Status)
	require.Zero(t, j.Generation)
	require.Zero(t, j.Version)
	require.Equal(t, req.Spec, j.Spec)
	require.Equal(t, jobs.Message{ID: req.JobID + "/v0", Type: jobs.MessageRun}, j.Outbox)
	require.Equal(t, ms(Start), j.CreatedAt)
	require.Equal(t, ms(Start), j.UpdatedAt)
	require.True(t, j.ExpiresAt.IsZero(), "a live job has no TTL")
	require.Equal(t, j, b.get(t, j.ID))

	// The same intent again, with a new proposed id: the same job, nothing written.
	b.clock.Advance(time.Minute)
	again := req
	again.JobID = b.id("job-43")
	second, err := b.store.Create(b.ctx, again)
	require.NoError(t, err)
	require.True(t, second.Existing)
	require.Equal(t, j, second.Job)
	b.requireUnchanged(t, j)
	_, err = b.store.Get(b.ctx, again.JobID)
	require.ErrorIs(t, err, jobs.ErrNotFound)

	// Still the same job after it moved on.
	claimed := b.claim(t, j.ID, "attempt-a", time.Minute)
	third, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, third.Existing)
	require.Equal(t, claimed, third.Job)

	// The same intent with another spec is a conflict, and writes nothing.
	other := req
	other.Spec = map[string]string{"source": "articles", "format": "csv"}
	_, err = b.store.Create(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrIntentConflict)
	b.requireUnchanged(t, claimed)

	// The same intent id of another tenant is another intent.
	foreign := req
	foreign.Tenant = b.tenant + "-other"
	foreign.JobID = b.id("job-44")
	res, err := b.store.Create(b.ctx, foreign)
	require.NoError(t, err)
	require.False(t, res.Existing)
	require.Equal(t, foreign.JobID, res.Job.ID)
}

func testCreateDerivesJobID(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	req := jobs.CreateRequest{IntentID: "export-intent-7", Tenant: b.tenant}
	first, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.Equal(t, jobs.DeriveJobID(b.tenant, "export-intent-7"), first.Job.ID)
	require.NoError(t, jobs.ValidateID(first.Job.ID))
	require.Nil(t, first.Job.Spec)

	// An empty spec is the same spec as none.
	req.Spec = map[string]string{}
	second, err := b.store.Create(b.ctx, req)
	require.NoError(t, err)
	require.True(t, second.Existing)
	require.Equal(t, first.Job, second.Job)
}

func testCreateRefusesTakenJobID(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	j := b.create(t, "job-42")
	_, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: j.ID, IntentID: "another-intent", Tenant: b.tenant})
	require.ErrorIs(t, err, jobs.ErrJobExists)
	b.requireUnchanged(t, j)
	// The refused intent left no marker behind: with a free id it creates.
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: b.id("job-43"), IntentID: "another-intent", Tenant: b.tenant})
	require.NoError(t, err)
	require.False(t, res.Existing)
}

func testCreateRejectsInvalid(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for _, req := range []jobs.CreateRequest{
		{JobID: "job 42", IntentID: "i", Tenant: b.tenant},
		{JobID: "job#42", IntentID: "i", Tenant: b.tenant},
		{JobID: strings.Repeat("j", 129), IntentID: "i", Tenant: b.tenant},
		{JobID: b.id("job-1"), IntentID: "", Tenant: b.tenant},
		{JobID: b.id("job-2"), IntentID: "i", Tenant: ""},
		{JobID: b.id("job-3"), IntentID: "i", Tenant: "t#1"},
		{JobID: b.id("job-4"), IntentID: "a\nb", Tenant: b.tenant},
		{JobID: b.id("job-5"), IntentID: "i", Tenant: b.tenant, Spec: map[string]string{"": "x"}},
	} {
		_, err := b.store.Create(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", req)
		if req.JobID != "" && jobs.ValidateID(req.JobID) == nil {
			_, err = b.store.Get(b.ctx, req.JobID)
			require.ErrorIs(t, err, jobs.ErrNotFound)
		}
	}
	// The longest valid id works.
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: strings.Repeat("j", 120) + b.suffix, IntentID: "i", Tenant: b.tenant})
	require.NoError(t, err)
	require.Len(t, res.Job.ID, 128)
}

func testConcurrentCreates(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.createConcurrently(t, "export-intent-7", "job")
}

// createConcurrently sends 8 concurrent creates of intent, each proposing
// its own id (prefix-i), as an intake with random ids would, and checks
// that they return one job, written by exactly one of them, and that no
// other proposed id has a job. It returns that job.
func (b *bundle) createConcurrently(t *testing.T, intent, prefix string) jobs.Job {
	t.Helper()
	j := b.raceCreates(t, func(i int) jobs.CreateRequest {
		return jobs.CreateRequest{JobID: b.id(fmt.Sprintf("%s-%d", prefix, i)), IntentID: intent, Tenant: b.tenant}
	})
	for i := range raceWidth {
		if id := b.id(fmt.Sprintf("%s-%d", prefix, i)); id != j.ID {
			_, err := b.store.Get(b.ctx, id)
			require.ErrorIs(t, err, jobs.ErrNotFound)
		}
	}
	return j
}

// raceCreates sends raceWidth concurrent creates, the i-th req(i), and
// checks that they return one job, written by exactly one of them. It
// returns that job.
func (b *bundle) raceCreates(t *testing.T, req func(i int) jobs.CreateRequest) jobs.Job {
	t.Helper()
	results := make([]jobs.CreateResult, raceWidth)
	errs := make([]error, raceWidth)
	var wg sync.WaitGroup
	for i := range raceWidth {
		wg.Go(func() { results[i], errs[i] = b.store.Create(b.ctx, req(i)) })
	}
	wg.Wait()
	created := 0
	for i := range raceWidth {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Job, results[i].Job)
		if !results[i].Existing {
			created++
		}
	}
	require.Equal(t, 1, created, "exactly one create writes the job and its command")
	return results[0].Job
}
