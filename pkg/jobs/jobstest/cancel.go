package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testCancelFences(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	c, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "the client withdrew the export"})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, c.Status)
	require.Equal(t, int64(2), c.Generation, "cancel bumps the generation")
	require.Equal(t, int64(2), c.Version)
	require.Equal(t, jobs.Failure{Code: jobs.CodeCancelled, Message: "the client withdrew the export"}, c.Error)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventCancelled, Version: 2,
		Payload: map[string]string{jobs.PayloadReason: "the client withdrew the export"}}, c.Outbox)
	require.False(t, c.ExpiresAt.IsZero())

	// The worker still running is fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, c)

	// A pending job can be cancelled too; its command then finds it final.
	id2 := b.create(t, "job-43").ID
	c2, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id2})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, c2.Status)
	require.Equal(t, int64(1), c2.Generation)
	require.Equal(t, int64(1), c2.Version)
	require.Equal(t, jobs.Message{ID: id2 + "/v1", Type: jobs.EventCancelled, Version: 1}, c2.Outbox)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id2, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
}

func testCancelIdempotent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	c, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.NoError(t, err)
	again, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "again"})
	require.NoError(t, err)
	require.Equal(t, c, again)
	b.requireUnchanged(t, c)
	// A strict cancel succeeds only when it writes: a job already cancelled
	// is ended like any other.
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id, Reason: "again", Strict: true})
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusCancelled, final.Status)
	b.requireUnchanged(t, c)
	id3 := b.create(t, "job-44").ID
	strict, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id3, Strict: true})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCancelled, strict.Status)
	require.Equal(t, int64(1), strict.Version)
	b.requireUnchanged(t, strict)

	id2 := b.create(t, "job-43").ID
	j := b.claim(t, id2, "attempt-a", time.Minute)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id2, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Result: result(id2, "attempt-a", 1)})
	require.NoError(t, err)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id2})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, done)
}
