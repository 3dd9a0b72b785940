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

	_, err = jobs.LeaseEnd(ctx, -time.Second)
	require.ErrorIs(t, err, jobs.ErrInvalid)
	_, err = jobs.LeaseEnd(context.Background(), 0)
	require.ErrorIs(t, err, jobs.ErrNoDeadline)
}

func TestInvalidOptionsPanic(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithClock(nil)) })
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: -1})) })
	require.Panics(t, func() { jobs.NewMemoryStore(jobs.WithRetention(0)) })
	require.Panics(t, func() { jobs.NewDynamoStore(nil, "jobs") })
	require.NotPanics(t, func() { jobs.NewMemoryStore() })
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
