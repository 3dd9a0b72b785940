package jobstest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testRetriedWritesRecognised(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	claim := jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)}
	first, err := b.store.Claim(b.ctx, claim)
	require.NoError(t, err)
	// The same claim again, as after a lost response: our own generation back, nothing written.
	again, err := b.store.Claim(b.ctx, claim)
	require.NoError(t, err)
	require.Equal(t, first, again)
	b.requireUnchanged(t, first)

	renew := jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(2 * time.Minute), Progress: 50}
	renewed, err := b.store.Renew(b.ctx, renew)
	require.NoError(t, err)
	again, err = b.store.Renew(b.ctx, renew)
	require.NoError(t, err)
	require.Equal(t, renewed, again)
	// Not the same renewal: stale, not recognised.
	other := renew
	other.Progress = 60
	_, err = b.store.Renew(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)

	accept := jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		Result: result(id, "attempt-a", 1), Progress: 120}
	accepted, err := b.store.Accept(b.ctx, accept)
	require.NoError(t, err)
	again, err = b.store.Accept(b.ctx, accept)
	require.NoError(t, err)
	require.Equal(t, accepted, again)
	b.requireUnchanged(t, accepted)
	// Another result of the same generation is not ours: refused.
	otherAccept := accept
	otherAccept.Result.Key = strings.TrimSuffix(otherAccept.Result.Key, ".json") + ".csv"
	_, err = b.store.Accept(b.ctx, otherAccept)
	require.ErrorIs(t, err, jobs.ErrFinal)

	// Fail, on another job.
	id2 := b.create(t, "job-43").ID
	b.claim(t, id2, "attempt-c", time.Minute)
	fail := jobs.FailRequest{JobID: id2, AttemptID: "attempt-c", Generation: 1, Version: 1,
		Failure: jobs.Failure{Code: "source_gone", Message: "the source returned 410"}}
	failed, err := b.store.Fail(b.ctx, fail)
	require.NoError(t, err)
	again, err = b.store.Fail(b.ctx, fail)
	require.NoError(t, err)
	require.Equal(t, failed, again)
	fail.AttemptID = "attempt-d"
	_, err = b.store.Fail(b.ctx, fail)
	require.ErrorIs(t, err, jobs.ErrFinal)
}

// testRunningExample is the project's running example: worker A claims
// job-42 and stalls, its lease expires, B takes over and accepts, and A's
// late writes change nothing.
func testRunningExample(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: b.id("job-42"), IntentID: "export-intent-7", Tenant: b.tenant})
	require.NoError(t, err)
	id := res.Job.ID

	// Worker A claims generation 1 and stalls.
	a := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, int64(1), a.Generation)

	// The lease expires, the command is redelivered, worker B claims generation 2.
	b.clock.Advance(time.Minute + time.Second)
	bj := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), bj.Generation)

	// B's conditional accept wins and schedules the completion event.
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{
		JobID: id, AttemptID: "attempt-b", Generation: 2, Version: bj.Version,
		Result: result(id, "attempt-b", 2), Progress: 120,
	})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, int64(2), done.Generation)
	require.Equal(t, int64(3), done.Version)
	require.Equal(t, result(id, "attempt-b", 2), done.Result)
	require.Equal(t, int64(120), done.Progress)
	require.Equal(t, "attempt-b", done.LeaseOwner)
	// The accept's message has no payload: the attempt and the result key
	// are the job's (LeaseOwner, Result), checked above.
	require.Equal(t, jobs.Message{ID: id + "/v3", Type: jobs.EventCompleted, Version: 3}, done.Outbox)
	require.Equal(t, time.Unix(b.clock.Now().Add(jobs.DefaultRetention).Unix(), 0).UTC(), done.ExpiresAt)

	// A wakes up: its late accept changes nothing, selects no result and publishes nothing.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{
		JobID: id, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		Result: result(id, "attempt-a", 1), Progress: 100,
	})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	var stale *jobs.StaleError
	require.ErrorAs(t, err, &stale)
	require.Equal(t, jobs.StaleError{Generation: 2, Version: 3, Status: jobs.StatusCompleted}, *stale)
	require.Contains(t, err.Error(), fmt.Sprintf("jobs: accept %s g1: stale generation", id))
	b.requireUnchanged(t, done)

	// Nor can A renew or fail it.
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		Failure: jobs.Failure{Code: "timeout"}})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	// A third delivery of the command finds the job final.
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-c", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusCompleted, final.Status)
	b.requireUnchanged(t, done)
}

func testFencedWritesCheckVersion(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	b.claim(t, id, "attempt-a", time.Minute)
	renewed, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 1,
		LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 10})
	require.NoError(t, err)
	require.Equal(t, int64(2), renewed.Version)
	// The right generation with a version it has moved past: refused.
	for _, v := range []int64{1, 3} {
		_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: v,
			Result: result(id, "attempt-a", 1)})
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, "version %d", v)
		b.requireUnchanged(t, renewed)
	}
	// The right generation and version from another attempt: not the holder.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-z", Generation: 1, Version: 2,
		Result: result(id, "attempt-z", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, renewed)
	// A generation from the future is no better.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 2, Version: 2,
		Result: result(id, "attempt-a", 2)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, renewed)
}
