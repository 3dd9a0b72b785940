package projectiontest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Forged or corrupt events: sent to the events queue by something other
// than the relay, they carry a version, progress, status or delta the job
// never had. The store never counts a delta that does not match the
// cursor's progress (so a job's share of its tenant's totals is always
// its cursor's progress), tells an event that disagrees with the cursor
// (ErrMismatch), and a recovery to the job item puts right a cursor or
// view that differs from the item at its version, and, when the item is
// final, one that is ahead of it.

// forge returns a copy of e changed by f, with its own event id.
func forge(e *outbox.Event, f func(e *outbox.Event)) outbox.Event {
	c := *e
	f(&c)
	c.EventID = jobs.OutboxID(c.JobID, c.Version) + "-forged"
	return c
}

// requireMismatch delivers e and requires it refused as disagreeing with
// the cursor at cursor, nothing counted.
func (b *bundle) requireMismatch(t *testing.T, e *outbox.Event, cursor projection.Cursor) projection.Result {
	t.Helper()
	res, err := b.store.Apply(b.ctx, view(e), e.Delta)
	require.ErrorIs(t, err, projection.ErrMismatch, "apply %s", e.EventID)
	var m *projection.MismatchError
	require.ErrorAs(t, err, &m)
	require.Equal(t, projection.MismatchError{JobID: e.JobID, Version: e.Version, Progress: e.Progress, Delta: e.Delta,
		Status: e.Status, Cursor: cursor}, *m)
	require.NotErrorIs(t, err, projection.ErrGap)
	return res
}

// A delta that does not match the event's own progress and the cursor's
// (progress - delta is not the cursor's progress) is never counted,
// whether the cursor is at the version before or there is none yet.
func testDeltaInconsistentWithProgress(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	first := forge(&evs[0], func(e *outbox.Event) { e.Delta = 7 }) // progress 0
	b.requireMismatch(t, &first, projection.Cursor{})
	b.requireTotals(t, b.tenant, 0, 0)
	b.requireCursor(t, evs[0].JobID, nil)

	// The view took v1's snapshot, which the forgery left as it was.
	b.apply(t, &evs[0], projection.Applied, false)
	b.apply(t, &evs[1], projection.Applied, true) // cursor at v2, progress 10
	inflated := forge(&evs[2], func(e *outbox.Event) { e.Delta = 500 })
	b.requireMismatch(t, &inflated, cursorAt(&evs[1]))
	b.requireTotals(t, b.tenant, 10, 0)
	b.requireCursor(t, evs[0].JobID, &evs[1])

	// The real event of that version is then counted as usual.
	b.apply(t, &evs[2], projection.Applied, false)
	b.requireTotals(t, b.tenant, 30, 0)
	for i := 3; i < 6; i++ {
		b.apply(t, &evs[i], projection.Applied, true)
	}
	b.requireTotals(t, b.tenant, 40, 1)
}

// An event at the cursor's next version whose delta agrees with its own
// (forged) progress is counted: nothing tells it from the real one
// without reading the job item. But the job's share of the totals stays
// its cursor's progress, and the real event of that version is not taken
// for a duplicate: it disagrees with the cursor (ErrMismatch). A recovery
// to the job item at that version puts the cursor, the totals and the
// view right: the one case where a view goes back to a version it held
// with other content.
func testForgedNextVersionIsPutRightAtItsVersion(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	id := evs[0].JobID
	b.applyAll(t, evs[:2]) // cursor at v2, progress 10
	forged := forge(&evs[2], func(e *outbox.Event) { e.Progress, e.Delta = 500, 490 })
	b.apply(t, &forged, projection.Applied, true)
	b.requireTotals(t, b.tenant, 500, 0)
	b.requireCursor(t, id, &forged)

	res := b.requireMismatch(t, &evs[2], cursorAt(&forged))
	require.False(t, res.ViewUpdated, "the view holds that version already")
	b.recover(t, &evs[2], projection.Recovery{
		From: cursorAt(&forged), To: cursorAt(&evs[2]), Processed: 30 - 500, ViewUpdated: true,
	})
	b.requireTotals(t, b.tenant, 30, 0)
	b.requireCursor(t, id, &evs[2])
	b.requireView(t, &evs[2])

	// In step again: the same recovery changes nothing, the real event is
	// a duplicate, the forged one disagrees, and the rest counts as usual.
	at := cursorAt(&evs[2])
	b.recover(t, &evs[2], projection.Recovery{From: at, To: at})
	b.apply(t, &evs[2], projection.Duplicate, false)
	b.requireMismatch(t, &forged, at)
	b.requireView(t, &evs[2])
	for i := 3; i < 6; i++ {
		b.apply(t, &evs[i], projection.Applied, true)
	}
	b.requireTotals(t, b.tenant, 40, 1)
}

