package projection_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// handleEvent delivers e on its receives-th receive.
func (b *testBundle) handleEvent(t *testing.T, e *outbox.Event, receives int) error {
	t.Helper()
	return b.p.Handle(b.ctx, message(t, e, receives))
}

// A forged event at the cursor's next version, its delta in agreement
// with its forged progress, is counted: nothing tells it from the job's
// own without reading the job item. The job's own event of that version
// then disagrees with the cursor: the projector reads the job item at once
// (waiting cannot help) and puts the cursor, the totals and the view
// right; the rest of the job follows as usual.
func TestHandleRecoversAtOnceFromAnEventThatDisagreesWithTheCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	require.NoError(t, b.handle(t, 1, 1))
	forged := b.events[2]
	forged.Progress, forged.Delta = 500, 490
	require.NoError(t, b.handleEvent(t, &forged, 1))
	b.requireTotals(t, 500, 0)

	b.jobs.items["job-42"] = jobAt(&b.events[2])
	require.NoError(t, b.handle(t, 2, 1))
	require.Equal(t, 1, b.jobs.reads)
	rec := b.lastLog(t)
	require.Equal(t, "WARN", rec["level"])
	require.Equal(t, "projection: recovered from the job item", rec["msg"])
	require.Equal(t, "mismatch", rec["reason"])
	require.Equal(t, float64(-470), rec["processed_delta"])
	b.requireTotals(t, 30, 0)
	b.requireView(t, 2)
	for i := 3; i < 6; i++ {
		require.NoError(t, b.handle(t, i, 1))
	}
	b.requireTotals(t, 40, 1)
	b.requireView(t, 5)
}

// A delta that disagrees with the event's own progress is never counted;
// the job item, which has not reached that version, shows the event is not
// the job's: acknowledged, and the job's own event counts as usual.
func TestHandleAcknowledgesAnInconsistentDelta(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	require.NoError(t, b.handle(t, 1, 1))
	b.jobs.items["job-42"] = jobAt(&b.events[1])
	inflated := b.events[2]
	inflated.Delta = 500
	require.NoError(t, b.handleEvent(t, &inflated, 1))
	require.Equal(t, "projection: an event its job item has not reached: not the job's; acknowledged", b.lastLog(t)["msg"])
	b.requireTotals(t, 10, 0)
	require.NoError(t, b.handle(t, 2, 1))
	b.requireTotals(t, 30, 0)
}

// Long after the job ended, and its projection was checked by the
// sweeper, an event at a version it never reached moves its view ahead.
// Beyond a final cursor nothing can be waited for: the job item, final,
// read at once, shows the event is not the job's: acknowledged, and the
// view put back to the item.
func TestHandlePutsBackAViewAnEventMovedPastAFinalItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 6 {
		require.NoError(t, b.handle(t, i, 1))
	}
	b.jobs.items["job-42"] = jobAt(&b.events[5])
	forged := b.events[5]
	forged.Version, forged.Type, forged.Status, forged.ResultKey = 9, jobs.EventFailed, jobs.StatusFailed, ""
	forged.ErrorCode, forged.EventID = "task_failed", jobs.OutboxID("job-42", 9)
	require.NoError(t, b.handleEvent(t, &forged, 1))
	rec := b.lastLog(t)
	require.Equal(t, "ERROR", rec["level"])
	require.Equal(t, "mismatch", rec["reason"])
	require.Equal(t, true, rec["view_updated"], "the view the event moved to v9 is put back")
	b.requireView(t, 5)
	b.requireTotals(t, 40, 1)

	forged.Version, forged.EventID = 7, jobs.OutboxID("job-42", 7)
	require.NoError(t, b.handleEvent(t, &forged, 1))
	b.requireView(t, 5)
	b.requireTotals(t, 40, 1)
	require.Equal(t, 2, b.jobs.reads)
}
