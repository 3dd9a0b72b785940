package jobstest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

func testClaimStartsGenerationOne(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	created := b.create(t, "job-42")
	b.clock.Advance(time.Second)
	until := b.clock.Now().Add(15*time.Minute + 5*time.Second + 123*time.Microsecond)
	j, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: created.ID, AttemptID: "attempt-a", LeaseUntil: until})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusRunning, j.Status)
	require.Equal(t, int64(1), j.Generation)
	require.Equal(t, int64(1), j.Version)
	require.Equal(t, "attempt-a", j.LeaseOwner)
	require.Equal(t, ms(until), j.LeaseExpiresAt, "leases are stored in epoch milliseconds")
	require.Zero(t, j.Progress)
	require.Equal(t, jobs.Message{
		ID: created.ID + "/v1", Type: jobs.EventStarted, Version: 1,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a"},
	}, j.Outbox)
	require.Equal(t, created.CreatedAt, j.CreatedAt)
	require.Equal(t, ms(b.clock.Now()), j.UpdatedAt)
	require.Equal(t, created.Spec, j.Spec)
	require.Equal(t, j, b.get(t, j.ID))
}

func testDuplicateClaim(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	a := b.claim(t, id, "attempt-a", time.Minute)

	// A duplicate message, up to and including the last millisecond of the lease.
	for _, at := range []time.Duration{0, 30 * time.Second, time.Minute} {
		b.clock.Set(Start.Add(at))
		_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
		var held *jobs.LeaseHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, "attempt-a", held.Owner)
		require.Equal(t, int64(1), held.Generation)
		require.Equal(t, a.LeaseExpiresAt, held.Until)
		require.Contains(t, err.Error(), id)
		b.requireUnchanged(t, a)
	}

	// One millisecond later the lease has expired: a takeover.
	b.clock.Set(a.LeaseExpiresAt.Add(time.Millisecond))
	j := b.claim(t, id, "attempt-b", time.Minute)
	require.Equal(t, int64(2), j.Generation)
	require.Equal(t, int64(2), j.Version)
	require.Equal(t, "attempt-b", j.LeaseOwner)
	require.Equal(t, jobs.Message{
		ID: id + "/v2", Type: jobs.EventStarted, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-b", jobs.PayloadPreviousAttemptID: "attempt-a"},
	}, j.Outbox)
}

// testClaimOfAnotherTenant: a claim naming a tenant is conditional on it.
// A claim naming another tenant than the job's is ErrNotFound, whatever the
// job's state (pending, running on a live or an ended lease, at the last
// generation, final), and writes nothing: no generation is used up and no
// lease is taken. The right tenant's claim, and its retry, behave as ever.
func testClaimOfAnotherTenant(t *testing.T, newStore NewStore) {
	b := setupWith(t, newStore, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 2}})
	id := b.create(t, "job-42").ID
	forge := func(t *testing.T, attempt string) {
		t.Helper()
		before := b.get(t, id)
		_, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: attempt,
			LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: b.tenant + "-forged"})
		require.ErrorIs(t, err, jobs.ErrNotFound)
		require.False(t, errors.Is(err, jobs.ErrFinal) || errors.Is(err, jobs.ErrLeaseHeld), "a forged claim learns nothing: %v", err)
		b.requireUnchanged(t, before)
	}
	claim := func(attempt string) jobs.ClaimRequest {
		return jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: b.tenant}
	}

	forge(t, "attempt-x") // pending
	pending := b.get(t, id)
	require.Equal(t, jobs.StatusPending, pending.Status)
	require.Zero(t, pending.Generation)
	require.Zero(t, pending.Version)

	req := claim("attempt-a")
	first, err := b.store.Claim(b.ctx, req)
	require.NoError(t, err)
	require.Equal(t, int64(1), first.Generation)
	again, err := b.store.Claim(b.ctx, req) // a retry after a lost response
	require.NoError(t, err)
	require.Equal(t, first, again)
	forge(t, "attempt-a") // the holder's own attempt id, another tenant
	forge(t, "attempt-x") // live lease

	b.clock.Set(first.LeaseExpiresAt.Add(time.Millisecond))
	forge(t, "attempt-x") // ended lease: no takeover
	second, err := b.store.Claim(b.ctx, claim("attempt-b"))
	require.NoError(t, err)
	require.Equal(t, int64(2), second.Generation)

	b.clock.Set(second.LeaseExpiresAt.Add(time.Millisecond))
	forge(t, "attempt-x") // the last generation ended: the job is not failed either
	_, err = b.store.Claim(b.ctx, claim("attempt-c"))
	require.ErrorIs(t, err, jobs.ErrFinal, "the right tenant's takeover beyond the policy")
	forge(t, "attempt-c") // final

	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-d",
		LeaseUntil: b.clock.Now().Add(time.Minute), Tenant: "t\x00"})
	require.ErrorIs(t, err, jobs.ErrInvalid, "a tenant that is no tenant")
}

func testOwnClaimAfterLeaseEnded(t *testing.T, newStore NewStore) {
	b := setupWith(t, newStore, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 2}})
	id := b.create(t, "job-42").ID
	first := b.claim(t, id, "attempt-a", time.Minute)

	// While its lease is live, the attempt's claim with another lease end is
	// its own claim: recognised, and the lease is still the one granted.
	b.clock.Advance(30 * time.Second)
	again := b.claim(t, id, "attempt-a", 2*time.Minute)
	require.Equal(t, first, again)
	b.requireUnchanged(t, first)

	// Once the lease has ended, the same attempt holds nothing: its claim is
	// a takeover like anyone's, and it is never told it holds a lease that
	// is over.
	b.clock.Set(first.LeaseExpiresAt.Add(time.Millisecond))
	j := b.claim(t, id, "attempt-a", time.Minute)
	require.Equal(t, jobs.StatusRunning, j.Status)
	require.Equal(t, int64(2), j.Generation, "the ended generation is fenced")
	require.Equal(t, int64(2), j.Version)
	require.Equal(t, "attempt-a", j.LeaseOwner)
	require.Equal(t, ms(b.clock.Now().Add(time.Minute)), j.LeaseExpiresAt)
	require.Equal(t, jobs.Message{
		ID: id + "/v2", Type: jobs.EventStarted, Version: 2,
		Payload: map[string]string{jobs.PayloadAttemptID: "attempt-a", jobs.PayloadPreviousAttemptID: "attempt-a"},
	}, j.Outbox)
	require.Equal(t, j, b.get(t, id))
	// Writes with the ended generation are stale.
	_, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: first.Version,
		Result: result(id, "attempt-a", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)

	// At the last generation the same rule applies: the claim fails the job.
	b.clock.Set(j.LeaseExpiresAt.Add(time.Millisecond))
	failed, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrFinal)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, failed.Error.Code)
	require.Equal(t, int64(3), failed.Generation)
	require.Equal(t, failed, b.get(t, id))
}

func testConcurrentClaims(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	const n = 8
	errs := make([]error, n)
	got := make([]jobs.Job, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: fmt.Sprintf("attempt-%d", i),
				LeaseUntil: b.clock.Now().Add(time.Minute)})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two claims won: %d and %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
	}
	require.NotEqual(t, -1, winner)
	require.Equal(t, int64(1), got[winner].Generation)
	require.Equal(t, got[winner], b.get(t, id))
	var held *jobs.LeaseHeldError
	for i, err := range errs {
		if i != winner {
			require.True(t, errors.As(err, &held))
			require.Equal(t, got[winner].LeaseOwner, held.Owner)
		}
	}
}
