package projectiontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// NewStore returns a store for one test. Stores returned to different tests
// may share tables: the suite uses ids and tenants unique to each test.
type NewStore func(t *testing.T) projection.Store

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore)
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, newStore NewStore)
}{
	{"AppliesEachVersionInOrder", testAppliesInOrder},
	{"ViewsNeverGoBack", testViewsNeverGoBack},
	{"DuplicatesAndOlderEventsChangeNothing", testDuplicatesAndOlder},
	{"GapsAreRefused", testGapsAreRefused},
	{"RecoveryMovesTheCursorToTheSnapshot", testRecovery},
	{"RecoveryWithoutACursor", testRecoveryWithoutCursor},
	{"RecoveryAfterATakeoverLowersProcessed", testRecoveryAfterTakeover},
	{"RecoveryCountsACompletionOnce", testRecoveryCountsCompletionOnce},
	{"RecoveryAtOrBehindTheCursorCountsNothing", testRecoveryBehindCursor},
	{"RecoveryKeepsANewerView", testRecoveryKeepsNewerView},
	{"TenantsAreSeparate", testTenantsAreSeparate},
	{"InvalidInputWritesNothing", testInvalidInput},
	{"ReadsOfMissingItems", testMissing},
	{"ConcurrentDeliveriesCountEachVersionOnce", testConcurrentDeliveries},
	{"ADeltaInconsistentWithItsProgressIsNeverCounted", testDeltaInconsistentWithProgress},
	{"AForgedNextVersionIsPutRightAtItsVersion", testForgedNextVersionIsPutRightAtItsVersion},
	{"AForgedCompletionIsTakenBack", testForgedCompletionIsTakenBack},
	{"ForgedVersionsAheadArePutBackToAFinalItem", testForgedAheadIsPutBackToAFinalItem},
	{"AViewDifferingAtItsVersionIsRewritten", testViewDifferingAtItsVersionIsRewritten},
	{"AViewDifferingInGenerationIsRewritten", testViewDifferingInGenerationIsRewritten},
	{"AViewCarryingWhatTheItemLacksIsRewritten", testViewCarryingWhatTheItemLacksIsRewritten},
	{"AFinalCopyAheadIsPutBack", testFinalCopyAheadIsPutBack},
	{"AnEventThatAddsNothingMovesNoCursor", testAddsNothing},
	{"ALateEventFromTheCursorsProgressIsOlder", testLateEventFromTheCursorsProgress},
	{"AnEventAtTheCursorsVersionWithAnotherStatusIsAMismatch", testSameVersionOtherStatus},
	{"ASkippedEventNeverMovesAFinalView", testSkippedPastFinal},
}

// bundle is what a test works with.
type bundle struct {
	store  projection.Store
	ctx    context.Context
	tenant string
	suffix string
}

func setup(t *testing.T, newStore NewStore) *bundle {
	t.Helper()
	suffix := randomHex(t)
	return &bundle{store: newStore(t), ctx: t.Context(), tenant: "t-1-" + suffix, suffix: suffix}
}

