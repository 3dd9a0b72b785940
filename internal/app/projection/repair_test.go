package projection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// failingViews is a memory store whose View fails.
type failingViews struct {
	*projection.MemoryStore
	err error
}

func (f failingViews) View(context.Context, string) (projection.View, error) {
	return projection.View{}, f.err
}

// LagOf tells a projection that misses any of the job item's versions —
// in its view, in its totals, or both — from one that holds them all, and
// RecoverJob brings the first to the second exactly as an event's
// recovery does: the totals count each version once.
func TestLagOfAndRecoverJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := projection.NewMemoryStore()
	at := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
	job := jobs.Job{ID: "job-42", Tenant: "t-1", Status: jobs.StatusCompleted, Generation: 2, Version: 3, Progress: 120,
		Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.csv", Size: 2048}, UpdatedAt: at}
	lag := func() projection.Lag {
		t.Helper()
		l, err := projection.LagOf(ctx, s, &job)
		require.NoError(t, err)
		return l
	}

	l := lag()
	require.Equal(t, projection.Lag{Job: 3}, l, "no view, no cursor")
	require.True(t, l.Behind())

	// Versions 1 and 2 applied: the final transition is missing.
	v1 := projection.View{JobID: "job-42", Tenant: "t-1", Status: jobs.StatusRunning, Generation: 1, Version: 1, UpdatedAt: at}
	_, err := s.Apply(ctx, v1, 0)
	require.NoError(t, err)
	v2 := v1
	v2.Version, v2.Progress = 2, 100
	_, err = s.Apply(ctx, v2, 100)
	require.NoError(t, err)
	l = lag()
	require.Equal(t, projection.Lag{Job: 3, View: 2, Cursor: projection.Cursor{Version: 2, Progress: 100, Status: jobs.StatusRunning}}, l)
	require.True(t, l.Behind())

	// A view at the job's version with the totals behind (an event that
	// reached the view while the totals waited for an earlier one) is
	// behind; so is the reverse.
	require.True(t, (&projection.Lag{Job: 3, View: 3, Cursor: projection.Cursor{Version: 2}}).Behind())
	require.True(t, (&projection.Lag{Job: 3, View: 2, Cursor: projection.Cursor{Version: 3}}).Behind())
	require.False(t, (&projection.Lag{Job: 3, View: 4, Cursor: projection.Cursor{Version: 3}}).Behind(), "a newer view is not behind")
	// What only events that were not the job's leave: a view or a cursor
	// ahead of the item, or other content at its version. Behind alone is
	// not that.
	for name, l := range map[string]projection.Lag{
		"view ahead":           {Job: 3, View: 4, Cursor: projection.Cursor{Version: 3}, CursorInStep: true},
		"cursor ahead":         {Job: 3, View: 3, ViewInStep: true, Cursor: projection.Cursor{Version: 4}},
		"other view at v3":     {Job: 3, View: 3, Cursor: projection.Cursor{Version: 3}, CursorInStep: true},
		"other cursor at v3":   {Job: 3, View: 3, ViewInStep: true, Cursor: projection.Cursor{Version: 3}},
		"behind, other cursor": {Job: 3, View: 2, Cursor: projection.Cursor{Version: 3}},
	} {
		require.True(t, l.Diverged(), name)
		require.False(t, l.InStep(), name)
	}
	require.False(t, (&projection.Lag{Job: 3, View: 2, Cursor: projection.Cursor{Version: 2}}).Diverged(), "behind only")

	final := projection.ViewOfJob(&job)

	r, err := projection.RecoverJob(ctx, s, &job)
	require.NoError(t, err)
	require.Equal(t, int64(20), r.Processed)
	require.Equal(t, int64(1), r.Completed)
	l = lag()
	require.True(t, l.InStep(), "in step after the recovery")
	require.False(t, l.Behind())
	require.False(t, l.Diverged())
	v, err := s.View(ctx, "job-42")
	require.NoError(t, err)
	require.Equal(t, final, v)
	tot, err := s.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 120, Completed: 1}, tot)

	// Recovering again changes nothing; the final event, arriving late, is
	// a duplicate.
	r, err = projection.RecoverJob(ctx, s, &job)
	require.NoError(t, err)
	require.False(t, r.Moved())
	res, err := s.Apply(ctx, final, 20)
	require.NoError(t, err)
	require.Equal(t, projection.Duplicate, res.Outcome)
	tot, err = s.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 120, Completed: 1}, tot, "nothing counted twice")

	// A view that cannot be read is an error, not a lag.
	_, err = projection.LagOf(ctx, failingViews{MemoryStore: s, err: errors.New("throttled")}, &job)
	require.ErrorContains(t, err, "throttled")
}
