package quarantinetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func testParkHolds(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	in := items(3, 5, 12)
	// Whatever an item says of its queue, status and times, the store sets
	// them; an item without a group takes the call's.
	in[1].Status, in[1].ParkedAt, in[1].Queue = quarantine.StatusDone, Start.Add(-time.Hour), "elsewhere"
	in[2].Group = "g"
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "g", in, true, "handler: permanent: bad order", now)
	require.NoError(t, err)
	want := quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 0, Parked: 3,
		Cause: "handler: permanent: bad order", From: seq(3), Through: seq(12), Next: seq(3), HeldAt: now, UpdatedAt: now,
	}
	require.Equal(t, want, h)
	require.Equal(t, want, b.hold(t, "g"))
	require.Equal(t, []quarantine.Parked{b.stored("g", 3, now), b.stored("g", 5, now), b.stored("g", 12, now)}, b.messages(t, "g", ""))
	b.requireCounted(t, "g")

	// A group without a record has no hold.
	_, err = b.store.Hold(b.ctx, b.queue, "other")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	require.Empty(t, b.messages(t, "other", ""))
}

func testParkIdempotent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	first := b.park(t, "g", true, "boom", 1, 2, 3)
	parkedAt := first.HeldAt
	before := b.messages(t, "g", "")

	// The same park again, later, with other contents: nothing is counted
	// twice, and no message is overwritten.
	changed := items(1, 2, 3)
	for i := range changed {
		changed[i].Body, changed[i].MessageID, changed[i].Cause = "other body", "other id", "other cause"
	}
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "g", changed, true, "boom again", now)
	require.NoError(t, err)
	b.requireHold(t, h)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 3, Cause: "boom again",
		From: seq(1), Through: seq(3), Next: seq(1), HeldAt: now, UpdatedAt: now,
	}, h)
	require.Equal(t, before, b.messages(t, "g", ""))
	b.requireCounted(t, "g")

	// An overlapping park counts only what is new.
	h = b.park(t, "g", false, "parked while held", 3, 4)
	require.Equal(t, int64(4), h.Parked)
	require.Equal(t, seq(4), h.Through)
	require.Equal(t, parkedAt, b.message(t, "g", 3).ParkedAt, "a retried park rewrote a message")
	require.Equal(t, b.now, b.message(t, "g", 4).ParkedAt)

	// Under every status: done and discarded messages are not parked again.
	b.redrive(t, "g")
	b.done(t, "g", 1, 1)
	b.discard(t, "g", 2)
	before = b.messages(t, "g", "")
	require.Equal(t, map[string]quarantine.Status{"1": quarantine.StatusDone, "2": quarantine.StatusDiscarded, "3": quarantine.StatusParked, "4": quarantine.StatusParked}, statuses(before))
	h = b.park(t, "g", false, "parked while draining", 1, 2, 3, 4)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Epoch)
	h = b.park(t, "g", true, "copy failed", 1, 2, 3, 4)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StateHeld, h.State)
	for i, p := range b.messages(t, "g", "") {
		want := before[i]
		require.Equal(t, want, p, "a retried park changed message %s", quarantine.SeqNumber(p.Sequence))
	}

	// Even on a released hold: nothing new, so no hold is created, nothing
	// is counted, and the released hold comes back as it was.
	b.discard(t, "g", 3)
	released := b.discard(t, "g", 4)
	require.Equal(t, quarantine.StateReleased, released.State)
	now = b.tick()
	h, err = b.store.Park(b.ctx, b.queue, "g", items(1, 2, 3, 4), true, "redelivered", now)
	require.NoError(t, err)
	require.Equal(t, released, h)
	b.requireCounted(t, "g")
}

func testParkWithoutHold(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// A missing hold is created held.
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "new", items(1), false, "parked while held", now)
	require.NoError(t, err)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "new", State: quarantine.StateHeld, Parked: 1, Cause: "parked while held",
		From: seq(1), Through: seq(1), Next: seq(1), HeldAt: now, UpdatedAt: now,
	}, h)
	b.requireHold(t, h)

	// A held hold keeps its state, cause and time held.
	held := b.park(t, "g", true, "boom", 1)
	h = b.park(t, "g", false, "later", 2)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 2, Cause: "boom",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: held.HeldAt, UpdatedAt: b.now,
	}, h)

	// A draining one keeps draining under its epoch.
	drain := b.redrive(t, "g")
	h = b.park(t, "g", false, "later still", 3)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateDraining, Epoch: drain.Epoch, Parked: 3, Cause: "boom",
		From: seq(1), Through: seq(3), Next: seq(1), HeldAt: held.HeldAt, UpdatedAt: b.now,
	}, h)

	// A released one is held anew: new cause, time and range.
	b.discard(t, "g", 1)
	b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateReleased, b.discard(t, "g", 3).State)
	h = b.park(t, "g", false, "again", 4)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: drain.Epoch, Parked: 1, Cause: "again",
		From: seq(4), Through: seq(4), Next: seq(4), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// A hold without a cause takes the first one given.
	h = b.park(t, "quiet", true, "", 1)
	require.Empty(t, h.Cause)
	h = b.park(t, "quiet", false, "parked while held", 2)
	require.Equal(t, "parked while held", h.Cause)
	h = b.park(t, "quiet", false, "another", 3)
	require.Equal(t, "parked while held", h.Cause)
}