func randomHex(t testing.TB) string {
	var b [4]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// id returns a job id unique to the test, e.g. "job-42-1a2b3c4d".
func (b *bundle) id(name string) string { return name + "-" + b.suffix }

func view(e *outbox.Event) projection.View { return projection.ViewOfEvent(e) }

// Adds reports whether an event changes what its job contributes to the
// totals (a delta, or a final status), and so must move its cursor: the
// stores skip every other (projection.Skipped).
func Adds(e *outbox.Event) bool { return e.Delta != 0 || e.Status.Final() }

// apply delivers e and requires the outcome: for an event that adds
// nothing (Adds), Skipped whatever want is, and no cursor read.
func (b *bundle) apply(t *testing.T, e *outbox.Event, want projection.Outcome, viewUpdated bool) projection.Result {
	t.Helper()
	res, err := b.store.Apply(b.ctx, view(e), e.Delta)
	require.NoError(t, err, "apply %s", e.EventID)
	if !Adds(e) {
		want = projection.Skipped
	}
	require.Equal(t, want, res.Outcome, "apply %s", e.EventID)
	require.Equal(t, viewUpdated, res.ViewUpdated, "apply %s: view updated", e.EventID)
	return res
}

// applyAll delivers evs in order, each for the first time.
func (b *bundle) applyAll(t *testing.T, evs []outbox.Event) {
	t.Helper()
	for i := range evs {
		b.apply(t, &evs[i], projection.Applied, true)
	}
}

// requireGap delivers e and requires a gap after cursor.
func (b *bundle) requireGap(t *testing.T, e *outbox.Event, cursor int64) projection.Result {
	t.Helper()
	res, err := b.store.Apply(b.ctx, view(e), e.Delta)
	require.ErrorIs(t, err, projection.ErrGap)
	var gap *projection.GapError
	require.ErrorAs(t, err, &gap)
	require.Equal(t, projection.GapError{JobID: e.JobID, Cursor: cursor, Version: e.Version}, *gap)
	return res
}

func (b *bundle) requireTotals(t *testing.T, tenant string, processed, completed int64) {
	t.Helper()
	got, err := b.store.Totals(b.ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: tenant, Processed: processed, Completed: completed}, got)
}

// requireCursor requires the job's cursor at e's snapshot (nil: none).
func (b *bundle) requireCursor(t *testing.T, jobID string, e *outbox.Event) {
	t.Helper()
	got, err := b.store.Cursor(b.ctx, b.tenant, jobID)
	require.NoError(t, err)
	want := projection.Cursor{}
	if e != nil {
		want = projection.Cursor{Version: e.Version, Progress: e.Progress, Status: e.Status}
	}
	require.Equal(t, want, got, "cursor of %s", jobID)
}

// requireView requires the job's view to be e's snapshot.
func (b *bundle) requireView(t *testing.T, e *outbox.Event) {
	t.Helper()
	got, err := b.store.View(b.ctx, e.JobID)
	require.NoError(t, err)
	require.Equal(t, view(e), got, "view of %s", e.JobID)
}

func testAppliesInOrder(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	var processed int64
	var counted *outbox.Event // the last event that moved the cursor
	for i := range evs {
		e := &evs[i]
		res := b.apply(t, e, projection.Applied, true)
		if Adds(e) {
			require.Equal(t, e.Version, res.Cursor)
			counted = e
		} else {
			require.Zero(t, res.Cursor, "a skipped event reads no cursor")
		}
		processed += e.Delta
		var completed int64
		if e.Status == jobs.StatusCompleted {
			completed = 1
		}
		// Every step, the takeover's negative delta included.
		b.requireTotals(t, b.tenant, processed, completed)
		b.requireCursor(t, e.JobID, counted)
		b.requireView(t, e)
	}
	require.Equal(t, int64(40), processed, "the sum of the deltas is the final progress")
}

func testViewsNeverGoBack(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs)
	done := &evs[5]

	// A late running snapshot never overwrites completed.
	for i := range 5 {
		b.apply(t, &evs[i], projection.Older, false)
		b.requireView(t, done)
	}

	// The view takes a newer snapshot even while the totals wait for its
	// predecessor, and keeps it when the predecessor arrives.
	other := Lifecycle(b.id("job-43"), b.tenant)
	b.apply(t, &other[0], projection.Applied, true)
	res := b.requireGap(t, &other[2], 0)
	require.True(t, res.ViewUpdated, "a snapshot does not wait for a gap")
	b.requireView(t, &other[2])
	b.apply(t, &other[1], projection.Applied, false)
	b.requireView(t, &other[2])
	b.apply(t, &other[2], projection.Applied, false)
	b.requireView(t, &other[2])
	b.requireTotals(t, b.tenant, 40+30, 1)
}

