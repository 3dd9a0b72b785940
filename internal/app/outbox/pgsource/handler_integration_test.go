//go:build integration

package pgsource_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// The handler drains for a nudge and for EventBridge's scheduled event
// (testdata: the shape the EventBridge user guide shows for a scheduled
// rule's event).
func TestHandleDrainsForANudgeAndForTheSchedule(t *testing.T) {
	t.Parallel()
	scheduled, err := os.ReadFile("testdata/scheduled-event.json")
	require.NoError(t, err)
	nudged, err := json.Marshal(nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Now(), Commits: 3})
	require.NoError(t, err)
	for name, event := range map[string][]byte{"schedule": scheduled, "nudge": nudged} {
		b := setup(t)
		b.create(t, "job-1", 1)
		rep, err := b.relay(t, pgsource.Config{}).Handle(t.Context(), event)
		require.NoError(t, err, name)
		require.Equal(t, 2, rep.Rows, name)
		require.Zero(t, b.rows(t), name)
	}
}

// Any other event is refused with ErrUnknownTrigger and drains nothing:
// the rows wait for the next nudge or the schedule.
func TestHandleRefusesAnyOtherEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 0)
	r := b.relay(t, pgsource.Config{})
	for _, event := range []string{
		`{}`, `null`, `[]`, `"nudge"`, `not json`,
		`{"type":"fifoworker.outbox.nudge","commits":0}`,  // a nudge stands for at least one commit
		`{"type":"fifoworker.outbox.nudge","commits":-1}`, //
		`{"type":"fifoworker.outbox.nudge","commits":1,"first_commit_at":"yesterday"}`,
		`{"type":"other","commits":1}`,
		`{"detail-type":"Scheduled Event","source":"aws.other"}`,
		`{"detail-type":"Object Created","source":"aws.events"}`,
		`{"type":"fifoworker.outbox.nudge","detail-type":"Scheduled Event","source":"aws.events"}`,
	} {
		rep, err := r.Handle(t.Context(), json.RawMessage(event))
		require.ErrorIs(t, err, pgsource.ErrUnknownTrigger, event)
		require.Zero(t, rep.Rows, event)
	}
	require.Equal(t, 1, b.rows(t))
	require.Empty(t, b.sink.acked)
}
