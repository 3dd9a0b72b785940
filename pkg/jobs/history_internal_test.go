package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// appendHistory keeps MaxHistory entries exactly: all of them up to
// MaxHistory, the last MaxHistory after; the job it came from keeps its
// own entries (a clone before the write is not changed by it).
func TestAppendHistoryKeepsTheLastMaxHistory(t *testing.T) {
	t.Parallel()
	var h []Transition
	for v := range int64(MaxHistory - 1) {
		h = append(h, Transition{Version: v})
	}
	full := appendHistory(h, Transition{Version: MaxHistory - 1})
	require.Len(t, full, MaxHistory)
	require.Equal(t, int64(0), full[0].Version, "at MaxHistory entries, none is dropped")
	next := appendHistory(full, Transition{Version: MaxHistory})
	require.Len(t, next, MaxHistory)
	require.Equal(t, full[1:], next[:MaxHistory-1], "one past it: the oldest goes")
	require.Equal(t, int64(MaxHistory), next[MaxHistory-1].Version)
	next[0].Version = -1
	require.Equal(t, int64(1), full[1].Version, "the entries before are not shared")
	require.Equal(t, []Transition{{Version: 7}}, appendHistory(nil, Transition{Version: 7}))
}
