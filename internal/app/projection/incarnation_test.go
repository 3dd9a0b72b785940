package projection_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestIncarnationsOfAnIntentCountSeparately: a retry of an intent whose
// job item was deleted (its marker still there) creates a new job under
// jobs.SuccessorJobID of the old id, so the new job's events and the
// sweeper's repair of it (its item final) meet a cursor of their own: the
// first job's 40 items and completion stay in the tenant's totals beside
// the second's 5. Under the first job's id the second would be taken for
// older events of the first, and the repair would move the first job's
// final cursor back to the second's item, subtracting the first job's
// share (35 items and a completion lost).
func TestIncarnationsOfAnIntentCountSeparately(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := projection.NewMemoryStore()
	first := jobs.DeriveJobID("t-1", "export-intent-7")
	second := jobs.SuccessorJobID("t-1", "export-intent-7", first)
	require.NotEqual(t, first, second)
	lifecycle := projectiontest.Lifecycle(first, "t-1")
	for _, e := range lifecycle {
		_, err := s.Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
		require.NoError(t, err)
	}
	events := projectiontest.Events(second, "t-1",
		projectiontest.Step{Type: jobs.EventStarted, Status: jobs.StatusRunning, Generation: 1},
		projectiontest.Step{Type: jobs.EventProgress, Status: jobs.StatusRunning, Generation: 1, Progress: 5},
		projectiontest.Step{Type: jobs.EventCompleted, Status: jobs.StatusCompleted, Generation: 1, Progress: 5,
			ResultKey: "candidates/" + second + "/g0000000001/x.json", ResultSize: 1},
	)
	for _, e := range events {
		res, err := s.Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
		require.NoError(t, err)
		want := projection.Applied
		if !projectiontest.Adds(&e) {
			want = projection.Skipped
		}
		require.Equal(t, want, res.Outcome, "version %d of the second job is its own", e.Version)
	}
	// The sweeper's repair of each final job finds its projection in step.
	for _, last := range []projection.View{projection.ViewOfEvent(&lifecycle[len(lifecycle)-1]), projection.ViewOfEvent(&events[2])} {
		_, err := s.Recover(ctx, last)
		require.NoError(t, err)
	}
	tot, err := s.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 45, Completed: 2}, tot)
	for _, v := range []projection.View{projection.ViewOfEvent(&lifecycle[len(lifecycle)-1]), projection.ViewOfEvent(&events[2])} {
		got, err := s.View(ctx, v.JobID)
		require.NoError(t, err)
		require.Equal(t, v.Version, got.Version, v.JobID)
	}
}
