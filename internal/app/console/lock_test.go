package console_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// pausedDiscard is a quarantine whose Discard stops part way (as a
// discard-all of many messages archiving each to S3 does) until gate is
// closed; started is closed once it stopped.
type pausedDiscard struct {
	console.Quarantine
	started, gate chan struct{}
}

func (p *pausedDiscard) Discard(ctx context.Context, group, seq string) ([]string, quarantine.HoldRecord, error) {
	close(p.started)
	<-p.gate
	return p.Quarantine.Discard(ctx, group, seq)
}

// setupActions is a console with actions allowed whose commands queue's
// quarantine is wrap of the operator.
func setupActions(t testing.TB, wrap func(console.Quarantine) console.Quarantine) *testBundle {
	t.Helper()
	return setup(t, func(c *console.Config) {
		c.AllowActions = true
		c.Queues[0].Quarantine = wrap(c.Queues[0].Quarantine)
	})
}

// postAside posts form to target apart from the test; its status comes
// on the channel once it is answered.
func (b *testBundle) postAside(target string, form url.Values) <-chan int {
	done := make(chan int, 1)
	go func() { done <- b.serve(b.request(http.MethodPost, target, form)).Code }()
	return done
}

// busyRefusal is what a second action on a group whose first runs gets.
const busyRefusal = "an action on this group is running: wait for it, then reload"

// A redrive posted while a discard-all of the same group runs is refused
// (409), sending nothing: otherwise it would send copies of messages the
// discard then drops (the discard does not change the epoch).
func TestARedriveWhileADiscardRunsIsRefused(t *testing.T) {
	t.Parallel()
	slow := &pausedDiscard{started: make(chan struct{}), gate: make(chan struct{})}
	b := setupActions(t, func(q console.Quarantine) console.Quarantine { slow.Quarantine = q; return slow })
	b.hold(t, "g", 3)
	redrive := formOf(t, b, "/quarantine/commands/g/redrive")
	discard := formOf(t, b, "/quarantine/commands/g/discard")
	discard.Set("group_id", "g")
	done := b.postAside("/quarantine/commands/g/discard", discard)
	<-slow.started

	page := b.post(t, "/quarantine/commands/g/redrive", redrive, http.StatusConflict)
	require.Contains(t, testid(t, page, "error-message"), busyRefusal)
	require.Empty(t, b.sends.Inputs, "no copy sent")

	close(slow.gate)
	require.Equal(t, http.StatusSeeOther, <-done)
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Epoch, "no redrive began")
	// Once the discard is done the group is free again: a later action
	// is not refused as busy (here the operator's own 404, nothing held).
	page = b.post(t, "/quarantine/commands/g/redrive", redrive, http.StatusNotFound)
	require.NotContains(t, page, busyRefusal)
}

// Two redrives of one group, the second posted while the first runs (a
// true double click, before the first began its epoch): the second is
// refused, and one epoch is begun.
func TestTwoRedrivesAtOnceBeginOneEpoch(t *testing.T) {
	t.Parallel()
	started, gate := make(chan struct{}), make(chan struct{})
	var first sync.Once
	spy := &redriveSpy{during: func() {
		paused := false
		first.Do(func() { paused = true; close(started) })
		if paused {
			<-gate
		}
	}}
	b := setupActions(t, func(q console.Quarantine) console.Quarantine { spy.Quarantine = q; return spy })
	b.hold(t, "g", 2)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	done := b.postAside("/quarantine/commands/g/redrive", form)
	<-started

	page := b.post(t, "/quarantine/commands/g/redrive", form, http.StatusConflict)
	require.Contains(t, testid(t, page, "error-message"), busyRefusal)

	close(gate)
	require.Equal(t, http.StatusSeeOther, <-done)
	h, err := b.holds.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, int64(1), h.Epoch, "one epoch begun")
	require.Len(t, b.sends.Inputs, 2, "each message sent once")
}