func testParkWithHold(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// Held again: a new cause and time held, the range extended.
	b.park(t, "g", true, "first", 1)
	h := b.park(t, "g", true, "second", 2)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 2, Cause: "second",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Draining, held again by a copy that failed (nothing parked): the
	// epoch and the count stay.
	drain := b.redrive(t, "g")
	require.Equal(t, int64(1), drain.Epoch)
	h = b.park(t, "g", true, "copy failed again")
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 1, Parked: 2, Cause: "copy failed again",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)
	// Draining, held again with messages parked.
	b.redrive(t, "g")
	h = b.park(t, "g", true, "threshold", 5, 6)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 2, Parked: 4, Cause: "threshold",
		From: seq(1), Through: seq(6), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Released, held anew: a new range; the epoch goes on.
	for _, n := range []int{1, 2, 5, 6} {
		b.discard(t, "g", n)
	}
	h = b.park(t, "g", true, "third", 7, 8)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 2, Parked: 2, Cause: "third",
		From: seq(7), Through: seq(8), Next: seq(7), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Released, a park with nothing new: no hold is created (it would hold
	// the group with nothing to redrive); the released hold comes back as
	// it was, and nothing is written.
	b.park(t, "empty", true, "boom", 1)
	released := b.discard(t, "empty", 1)
	require.Equal(t, quarantine.StateReleased, released.State)
	before := b.snapshot(t, "empty", "never")
	h, err := b.store.Park(b.ctx, b.queue, "empty", nil, true, "copy failed after the release", b.tick())
	require.NoError(t, err)
	require.Equal(t, released, h)
	h, err = b.store.Park(b.ctx, b.queue, "never", nil, true, "nothing to park", b.tick())
	require.NoError(t, err)
	require.Equal(t, quarantine.HoldRecord{}, h)
	require.Equal(t, before, b.snapshot(t, "empty", "never"))
	holds, err := b.store.Holds(b.ctx, b.queue)
	require.NoError(t, err)
	for _, x := range holds {
		require.NotEqual(t, "empty", x.Group)
		require.NotEqual(t, "never", x.Group)
	}
}

func testRange(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	h := b.park(t, "g", true, "boom", 5, 7)
	require.Equal(t, [2]string{seq(5), seq(7)}, [2]string{h.From, h.Through})
	h = b.park(t, "g", false, "", 3)
	require.Equal(t, [2]string{seq(3), seq(7)}, [2]string{h.From, h.Through}, "a message below the range extends it down")
	h = b.park(t, "g", false, "", 9)
	require.Equal(t, [2]string{seq(3), seq(9)}, [2]string{h.From, h.Through})
	h = b.park(t, "g", false, "", 4, 6)
	require.Equal(t, [2]string{seq(3), seq(9)}, [2]string{h.From, h.Through})
	require.Equal(t, int64(6), h.Parked)

	// Sequence keys sort as the numbers do.
	h = b.park(t, "g", false, "", 10, 100)
	require.Equal(t, [2]string{seq(3), seq(100)}, [2]string{h.From, h.Through})

	// A released hold keeps its range (late redeliveries are recognised by
	// it); a new hold starts a new one, which messages parked before do
	// not extend.
	b.park(t, "r", true, "boom", 1, 2)
	b.redrive(t, "r")
	b.done(t, "r", 1, 1)
	h = b.done(t, "r", 2, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, [2]string{seq(1), seq(2)}, [2]string{h.From, h.Through})
	h = b.park(t, "r", true, "again", 5)
	require.Equal(t, [2]string{seq(5), seq(5)}, [2]string{h.From, h.Through})
	h = b.park(t, "r", false, "", 1, 9)
	require.Equal(t, [2]string{seq(5), seq(9)}, [2]string{h.From, h.Through})
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StatusDone, b.message(t, "r", 1).Status)
}