func testDuplicatesAndOlder(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:3])

	res := b.apply(t, &evs[2], projection.Duplicate, false)
	require.Equal(t, int64(3), res.Cursor)
	res = b.apply(t, &evs[1], projection.Older, false)
	require.Equal(t, int64(3), res.Cursor, "an older event reports the cursor it found")
	b.apply(t, &evs[0], projection.Skipped, false) // adds nothing, however late
	b.requireTotals(t, b.tenant, 30, 0)
	b.requireCursor(t, evs[0].JobID, &evs[2])
	b.requireView(t, &evs[2])

	// The completion, delivered three times, counts once.
	for i := 3; i < 6; i++ {
		b.apply(t, &evs[i], projection.Applied, true)
	}
	b.apply(t, &evs[5], projection.Duplicate, false)
	b.apply(t, &evs[5], projection.Duplicate, false)
	b.requireTotals(t, b.tenant, 40, 1)
}

func testGapsAreRefused(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	id := evs[0].JobID

	// No cursor is version 0 at progress 0: version 3, which starts from
	// progress 10, first is a gap (version 2, which adds 10, is missing).
	b.requireGap(t, &evs[2], 0)
	b.requireCursor(t, id, nil)
	b.requireTotals(t, b.tenant, 0, 0)

	b.apply(t, &evs[0], projection.Skipped, false) // the view already holds v3
	b.requireGap(t, &evs[5], 0)
	b.requireCursor(t, id, nil)
	b.apply(t, &evs[1], projection.Applied, false)
	b.requireGap(t, &evs[3], 2) // v3 adds 20 and has not been counted
	b.requireGap(t, &evs[5], 2)
	b.requireCursor(t, id, &evs[1])
	b.requireTotals(t, b.tenant, 10, 0)
	b.requireView(t, &evs[5])

	// The gap closes in order; each version counts once.
	for i := 2; i < 6; i++ {
		b.apply(t, &evs[i], projection.Applied, false)
	}
	b.requireTotals(t, b.tenant, 40, 1)
	b.requireCursor(t, id, &evs[5])
}

// recover recovers to e's snapshot and requires what it did.
func (b *bundle) recover(t *testing.T, e *outbox.Event, want projection.Recovery) {
	t.Helper()
	got, err := b.store.Recover(b.ctx, view(e))
	require.NoError(t, err, "recover to %s", e.EventID)
	require.Equal(t, want, got, "recover to %s", e.EventID)
}

func cursorAt(e *outbox.Event) projection.Cursor {
	return projection.Cursor{Version: e.Version, Progress: e.Progress, Status: e.Status}
}

func testRecovery(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	id := evs[0].JobID
	b.applyAll(t, evs[:3]) // cursor at v3, progress 30
	b.requireGap(t, &evs[4], 3)

	// The job item is at v5 (generation 2, progress 25): the totals skip v4
	// and v5 and count 25 - 30.
	b.recover(t, &evs[4], projection.Recovery{
		From: cursorAt(&evs[2]), To: cursorAt(&evs[4]), Processed: -5, ViewUpdated: true,
	})
	b.requireTotals(t, b.tenant, 25, 0)
	b.requireCursor(t, id, &evs[4])
	b.requireView(t, &evs[4])

	// The waiting event and the skipped one are now a duplicate and older.
	b.apply(t, &evs[4], projection.Duplicate, false)
	b.apply(t, &evs[3], projection.Older, false)
	// The next one applies as usual.
	b.apply(t, &evs[5], projection.Applied, true)
	b.requireTotals(t, b.tenant, 40, 1)

	// The same recovery again changes nothing.
	b.recover(t, &evs[4], projection.Recovery{From: cursorAt(&evs[5]), To: cursorAt(&evs[5])})
	b.requireTotals(t, b.tenant, 40, 1)
}

func testRecoveryWithoutCursor(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.recover(t, &evs[2], projection.Recovery{To: cursorAt(&evs[2]), Processed: 30, ViewUpdated: true})
	b.requireTotals(t, b.tenant, 30, 0)
	b.requireCursor(t, evs[0].JobID, &evs[2])
	b.requireView(t, &evs[2])
	b.apply(t, &evs[0], projection.Older, false)
	b.apply(t, &evs[3], projection.Applied, true)
	b.requireTotals(t, b.tenant, 0, 0)
}

