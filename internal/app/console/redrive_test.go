package console_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/console"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// redriveSpy is a quarantine whose Redrive records the context it ran
// under, then answers rep and err (or the inner operator's redrive).
type redriveSpy struct {
	console.Quarantine
	ctxErr   error
	deadline time.Duration // how far the redrive's deadline was
	rep      quarantine.RedriveReport
	err      error
	leave    context.CancelFunc // called first: the browser goes away
	during   func()             // called while it runs
}

func (s *redriveSpy) Redrive(ctx context.Context, group string, wait bool) (quarantine.RedriveReport, error) {
	if s.leave != nil {
		s.leave()
	}
	if s.during != nil {
		s.during()
	}
	s.ctxErr = ctx.Err()
	if d, ok := ctx.Deadline(); ok {
		s.deadline = time.Until(d)
	}
	if s.err != nil {
		return s.rep, s.err
	}
	return s.Quarantine.Redrive(ctx, group, wait)
}

// A browser that goes away (its request's context cancelled) does not cut
// a redrive short: it runs under its own bounded timeout.
func TestARedriveOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	spy := &redriveSpy{}
	b := setup(t, func(c *console.Config) {
		c.AllowActions = true
		c.RedriveTimeout = 3 * time.Minute
		spy.Quarantine = c.Queues[0].Quarantine
		c.Queues[0].Quarantine = spy
	})
	b.hold(t, "g", 2)
	form := formOf(t, b, "/quarantine/commands/g/redrive")
	ctx, cancel := context.WithCancel(t.Context())
	spy.leave = cancel
	var running []string
	spy.during = func() { running = b.console.InFlight() }
	w := b.serve(b.request(http.MethodPost, "/quarantine/commands/g/redrive", form).WithContext(ctx))
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	require.NoError(t, spy.ctxErr, "the redrive's context outlives the request's")
	require.InDelta(t, float64(3*time.Minute), float64(spy.deadline), float64(10*time.Second), "its own timeout, RedriveTimeout")
	require.Len(t, b.sends.Inputs, 2)
	require.Equal(t, []string{"a redrive of group g on commands"}, running, "in flight while it runs")
	require.Empty(t, b.console.InFlight(), "and not after")
}

// A redrive that stops part way says how far it got and how to resume.
func TestARedriveThatFailsPartWaySaysHowFarAndHowToResume(t *testing.T) {
	t.Parallel()
	spy := &redriveSpy{rep: quarantine.RedriveReport{Group: "g", Epoch: 1, Sent: 3, State: quarantine.StateDraining, Parked: 5},
		err: errors.New("send: connection reset")}
	b := setup(t, func(c *console.Config) {
		c.AllowActions = true
		spy.Quarantine = c.Queues[0].Quarantine
		c.Queues[0].Quarantine = spy
	})
	b.hold(t, "g", 5)
	page := b.post(t, "/quarantine/commands/g/redrive", formOf(t, b, "/quarantine/commands/g/redrive"), http.StatusBadGateway)
	msg := testid(t, page, "error-message")
	require.Contains(t, msg, "3 sent under epoch 1 before it stopped")
	require.Contains(t, msg, "connection reset")
	require.Contains(t, msg, "redrive again to resume")
}

// releasedShow is a quarantine whose Show says the hold is released while
// messages are still listed as parked (a release read between the
// hold's and the messages' reads).
type releasedShow struct{ console.Quarantine }

func (s releasedShow) Show(ctx context.Context, group string, status quarantine.Status, limit int) (quarantine.HoldRecord, []quarantine.Parked, error) {
	h, items, err := s.Quarantine.Show(ctx, group, status, limit)
	h.State = quarantine.StateReleased
	return h, items, err
}

// A released group offers no action, even with messages listed.
func TestAReleasedGroupOffersNoAction(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *console.Config) {
		c.AllowActions = true
		c.Queues[0].Quarantine = releasedShow{c.Queues[0].Quarantine}
	})
	b.hold(t, "g", 2)
	page := b.get(t, "/quarantine/commands/g", http.StatusOK)
	require.Equal(t, "released", testid(t, page, "hold-state"))
	require.Contains(t, page, `data-testid="parked-row"`)
	require.NotContains(t, page, "redrive-button")
	require.NotContains(t, page, "discard-button")
	require.NotContains(t, page, "discard-one-button")
}
