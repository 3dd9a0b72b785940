package jobstest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testNudgePending: a pending job whose command was lost gets a fresh one.
func testNudgePending(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	created := b.create(t, "job-42")
	id := created.ID
	b.clock.Advance(20 * time.Minute)
	nudge := jobs.NudgeRequest{JobID: id, Generation: 0, Version: 0, Reason: "pending for 20m"}
	n, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	want := created
	want.Version = 1
	want.UpdatedAt = ms(b.clock.Now())
	want.Outbox = jobs.Message{ID: id + "/v1", Type: jobs.MessageRun, Version: 1,
		Payload: map[string]string{jobs.PayloadReason: "pending for 20m"}}
	want.History = append(slices.Clone(want.History), jobs.Transition{Version: 1, Status: jobs.StatusPending, At: want.UpdatedAt, Event: jobs.MessageRun})
	require.Equal(t, want, n, "pending, generation 0, version 1, a fresh run command; nothing else changes")
	require.Equal(t, n, b.get(t, id))

	// The same nudge again, as after a lost response: recognised, nothing written.
	b.clock.Advance(time.Second)
	again, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	require.Equal(t, n, again)
	b.requireUnchanged(t, n)
	// Another nudge of the version it read (another sweeper's, with its
	// own reason) finds the job moved on.
	other := nudge
	other.Reason = "another sweeper"
	_, err = b.store.Nudge(b.ctx, other)
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	var stale *jobs.StaleError
	require.ErrorAs(t, err, &stale)
	require.Equal(t, jobs.StaleError{Generation: 0, Version: 1, Status: jobs.StatusPending}, *stale)
	b.requireUnchanged(t, n)

	// A nudge without a reason carries no payload; it reads the new version.
	n2, err := b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: 0, Version: 1})
	require.NoError(t, err)
	require.Equal(t, jobs.Message{ID: id + "/v2", Type: jobs.MessageRun, Version: 2}, n2.Outbox)

	// The command leads to a claim as the first one would have.
	j := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, int64(1), j.Generation)
	require.Equal(t, int64(3), j.Version)
	require.Equal(t, jobs.EventStarted, j.Outbox.Type)
}

// testNudgeRunning: a running job on an ended lease gets a fresh command;
// a live lease is never passed.
func testNudgeRunning(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	a := b.claim(t, id, "attempt-a", time.Minute)
	renewed, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 30})
	require.NoError(t, err)

	// Up to and including the last millisecond of the lease: held.
	nudge := jobs.NudgeRequest{JobID: id, Generation: 1, Version: renewed.Version, Reason: "lease ended"}
	for _, at := range []time.Time{b.clock.Now(), renewed.LeaseExpiresAt} {
		b.clock.Set(at)
		_, err := b.store.Nudge(b.ctx, nudge)
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
		var held *jobs.LeaseHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, jobs.LeaseHeldError{Owner: "attempt-a", Generation: 1, Until: renewed.LeaseExpiresAt}, *held)
		require.Contains(t, err.Error(), fmt.Sprintf("jobs: nudge %s g1 v2", id))
		b.requireUnchanged(t, renewed)
	}

	// One millisecond later the lease has ended: the nudge lands.
	b.clock.Set(renewed.LeaseExpiresAt.Add(time.Millisecond))
	n, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err)
	want := renewed
	want.Version = 3
	want.UpdatedAt = ms(b.clock.Now())
	want.Outbox = jobs.Message{ID: id + "/v3", Type: jobs.MessageRun, Version: 3,
		Payload: map[string]string{jobs.PayloadReason: "lease ended"}}
	want.History = append(slices.Clone(want.History), jobs.Transition{Version: 3, Status: jobs.StatusRunning, Generation: 1, At: want.UpdatedAt, Event: jobs.MessageRun})
	require.Equal(t, want, n, "running at generation 1 with the ended lease, its holder and progress; a fresh command at v3")
	require.Equal(t, n, b.get(t, id))
	again, err := b.store.Nudge(b.ctx, nudge)
	require.NoError(t, err, "a retry after a lost response is recognised")
	require.Equal(t, n, again)
	b.requireUnchanged(t, n)

	// The holder's late accept (a request still in flight) is fenced.
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: renewed.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration, "the nudge moved the version")
	b.requireUnchanged(t, n)

	// The command's delivery takes over with the next generation.
	bj := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), bj.Generation)
	require.Equal(t, int64(4), bj.Version)
	require.Equal(t, jobs.Message{ID: id + "/v4", Type: jobs.EventStarted, Version: 4,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-b", jobs.PayloadPreviousAttemptID: "attempt-a"}}, bj.Outbox)
	// And the sweeper's nudge of what it read before is stale now.
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: 1, Version: 3})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	b.requireUnchanged(t, bj)
}

// testNudgeKeepsRecoveryPolicy: nudges do not raise the generation, so the
// recovery policy still ends a job that keeps stalling.
func testNudgeKeepsRecoveryPolicy(t *testing.T, newStore NewStore) {
	b := setupWith(t, newStore, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 1}})
	id := b.create(t, "job-42").ID
	j := b.claim(t, id, "attempt-a", time.Minute)
	for range 3 {
		b.clock.Set(j.LeaseExpiresAt.Add(time.Minute))
		var err error
		j, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: id, Generation: j.Generation, Version: j.Version})
		require.NoError(t, err)
		require.Equal(t, int64(1), j.Generation)
	}
	require.Equal(t, int64(4), j.Version)
	failed, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, failed.Error.Code)
	require.Equal(t, int64(2), failed.Generation)
	require.Equal(t, int64(5), failed.Version)
}

func testNudgeRefusals(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// Final jobs, read at their current generation and version.
	done := b.create(t, "job-42")
	a := b.claim(t, done.ID, "attempt-a", time.Minute)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: done.ID, AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		Result: result(done.ID, "attempt-a", 1)})
	require.NoError(t, err)
	cancelled, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: b.create(t, "job-43").ID})
	require.NoError(t, err)
	for _, j := range []jobs.Job{done, cancelled} {
		_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: j.Generation, Version: j.Version})
		require.ErrorIs(t, err, jobs.ErrFinal, j.ID)
		var final *jobs.FinalError
		require.ErrorAs(t, err, &final)
		require.Equal(t, j.Status, final.Status)
		b.requireUnchanged(t, j)
		// Read before it ended: the job moved on.
		_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: 0, Version: 0})
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, j.ID)
		b.requireUnchanged(t, j)
	}

	// A pending job read at another version or generation: stale.
	p := b.create(t, "job-44")
	for _, req := range []jobs.NudgeRequest{
		{JobID: p.ID, Generation: 0, Version: 1},
		{JobID: p.ID, Generation: 1, Version: 1},
	} {
		_, err = b.store.Nudge(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, "%+v", req)
		b.requireUnchanged(t, p)
	}

	// No job.
	_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: b.id("job-missing")})
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = b.store.Get(b.ctx, b.id("job-missing"))
	require.ErrorIs(t, err, jobs.ErrNotFound, "a refused nudge creates nothing")

	// Malformed requests are refused before anything is sent.
	for _, req := range []jobs.NudgeRequest{
		{JobID: "job/42"},
		{JobID: p.ID, Generation: -1, Version: 0},
		{JobID: p.ID, Generation: 2, Version: 1},
		{JobID: p.ID, Reason: strings.Repeat("r", 4097)},
	} {
		_, err = b.store.Nudge(b.ctx, req)
		require.ErrorIs(t, err, jobs.ErrInvalid, "%+v", req)
	}
	b.requireUnchanged(t, p)
}
