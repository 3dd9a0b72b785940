package jobitem_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// Every status and every event an item holds survive their slot's
// string; an event no item holds is written as none.
func TestATransitionRoundTripsThroughItsSlot(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_793_782_800_123).UTC()
	events := []string{"", jobitem.MessageRun, jobitem.EventStarted, jobitem.EventProgress,
		jobitem.EventCompleted, jobitem.EventFailed, jobitem.EventCancelled}
	written := map[jobitem.Status][]string{ // the events each status's transitions write
		jobitem.StatusPending:   {jobitem.MessageRun},
		jobitem.StatusRunning:   {jobitem.EventProgress, jobitem.EventStarted, jobitem.MessageRun},
		jobitem.StatusCompleted: {jobitem.EventCompleted},
		jobitem.StatusFailed:    {jobitem.EventFailed},
		jobitem.StatusCancelled: {jobitem.EventCancelled},
	}
	for s, evs := range written {
		for _, e := range events {
			tr := jobitem.Transition{Version: 1234, Status: s, Generation: 7, At: at, Event: e}
			enc := jobitem.EncodeTransition(tr)
			require.Len(t, enc, 1+8+len("ya.7"), "%s %q", s, e)
			back, err := jobitem.DecodeTransition(enc)
			require.NoError(t, err)
			if !slices.Contains(evs, e) {
				tr.Event = evs[0] // one a store never writes: its status's first
			}
			require.Equal(t, tr, back, "%s %q", s, e)
		}
	}
	// Times outside 1970 to 2059 are written as the nearest inside.
	for at, want := range map[time.Time]time.Time{
		time.UnixMilli(-5): time.UnixMilli(0).UTC(), time.UnixMilli(0): time.UnixMilli(0).UTC(),
		time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC): time.UnixMilli(2821109907455).UTC(),
	} {
		back, err := jobitem.DecodeTransition(jobitem.EncodeTransition(jobitem.Transition{Status: jobitem.StatusPending, At: at}))
		require.NoError(t, err)
		require.Equal(t, want, back.At)
	}
	require.Equal(t, "smw1vyqo07.2", jobitem.EncodeTransition(jobitem.Transition{Version: 7, Status: jobitem.StatusRunning,
		Generation: 2, At: time.UnixMilli(1_793_782_800_000), Event: jobitem.EventStarted}), "the documented example")
}

// The slots are the versions modulo MaxHistory: version 19 has the last,
// version 20 the first again, so 21 entries fill 20 slots and the later
// entry of a slot stays.
func TestTheSlotsAreTheVersionsModuloMaxHistory(t *testing.T) {
	t.Parallel()
	require.Equal(t, "h0", jobitem.HistorySlot(0))
	require.Equal(t, "h19", jobitem.HistorySlot(jobitem.MaxHistory-1))
	require.Equal(t, "h0", jobitem.HistorySlot(jobitem.MaxHistory))
	var h []jobitem.Transition
	for v := range int64(jobitem.MaxHistory + 1) {
		h = append(h, jobitem.Transition{Version: v, Status: jobitem.StatusRunning, Generation: 1, At: time.UnixMilli(v).UTC()})
	}
	require.Len(t, jobitem.EncodeHistory(h[:jobitem.MaxHistory]), jobitem.MaxHistory)
	slots := jobitem.EncodeHistory(h)
	require.Len(t, slots, jobitem.MaxHistory)
	require.Equal(t, jobitem.EncodeTransition(h[jobitem.MaxHistory]), slots["h0"])
	require.Nil(t, jobitem.EncodeHistory(nil))
}