func testRecoveryAfterTakeover(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:3])
	// The takeover restarted the count: the tenant's total drops with it.
	b.recover(t, &evs[3], projection.Recovery{
		From: cursorAt(&evs[2]), To: cursorAt(&evs[3]), Processed: -30, ViewUpdated: true,
	})
	b.requireTotals(t, b.tenant, 0, 0)
}

func testRecoveryCountsCompletionOnce(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:2])
	b.recover(t, &evs[5], projection.Recovery{
		From: cursorAt(&evs[1]), To: cursorAt(&evs[5]), Processed: 30, Completed: 1, ViewUpdated: true,
	})
	b.requireTotals(t, b.tenant, 40, 1)
	// The completion's own event, and a second recovery, count nothing more.
	b.apply(t, &evs[5], projection.Duplicate, false)
	b.recover(t, &evs[5], projection.Recovery{From: cursorAt(&evs[5]), To: cursorAt(&evs[5])})
	b.requireTotals(t, b.tenant, 40, 1)

	// A job whose completion was counted by its event is not counted again
	// by a recovery.
	other := Lifecycle(b.id("job-43"), b.tenant)
	b.applyAll(t, other)
	b.recover(t, &other[5], projection.Recovery{From: cursorAt(&other[5]), To: cursorAt(&other[5])})
	b.requireTotals(t, b.tenant, 80, 2)
}

func testRecoveryBehindCursor(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:4])
	at := cursorAt(&evs[3])
	b.recover(t, &evs[3], projection.Recovery{From: at, To: at})
	b.recover(t, &evs[1], projection.Recovery{From: at, To: at})
	b.requireTotals(t, b.tenant, 0, 0)
	b.requireCursor(t, evs[0].JobID, &evs[3])
	b.requireView(t, &evs[3])

	// At the cursor, a view that is behind still takes the snapshot.
	other := Lifecycle(b.id("job-43"), b.tenant)
	b.applyAll(t, other[:2])
	b.recover(t, &other[1], projection.Recovery{From: cursorAt(&other[1]), To: cursorAt(&other[1])})
}

func testRecoveryKeepsNewerView(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:2])
	b.requireGap(t, &evs[5], 2) // the view takes v6
	// A snapshot read before v6's event arrived: the totals move to it, the
	// view stays at v6.
	b.recover(t, &evs[3], projection.Recovery{From: cursorAt(&evs[1]), To: cursorAt(&evs[3]), Processed: -10})
	b.requireView(t, &evs[5])
	b.requireCursor(t, evs[0].JobID, &evs[3])
	b.requireTotals(t, b.tenant, 0, 0)
	b.apply(t, &evs[4], projection.Applied, false)
	b.requireTotals(t, b.tenant, 25, 0)
}

func testTenantsAreSeparate(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	other := b.tenant + "-other"
	mine := Lifecycle(b.id("job-42"), b.tenant)
	theirs := Failing(b.id("job-43"), other)
	b.applyAll(t, mine)
	b.applyAll(t, theirs)
	b.requireTotals(t, b.tenant, 40, 1)
	b.requireTotals(t, other, 7, 0)
	b.requireView(t, &theirs[2])
}

func testInvalidInput(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	good := Lifecycle(b.id("job-42"), b.tenant)[0]
	for name, mutate := range map[string]func(v *projection.View){
		"empty job id":      func(v *projection.View) { v.JobID = "" },
		"job id with slash": func(v *projection.View) { v.JobID = "job/42" },
		"empty tenant":      func(v *projection.View) { v.Tenant = "" },
		"version 0":         func(v *projection.View) { v.Version = 0 },
		"negative progress": func(v *projection.View) { v.Progress = -1 },
		"unknown status":    func(v *projection.View) { v.Status = "paused" },
	} {
		v := view(&good)
		mutate(&v)
		_, err := b.store.Apply(b.ctx, v, 1)
		require.ErrorIs(t, err, projection.ErrInvalid, name)
		_, err = b.store.Recover(b.ctx, v)
		require.ErrorIs(t, err, projection.ErrInvalid, name)
	}
	_, err := b.store.View(b.ctx, good.JobID)
	require.ErrorIs(t, err, projection.ErrNotFound, "nothing was written")
	b.requireTotals(t, b.tenant, 0, 0)
	b.requireCursor(t, good.JobID, nil)
}

