package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

func TestLeaseEndIsTheDeadlinePlusSkew(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 11, 4, 9, 15, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	end, err := jobs.LeaseEnd(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, deadline.Add(jobs.DefaultClockSkew), end)

	end, err = jobs.LeaseEnd(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, deadline.Add(time.Second), end)

	end, err = jobs.LeaseEnd(ctx, jobs.MaxClockSkew)
	require.NoError(t, err)
	require.Equal(t, deadline.Add(time.Minute), end)

	_, err = jobs.LeaseEnd(ctx, -time.Second)
	require.ErrorIs(t, err, jobs.ErrInvalid)
	// A margin of an hour is not clock skew: the store would refuse the lease.
	_, err = jobs.LeaseEnd(ctx, time.Hour)
	require.ErrorIs(t, err, jobs.ErrInvalid)
	require.ErrorContains(t, err, "clock skew 1h0m0s is outside 0 to 1m0s")
	_, err = jobs.LeaseEnd(context.Background(), 0)
	require.ErrorIs(t, err, jobs.ErrNoDeadline)
}

// TestALeaseFromLeaseEndFitsTheStoresBound: the store's bound has room for
// the longest lease LeaseEnd gives, a 15-minute invocation's deadline plus
// the margin, even when the clock that set the deadline (the Lambda
// service's) runs up to the margin ahead of the host's, whose now the store
// reads, and the claim comes at once. Only a lease beyond that is refused.
func TestALeaseFromLeaseEndFitsTheStoresBound(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{jobs.DefaultClockSkew, time.Second, jobs.MaxClockSkew} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			clock := jobstest.NewClock(jobstest.Start)
			store := jobs.NewMemoryStore(jobs.WithClock(clock.Now), jobs.WithClockSkew(skew))
			for _, id := range []string{"job-42", "job-43"} {
				_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
				require.NoError(t, err)
			}
			// The invocation started when the service's clock read now+skew.
			deadline := clock.Now().Add(skew + jobs.MaxLambdaTimeout)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			until, err := jobs.LeaseEnd(ctx, skew)
			require.NoError(t, err)
			require.Equal(t, clock.Now().Add(jobs.MaxLambdaTimeout+2*skew), until)
			j, err := store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: until})
			require.NoError(t, err, "a lease from LeaseEnd is refused")
			require.Equal(t, until.UnixMilli(), j.LeaseExpiresAt.UnixMilli())

			_, err = store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-43", AttemptID: "attempt-b", LeaseUntil: until.Add(time.Millisecond)})
			require.ErrorIs(t, err, jobs.ErrInvalid, "a lease beyond MaxLambdaTimeout plus twice the margin")
		})
	}
}

func TestInvalidOptionsPanic(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithClock(nil)) })
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: -1})) })
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithRetention(0)) })
	require.Panics(t, func() { jobs.NewDynamoStore(nil, "jobs") })
	require.PanicsWithValue(t, "jobs: clock skew -1s is outside 0 to 1m0s",
		func() { jobs.NewMemoryStore(jobs.WithClockSkew(-time.Second)) })
	require.PanicsWithValue(t, "jobs: clock skew 1m0.001s is outside 0 to 1m0s",
		func() { jobs.NewMemoryStore(jobs.WithClockSkew(jobs.MaxClockSkew + time.Millisecond)) })
	require.NotPanics(t, func() { jobs.NewMemoryStore() })
	require.NotPanics(t, func() { jobs.NewMemoryStore(jobs.WithClockSkew(jobs.MaxClockSkew)) })
}

func TestMemoryStoreHonoursContext(t *testing.T) {
	t.Parallel()
	s := jobs.NewMemoryStore()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Create(ctx, jobs.CreateRequest{IntentID: "export-intent-7", Tenant: "t-1"})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "a", LeaseUntil: time.Now().Add(time.Minute)})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(ctx, "job-42")
	require.ErrorIs(t, err, context.Canceled)
}
