package quarantine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A hold written before holds kept their next (or by such a version during
// a rolling deploy, whose writes drop the attribute) has messages parked
// and no Next. A later park must not name its own message next, which
// would pass the older ones for good; the next redrive reads the oldest
// parked message and names it. (DynamoStore's side of this runs on
// DynamoDB Local: TestDynamoRedriveNamesTheOldestParkedOfAHoldWithoutNext.)
func TestMemoryStoreRepairsAHoldWithoutNext(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := NewMemoryStore()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	key := func(n string) string {
		k, err := SeqKey(n)
		require.NoError(t, err)
		return k
	}
	_, err := m.Park(ctx, "q.fifo", "g", []Parked{{Sequence: key("1")}, {Sequence: key("2")}}, true, "boom", at)
	require.NoError(t, err)
	_, err = m.Discard(ctx, "q.fifo", "g", key("1"), at)
	require.NoError(t, err)
	old := m.holds[holdKey{"q.fifo", "g"}]
	require.Equal(t, key("2"), old.Next)
	old.Next = "" // as the previous version wrote it
	m.holds[holdKey{"q.fifo", "g"}] = old

	h, err := m.Park(ctx, "q.fifo", "g", []Parked{{Sequence: key("3")}}, false, "", at)
	require.NoError(t, err)
	require.Empty(t, h.Next, "a later message is not named next over the older ones")
	require.Equal(t, int64(2), h.Parked)

	h, err = m.BeginRedrive(ctx, "q.fifo", "g", at)
	require.NoError(t, err)
	require.Equal(t, key("2"), h.Next, "the redrive names the oldest parked, past the discarded 1")
	h, err = m.Done(ctx, "q.fifo", "g", key("2"), h.Epoch, at)
	require.NoError(t, err)
	require.Equal(t, key("3"), h.Next)
}