func testMissing(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	_, err := b.store.View(b.ctx, b.id("job-none"))
	require.ErrorIs(t, err, projection.ErrNotFound)
	b.requireTotals(t, b.tenant, 0, 0)
	b.requireCursor(t, b.id("job-none"), nil)
}

// An event that adds nothing (delta 0, not final) is Skipped: its view is
// written, its cursor neither read nor moved, the totals untouched; the
// next event that adds starts from the state the cursor holds and applies,
// though versions lie between.
func testAddsNothing(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Failing(b.id("job-44"), b.tenant) // started, 7, failed at 7
	res := b.apply(t, &evs[0], projection.Skipped, true)
	require.Zero(t, res.Cursor)
	b.requireCursor(t, evs[0].JobID, nil)
	b.requireTotals(t, b.tenant, 0, 0)
	b.requireView(t, &evs[0])
	b.apply(t, &evs[1], projection.Applied, true)
	// The failure adds to neither counter but is final: it moves the
	// cursor, which ends there.
	b.apply(t, &evs[2], projection.Applied, true)
	b.requireCursor(t, evs[0].JobID, &evs[2])
	b.requireTotals(t, b.tenant, 7, 0)
	b.apply(t, &evs[0], projection.Skipped, false)
}

// An event behind the cursor is older even when it starts from the
// cursor's progress: after the takeover (v4, back to progress 0), v2 (from
// 0 to 10) delivered again must not count its 10 a second time.
func testLateEventFromTheCursorsProgress(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:4])
	b.requireCursor(t, evs[0].JobID, &evs[3])
	res := b.apply(t, &evs[1], projection.Older, false)
	require.Equal(t, int64(4), res.Cursor)
	b.requireTotals(t, b.tenant, 0, 0)
}

// An event at the cursor's version with another status (a completion
// with the cursor's progress, delta 0) is not a duplicate: a mismatch,
// nothing counted.
func testSameVersionOtherStatus(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs[:3])
	forged := evs[2]
	forged.Status, forged.Type, forged.Delta = jobs.StatusCompleted, jobs.EventCompleted, 0
	b.requireMismatch(t, &forged, cursorAt(&evs[2]))
	b.requireCursor(t, evs[0].JobID, &evs[2])
	b.requireTotals(t, b.tenant, 30, 0)
}

// An event that adds nothing past a final view (no version follows a
// final one: not the job's) does not move the view: it is a mismatch, so
// that the projector reads the job item, as for any event past a final
// cursor. One older than the final view is skipped as usual.
func testSkippedPastFinal(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	evs := Lifecycle(b.id("job-42"), b.tenant)
	b.applyAll(t, evs)
	stray := evs[3] // a started event, delta 0
	stray.Version, stray.EventID = 9, jobs.OutboxID(stray.JobID, 9)
	stray.Progress, stray.Delta = evs[5].Progress, 0
	_, err := b.store.Apply(b.ctx, view(&stray), stray.Delta)
	require.ErrorIs(t, err, projection.ErrMismatch)
	var mismatch *projection.MismatchError
	require.ErrorAs(t, err, &mismatch)
	require.Equal(t, cursorAt(&evs[5]), mismatch.Cursor)
	b.requireView(t, &evs[5])
	b.requireCursor(t, evs[0].JobID, &evs[5])
	b.requireTotals(t, b.tenant, 40, 1)
	b.apply(t, &evs[0], projection.Skipped, false)
	b.requireView(t, &evs[5])
}