// A forged completion counts one completion, once: the cursor then holds
// a final status, after which no event applies (a final job has no next
// version) and a second completion is never counted. The recovery to the
// job item takes the completion back when the job did not complete.
func testForgedCompletionIsTakenBack(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Failing(b.id("job-42"), b.tenant)
	id := evs[0].JobID
	b.applyAll(t, evs[:2]) // running, progress 7
	done := forge(&evs[2], func(e *outbox.Event) { e.Type, e.Status, e.ErrorCode = jobs.EventCompleted, jobs.StatusCompleted, "" })
	b.apply(t, &done, projection.Applied, true)
	b.requireTotals(t, b.tenant, 7, 1)

	again := forge(&done, func(e *outbox.Event) { e.Version++ })
	b.requireMismatch(t, &again, cursorAt(&done))
	b.requireTotals(t, b.tenant, 7, 1)

	b.requireMismatch(t, &evs[2], cursorAt(&done))
	b.recover(t, &evs[2], projection.Recovery{From: cursorAt(&done), To: cursorAt(&evs[2]), Completed: -1, ViewUpdated: true})
	b.requireTotals(t, b.tenant, 7, 0)
	b.requireCursor(t, id, &evs[2])
	b.requireView(t, &evs[2])
}

// Events at versions the job never reaches move the view ahead of the job
// item (a snapshot never waits for the totals), and, one version at a
// time, the cursor and the totals too. A recovery to a final job item
// puts everything back to the item, the view included: nothing honest can
// be past a final item. A recovery to a live item leaves what is ahead of
// it alone, as the item read may be older than what was projected since.
func testForgedAheadIsPutBackToAFinalItem(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	id := evs[0].JobID
	b.applyAll(t, evs[:3]) // cursor at v3, progress 30
	var forged []outbox.Event
	for v := int64(4); v <= 7; v++ {
		forged = append(forged, forge(&evs[2], func(e *outbox.Event) {
			e.Version, e.Progress, e.Delta = v, 100*v, 100*v-e.Progress
			if v > 4 {
				e.Delta = 100
			}
		}))
	}
	b.applyAll(t, forged)
	far := forge(&evs[2], func(e *outbox.Event) { e.Version = 12 })
	res := b.requireGap(t, &far, 7)
	require.True(t, res.ViewUpdated)
	b.requireTotals(t, b.tenant, 700, 0)
	b.requireView(t, &far)

	// The job item, read now, is still running at v3: the cursor and the
	// view stay ahead of it.
	ahead := cursorAt(&forged[3])
	b.recover(t, &evs[2], projection.Recovery{From: ahead, To: ahead})
	b.requireView(t, &far)

	// The job ends at v6: its events are taken for older ones, and only
	// its final item puts the cursor, the totals and the view back.
	for i := 3; i < 6; i++ {
		b.apply(t, &evs[i], projection.Older, false)
	}
	b.recover(t, &evs[5], projection.Recovery{
		From: ahead, To: cursorAt(&evs[5]), Processed: 40 - 700, Completed: 1, ViewUpdated: true,
	})
	b.requireTotals(t, b.tenant, 40, 1)
	b.requireCursor(t, id, &evs[5])
	b.requireView(t, &evs[5])

	// The forged events come again: the totals count nothing, and the view
	// they move ahead is put back by the next recovery to the item, which
	// the projector makes at once on a mismatch.
	// Beyond a final cursor nothing is a gap: no version comes after a
	// final one.
	b.apply(t, &forged[0], projection.Older, false)
	res = b.requireMismatch(t, &forged[3], cursorAt(&evs[5]))
	require.True(t, res.ViewUpdated)
	res = b.requireMismatch(t, &far, cursorAt(&evs[5]))
	require.True(t, res.ViewUpdated)
	b.recover(t, &evs[5], projection.Recovery{From: cursorAt(&evs[5]), To: cursorAt(&evs[5]), ViewUpdated: true})
	b.requireView(t, &evs[5])
	b.requireTotals(t, b.tenant, 40, 1)
}

