package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testFail(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(time.Second)
	f, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
		Failure: jobs.Failure{Code: "source_gone", Message: "the source returned 410"}})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusFailed, f.Status)
	require.Equal(t, int64(1), f.Generation)
	require.Equal(t, int64(2), f.Version)
	require.Equal(t, jobs.Failure{Code: "source_gone", Message: "the source returned 410"}, f.Error)
	require.Equal(t, time.Unix(b.clock.Now().Add(jobs.DefaultRetention).Unix(), 0).UTC(), f.ExpiresAt)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.EventFailed, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a", jobs.PayloadCode: "source_gone"}}, f.Outbox)
	require.Equal(t, jobs.Result{}, f.Result)

	// A failed job is final for every later transition.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: 2,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.FinalError{Status: jobs.StatusFailed, Failure: f.Error}, *final)
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: id})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, f)
}

func testRecoveryPolicy(t *testing.T, newStore NewStore) {
	b := setupWith(t, newStore, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 2}})
	id := b.create(t, "job-42").ID
	b.claim(t, id, "attempt-a", time.Minute)
	b.clock.Advance(2 * time.Minute)
	g2 := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), g2.Generation)
	b.clock.Advance(2 * time.Minute)

	// Generation 2 was the last one: the takeover fails the job instead.
	claim := jobs.ClaimRequest{JobID: id, AttemptID: "attempt-c", LeaseUntil: b.clock.Now().Add(time.Minute)}
	j, err := b.store.Claim(b.ctx, claim)
	require.ErrorIs(t, err, jobs.ErrFinal)
	var final *jobs.FinalError
	require.ErrorAs(t, err, &final)
	require.Equal(t, jobs.StatusFailed, final.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, final.Failure.Code)
	require.Equal(t, jobs.StatusFailed, j.Status)
	require.Equal(t, int64(3), j.Generation, "the failing write fences generation 2")
	require.Equal(t, int64(3), j.Version)
	require.Equal(t, "attempt-b", j.LeaseOwner)
	require.Equal(t, jobs.CodeRecoveryExhausted, j.Error.Code)
	require.Equal(t, jobs.Message{ID: id + "/v3", Type: jobs.EventFailed, Version: 3,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-c", jobs.PayloadCode: jobs.CodeRecoveryExhausted,
			jobs.PayloadPreviousAttemptID: "attempt-b"}}, j.Outbox)
	require.Equal(t, j, b.get(t, id))

	// The same claim retried, as after a lost response: the same answer,
	// the failed job with its *FinalError, and nothing written.
	b.clock.Advance(time.Second)
	retried, err := b.store.Claim(b.ctx, claim)
	require.Equal(t, j, retried)
	var retriedFinal *jobs.FinalError
	require.ErrorAs(t, err, &retriedFinal)
	require.Equal(t, *final, *retriedFinal)
	b.requireUnchanged(t, j)

	// The stalled generation 2 wakes up: fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-b", Generation: 2, Version: g2.Version,
		Result: result(id, "attempt-b", 2)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	// Later deliveries find it final.
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-d", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	b.requireUnchanged(t, j)
}
