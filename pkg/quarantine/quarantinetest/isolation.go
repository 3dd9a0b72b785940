package quarantinetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func testIsolation(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	other := &bundle{store: b.store, ctx: b.ctx, queue: "other-" + b.queue, now: b.now}
	// Groups whose names nest or hold separators.
	for _, g := range []string{"a", "a#b", "a/b", "ab"} {
		b.park(t, g, true, "boom "+g, 1)
	}
	b.park(t, "a", false, "", 2)
	require.Equal(t, []string{"1", "2"}, sequences(b.messages(t, "a", "")))
	require.Equal(t, []string{"1"}, sequences(b.messages(t, "a#b", "")))
	require.Equal(t, "boom a#b", b.hold(t, "a#b").Cause)

	// The same group in another queue is another group.
	_, err := other.store.Hold(b.ctx, other.queue, "a")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	_, err = other.store.BeginRedrive(b.ctx, other.queue, "a", b.tick())
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	_, err = other.store.Discard(b.ctx, other.queue, "a", seq(1), b.tick())
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	require.Empty(t, other.messages(t, "a", ""))
	h := other.park(t, "a", true, "elsewhere", 5)
	require.Equal(t, int64(1), h.Parked)
	require.Equal(t, int64(2), b.hold(t, "a").Parked)
	b.redrive(t, "a")
	require.Equal(t, int64(0), other.hold(t, "a").Epoch)
	require.Equal(t, quarantine.StateHeld, other.hold(t, "a").State)
	hs, err := b.store.Holds(b.ctx, other.queue)
	require.NoError(t, err)
	require.Equal(t, []quarantine.HoldRecord{other.hold(t, "a")}, hs)
}
