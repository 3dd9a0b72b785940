package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// boastfulStore reports success for stale accepts, as a store without
// generation fencing would (River's "finish job" checks the state, not the
// attempt). The history check must catch it, or it proves nothing.
type boastfulStore struct {
	*jobs.MemoryStore
	lied atomic.Bool
}

func (s *boastfulStore) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	j, err := s.MemoryStore.Accept(ctx, req)
	var stale *jobs.StaleError
	if errors.As(err, &stale) && stale.Status == jobs.StatusRunning {
		s.lied.Store(true)
		return jobs.Job{ID: req.JobID, Status: jobs.StatusCompleted, Generation: req.Generation, Version: req.Version + 1,
			LeaseOwner: req.AttemptID, Result: req.Result, Progress: req.Progress}, nil
	}
	return j, err
}

func TestHistoryCheckCatchesAnUnfencedStore(t *testing.T) {
	t.Parallel()
	cfg := jobstest.DefaultHistory
	caught := 0
	for seed := range uint64(20) {
		cfg.Seed = seed
		clock := jobstest.NewClock(jobstest.Start)
		memory, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now, Recovery: jobs.RecoveryPolicy{MaxGenerations: cfg.MaxGenerations}})
		require.NoError(t, err)
		store := &boastfulStore{MemoryStore: memory}
		h := jobstest.RecordHistory(t, store, clock, cfg)
		err = jobstest.CheckHistory(h, cfg.MaxGenerations, t.TempDir())
		if store.lied.Load() {
			require.Error(t, err, "seed %d: the store lied and the check passed", seed)
			caught++
		}
	}
	require.Positive(t, caught, "no run provoked a stale accept while another generation ran")
	t.Logf("caught the lie in %d of 20 runs", caught)
}
