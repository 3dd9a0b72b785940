package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
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
