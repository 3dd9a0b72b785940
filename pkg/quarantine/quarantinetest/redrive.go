package quarantinetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func testEpochCarriesOver(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1)
	require.Equal(t, int64(1), b.redrive(t, "g").Epoch)
	h := b.done(t, "g", 1, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(1), h.Epoch, "a release keeps the epoch")

	h = b.park(t, "g", true, "boom again", 2)
	require.Equal(t, int64(1), h.Epoch, "a new hold goes on from the released hold's epoch")
	require.Equal(t, int64(2), b.redrive(t, "g").Epoch)
	before := b.snapshot(t, "g")
	_, err := b.store.Done(b.ctx, b.queue, "g", seq(2), 3, b.tick())
	b.refused(t, err, quarantine.ErrConflict, before, "g")
	h = b.done(t, "g", 2, 2)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(2), h.Epoch)

	// Without a hold=true park: the same.
	h = b.park(t, "g", false, "parked", 3)
	require.Equal(t, int64(2), h.Epoch)
	require.Equal(t, quarantine.StateHeld, h.State)
}

func testDone(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	b.park(t, "g", true, "boom", 1, 2, 3)

	try := func(group string, n int, epoch int64, want error) {
		t.Helper()
		before := b.snapshot(t, groups...)
		_, err := b.store.Done(b.ctx, b.queue, group, seq(n), epoch, b.tick())
		b.refused(t, err, want, before, groups...)
	}
	try("nobody", 1, 0, quarantine.ErrNoHold)
	try("g", 1, 0, quarantine.ErrConflict) // held, not draining
	try("g", 1, 1, quarantine.ErrConflict)
	try("g", 99, 0, quarantine.ErrConflict) // the hold is checked first

	drain := b.redrive(t, "g")
	try("g", 1, 0, quarantine.ErrConflict) // no copy has epoch 0
	try("g", 1, 2, quarantine.ErrConflict) // an epoch not begun
	// Only the oldest parked message's copy is done: a later one would pass
	// it (its copy lost on the way), and a message not parked is never the
	// oldest parked.
	try("g", 2, 1, quarantine.ErrConflict)
	try("g", 3, 1, quarantine.ErrConflict)
	try("g", 99, 1, quarantine.ErrConflict)

	before := b.message(t, "g", 1)
	h := b.done(t, "g", 1, 1)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateDraining, Epoch: 1, Parked: 2, Cause: "boom",
		From: seq(1), Through: seq(3), Next: seq(2), HeldAt: drain.HeldAt, UpdatedAt: b.now,
	}, h)
	after := before
	after.Status, after.UpdatedAt = quarantine.StatusDone, b.now
	require.Equal(t, after, b.message(t, "g", 1))
	try("g", 1, 1, quarantine.ErrConflict) // done already: 2 is the oldest parked now

	b.discard(t, "g", 2)
	try("g", 2, 1, quarantine.ErrConflict) // discarded: 3 is

	// Held again: no Done while held, though the message is parked.
	b.park(t, "g", true, "copy failed")
	try("g", 3, 1, quarantine.ErrConflict)
	// A redrive (epoch 2) begun while a copy of epoch 1 ran: the copy ran
	// in its place all the same, and its Done lands, so the epoch-2 copy
	// will be dropped as done rather than run the message a second time.
	h = b.redrive(t, "g")
	require.Equal(t, int64(2), h.Epoch)
	try("g", 3, 3, quarantine.ErrConflict)
	h = b.done(t, "g", 3, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	try("g", 3, 2, quarantine.ErrNoHold) // released
}