// A view that differs from the job item at the item's version, its cursor
// in step (an event with the cursor's progress and status and other
// content: another result key), is rewritten by a recovery to the item.
func testViewDifferingAtItsVersionIsRewritten(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	other := forge(&evs[5], func(e *outbox.Event) { e.ResultKey, e.ResultSize = "candidates/elsewhere.csv", 1 })
	b.requireRewrittenAtItsVersion(t, evs[:6], &other)
	b.requireTotals(t, b.tenant, 40, 1)
}

// requireRewrittenAtItsVersion delivers evs but the last, then forged (a
// copy of the last with the same progress and status and other content),
// then the last, which is a duplicate; the view holds the forgery. A
// recovery to the job item, whose snapshot is the last event's, rewrites
// the view without moving the cursor, and a second one changes nothing.
func (b *bundle) requireRewrittenAtItsVersion(t *testing.T, evs []outbox.Event, forged *outbox.Event) {
	t.Helper()
	item := &evs[len(evs)-1]
	b.applyAll(t, evs[:len(evs)-1])
	b.apply(t, forged, projection.Applied, true)
	b.apply(t, item, projection.Duplicate, false)
	b.requireView(t, forged)

	at := cursorAt(item)
	b.recover(t, item, projection.Recovery{From: at, To: at, ViewUpdated: true})
	b.requireView(t, item)
	b.recover(t, item, projection.Recovery{From: at, To: at})
	b.requireCursor(t, item.JobID, item)
}

// A view that differs from the job item in its generation alone, live or
// final, is rewritten: the generation is part of what the item says.
func testViewDifferingInGenerationIsRewritten(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	gen := func(e *outbox.Event) { e.Generation += 5 }
	live := Lifecycle(b.id("job-42"), b.tenant)[:3]
	forged := forge(&live[2], gen)
	b.requireRewrittenAtItsVersion(t, live, &forged)

	final := Failing(b.id("job-43"), b.tenant)
	forged = forge(&final[2], gen)
	b.requireRewrittenAtItsVersion(t, final, &forged)
	b.requireTotals(t, b.tenant, 30+7, 0)
}

// A view that carries an optional attribute the job item lacks (a failed
// job's result key or size, a completed job's error code, a running job's
// result key) is rewritten without it, and one that lacks an attribute
// the item has (its time) is rewritten with it: the view is exactly the
// item's snapshot, absent attributes included.
func testViewCarryingWhatTheItemLacksIsRewritten(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	for name, c := range map[string]struct {
		history func(jobID, tenant string) []outbox.Event
		last    int
		add     func(e *outbox.Event)
	}{
		"failed with a result key":  {Failing, 2, func(e *outbox.Event) { e.ResultKey = "candidates/elsewhere.csv" }},
		"failed with a result size": {Failing, 2, func(e *outbox.Event) { e.ResultSize = 1 }},
		"completed with an error":   {Lifecycle, 5, func(e *outbox.Event) { e.ErrorCode = "source_gone" }},
		"running with a result key": {Lifecycle, 2, func(e *outbox.Event) { e.ResultKey = "candidates/elsewhere.csv" }},
		"completed without a time":  {Lifecycle, 5, func(e *outbox.Event) { e.OccurredAt = time.Time{} }},
	} {
		t.Run(name, func(t *testing.T) {
			evs := c.history(b.id("job-"+strings.ReplaceAll(name, " ", "-")), b.tenant)[:c.last+1]
			forged := forge(&evs[c.last], c.add)
			b.requireRewrittenAtItsVersion(t, evs, &forged)
		})
	}
}

// A view ahead of a final job item with the item's content at a later
// version (a copy of the final event under another version) is put back:
// its version alone differs from the item's.
func testFinalCopyAheadIsPutBack(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs)
	item := &evs[5]
	at := cursorAt(item)
	copied := forge(item, func(e *outbox.Event) { e.Version += 3 })
	res := b.requireMismatch(t, &copied, at)
	require.True(t, res.ViewUpdated, "a snapshot never waits")
	b.requireView(t, &copied)

	b.recover(t, item, projection.Recovery{From: at, To: at, ViewUpdated: true})
	b.requireView(t, item)
	b.recover(t, item, projection.Recovery{From: at, To: at})
	b.requireTotals(t, b.tenant, 40, 1)
}
