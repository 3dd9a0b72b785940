package sweeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// forgeView is the snapshot of j with f applied: what a forged event
// carries.
func forgeView(j *jobs.Job, f func(v *projection.View)) projection.View {
	v := projection.ViewOfJob(j)
	f(&v)
	return v
}

// Forged events sent to the events queue before a job ended moved its
// view ahead of the job item and counted a forged final snapshot (a
// completion with another progress and result) in its tenant's totals;
// the job's own final event was then taken for a disagreeing duplicate
// and given up on. Nothing is behind the item: the sweeper's check finds
// the projection differs from it, and recovers it to the final item: the
// view goes back, the cursor and the totals take the item's progress. A
// projection in step is left alone. The report counts the repair as
// diverged, and the log says so at ERROR.
func TestAForgedViewAndForgedTotalsAreRepairedFromTheFinalItem(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	inStep, _ := b.lifecycle(t, "job-1", "t-1", 1, 2, 3)
	done, _ := b.lifecycle(t, "job-42", "t-1", 1, 2) // at v2, progress 40, when the forgeries came
	forged := forgeView(&done, func(v *projection.View) { v.Progress, v.ResultKey = 900, "candidates/job-42/elsewhere.csv" })
	res, err := b.proj.Apply(b.ctx, forged, 900-40)
	require.NoError(t, err)
	require.Equal(t, projection.Applied, res.Outcome, "consistent with the cursor: counted")
	_, err = b.proj.Apply(b.ctx, forgeView(&done, func(v *projection.View) { v.Version = 7 }), 0)
	require.ErrorIs(t, err, projection.ErrMismatch, "past the forged completion")
	require.Equal(t, int64(7), b.view(t, "job-42").Version, "the view is ahead of the item")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 100 + 900, Completed: 2}, b.totals(t, "t-1"))

	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 2, r.Finished)
	require.Equal(t, 1, r.Repaired)
	require.Equal(t, 1, r.Diverged)
	require.Zero(t, r.Errors)
	require.Equal(t, projection.ViewOfJob(&done), b.view(t, "job-42"), "the view went back to the item")
	require.Equal(t, projection.ViewOfJob(&inStep), b.view(t, "job-1"))
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 200, Completed: 2}, b.totals(t, "t-1"))
	cur, err := b.proj.Cursor(b.ctx, "t-1", "job-42")
	require.NoError(t, err)
	require.Equal(t, projection.Cursor{Version: 3, Progress: 100, Status: jobs.StatusCompleted}, cur)
	require.Contains(t, b.logs.String(), `"level":"ERROR","msg":"sweep: repaired a final job's projection that differed from its job item","job_id":"job-42"`)
}

// A forgery that lands after the first check passed the job is found by
// the recheck, RecheckAfter after the job ended and not a millisecond
// before: the bound within which a projection converges to its final job.
func TestAForgeryAfterTheFirstCheckIsRepairedByTheRecheck(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	done, _ := b.lifecycle(t, "job-42", "t-1", 1, 2, 3)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished)
	require.Zero(t, r.Repaired)

	// A forged event far ahead moves the view; the projector's recovery
	// could not read the job item (an outage) until the quarantine parked
	// the event, so nothing puts the view back but the sweeper.
	ahead := forgeView(&done, func(v *projection.View) { v.Version = 9 })
	_, err := b.proj.Apply(b.ctx, ahead, 0)
	require.ErrorIs(t, err, projection.ErrMismatch)
	require.Equal(t, ahead, b.view(t, "job-42"))

	b.clock.Advance(sweeper.DefaultRecheckAfter - sweeper.DefaultRepairAfter - time.Millisecond)
	r = b.run(t, sweeper.Options{})
	require.Zero(t, r.Rechecked+r.Repaired, "exactly RecheckAfter after the job ended: not yet")
	b.clock.Advance(time.Millisecond)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Rechecked)
	require.Equal(t, 1, r.Repaired)
	require.Equal(t, 1, r.RepairedOnRecheck)
	require.Equal(t, 1, r.Diverged)
	require.Equal(t, projection.ViewOfJob(&done), b.view(t, "job-42"))
}