// testNext follows a hold's Next, the only message whose copy may be
// done, through parks (one older than Next among them), discards of it
// and of others, a re-hold and dones, past more done and discarded
// messages than one read of the store's may bring.
func testNext(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	next := func(h quarantine.HoldRecord) string { t.Helper(); return quarantine.SeqNumber(h.Next) }
	require.Equal(t, "5", next(b.park(t, "g", true, "boom", 5, 7, 9)))
	require.Equal(t, "5", next(b.park(t, "g", false, "", 11)), "a later message leaves Next")
	require.Equal(t, "3", next(b.park(t, "g", false, "", 3)), "an older one, parked late (a redelivery), is next")
	require.Equal(t, "3", next(b.discard(t, "g", 9)), "a discard of another leaves Next")
	require.Equal(t, "5", next(b.discard(t, "g", 3)), "a discard of Next moves it on")

	epoch := b.redrive(t, "g").Epoch
	before := b.snapshot(t, "g")
	_, err := b.store.Done(b.ctx, b.queue, "g", seq(7), epoch, b.tick())
	b.refused(t, err, quarantine.ErrConflict, before, "g")
	require.Equal(t, "7", next(b.done(t, "g", 5, epoch)))
	require.Equal(t, "7", next(b.park(t, "g", true, "copy failed again")), "a re-hold leaves Next")
	epoch = b.redrive(t, "g").Epoch
	require.Equal(t, "11", next(b.done(t, "g", 7, epoch)), "past the discarded 9")
	require.Equal(t, "11", next(b.park(t, "g", false, "", 13)))
	require.Equal(t, "13", next(b.done(t, "g", 11, epoch)))
	h := b.done(t, "g", 13, epoch)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Empty(t, h.Next, "a released hold names nothing next")
	require.Equal(t, "20", next(b.park(t, "g", true, "again", 20, 21)), "a new hold starts afresh")

	// Many messages done or discarded between Next and the next one parked.
	b.park(t, "many", true, "boom", 1)
	for n := 2; n <= 12; n++ {
		b.park(t, "many", false, "", n)
	}
	for n := 2; n <= 11; n++ {
		b.discard(t, "many", n)
	}
	epoch = b.redrive(t, "many").Epoch
	require.Equal(t, "12", next(b.done(t, "many", 1, epoch)))
}

func testRelease(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2, 3)
	h := b.discard(t, "g", 1)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(2), h.Parked)
	b.redrive(t, "g")
	h = b.done(t, "g", 2, 1)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Parked)
	h = b.done(t, "g", 3, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
	require.Equal(t, b.now, h.UpdatedAt)
	require.Equal(t, map[string]quarantine.Status{"1": quarantine.StatusDiscarded, "2": quarantine.StatusDone, "3": quarantine.StatusDone},
		statuses(b.messages(t, "g", "")))

	// From held, by discards alone.
	b.park(t, "h", true, "boom", 1, 2)
	h = b.discard(t, "h", 2)
	require.Equal(t, quarantine.StateHeld, h.State)
	h = b.discard(t, "h", 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)

	holds, err := b.store.Holds(b.ctx, b.queue)
	require.NoError(t, err)
	require.Empty(t, holds)
}

func testBeginRedrive(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	before := b.snapshot(t, groups...)
	_, err := b.store.BeginRedrive(b.ctx, b.queue, "nobody", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)

	held := b.park(t, "g", true, "boom", 1, 2)
	h := b.redrive(t, "g")
	want := held
	want.State, want.Epoch, want.UpdatedAt = quarantine.StateDraining, 1, b.now
	require.Equal(t, want, h)

	// Draining: a new epoch again.
	h = b.redrive(t, "g")
	want.Epoch, want.UpdatedAt = 2, b.now
	require.Equal(t, want, h)

	b.discard(t, "g", 1)
	released := b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateReleased, released.State)
	before = b.snapshot(t, groups...)
	_, err = b.store.BeginRedrive(b.ctx, b.queue, "g", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)

	// A park of nothing new after the release holds nothing: still no
	// hold to redrive.
	_, err = b.store.Park(b.ctx, b.queue, "g", nil, true, "copy failed after the release", b.tick())
	require.NoError(t, err)
	_, err = b.store.BeginRedrive(b.ctx, b.queue, "g", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)
}

func testDiscard(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	b.park(t, "g", true, "boom", 1, 2, 3, 4)

	try := func(group string, n int, want error) {
		t.Helper()
		before := b.snapshot(t, groups...)
		_, err := b.store.Discard(b.ctx, b.queue, group, seq(n), b.tick())
		b.refused(t, err, want, before, groups...)
	}
	try("nobody", 1, quarantine.ErrNoHold)
	try("g", 99, quarantine.ErrNotParked)

	before := b.message(t, "g", 1)
	h := b.discard(t, "g", 1)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(3), h.Parked)
	require.Equal(t, b.now, h.UpdatedAt)
	after := before
	after.Status, after.UpdatedAt = quarantine.StatusDiscarded, b.now
	require.Equal(t, after, b.message(t, "g", 1))
	try("g", 1, quarantine.ErrNotParked)

	// Draining, under any epoch.
	b.redrive(t, "g")
	b.redrive(t, "g")
	h = b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(2), h.Epoch)
	b.done(t, "g", 3, 2)
	try("g", 3, quarantine.ErrNotParked) // done
	h = b.discard(t, "g", 4)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(2), h.Epoch)
	try("g", 4, quarantine.ErrNoHold)
}
