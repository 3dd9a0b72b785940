package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
			store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now, ClockSkew: skew})
			require.NoError(t, err)
			for _, id := range []string{"job-42", "job-43"} {
				_, err = store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
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

// TestNewRefusesAnInvalidConfig: each store refuses a setting outside its
// bound with ErrInvalidConfig and the field's name, and takes one exactly
// at the bound.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   jobs.Config
		field string // "" when the configuration is valid
	}{
		{"zero value", jobs.Config{}, ""},
		{"negative MaxGenerations", jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: -1}}, "Recovery.MaxGenerations"},
		{"one generation", jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 1}}, ""},
		{"negative Retention", jobs.Config{Retention: -time.Nanosecond}, "Retention"},
		{"shortest Retention", jobs.Config{Retention: time.Nanosecond}, ""},
		{"negative IntentRetention", jobs.Config{IntentRetention: -time.Nanosecond}, "IntentRetention"},
		{"shortest IntentRetention", jobs.Config{IntentRetention: time.Nanosecond}, ""},
		{"negative ClockSkew", jobs.Config{ClockSkew: -time.Nanosecond}, "ClockSkew"},
		{"ClockSkew at MaxClockSkew", jobs.Config{ClockSkew: jobs.MaxClockSkew}, ""},
		{"ClockSkew beyond MaxClockSkew", jobs.Config{ClockSkew: jobs.MaxClockSkew + time.Nanosecond}, "ClockSkew"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			memory, err := jobs.NewMemoryStore(tc.cfg)
			dynamo, derr := jobs.NewDynamoStore(jobs.DynamoConfig{Client: &dynamodb.Client{}, Table: "jobs", Config: tc.cfg})
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, memory)
				require.NoError(t, derr)
				require.NotNil(t, dynamo)
				return
			}
			for _, err := range []error{err, derr} {
				require.ErrorIs(t, err, jobs.ErrInvalidConfig)
				require.ErrorContains(t, err, tc.field)
			}
			require.Nil(t, memory)
			require.Nil(t, dynamo)
		})
	}
}

func TestNewDynamoStoreNeedsAClientAndATable(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]jobs.DynamoConfig{
		"Client": {Table: "jobs"},
		"Table":  {Client: &dynamodb.Client{}},
	} {
		store, err := jobs.NewDynamoStore(cfg)
		require.ErrorIs(t, err, jobs.ErrInvalidConfig)
		require.ErrorContains(t, err, field+" is")
		require.Nil(t, store)
	}
}

func TestMemoryStoreHonoursContext(t *testing.T) {
	t.Parallel()
	s, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Create(ctx, jobs.CreateRequest{IntentID: "export-intent-7", Tenant: "t-1"})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "a", LeaseUntil: time.Now().Add(time.Minute)})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(ctx, "job-42")
	require.ErrorIs(t, err, context.Canceled)
}
