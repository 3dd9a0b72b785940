package nudge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("nudge: invalid configuration")

// PayloadType is a nudge's type field: what tells the relay's handler a
// nudge from EventBridge's scheduled event.
const PayloadType = "fifoworker.outbox.nudge"

// Payload is the event a nudge sends to the relay function.
type Payload struct {
	Type string `json:"type"` // PayloadType
	// FirstCommit is when the first commit the nudge stands for asked for
	// it: the relay logs its delay from there.
	FirstCommit time.Time `json:"first_commit_at"`
	// Commits is how many commits the nudge stands for (at least 1).
	Commits int `json:"commits"`
}

// Nudger is what a writer calls after each commit that wrote an outbox
// row. It never fails the writer's work: the commit is done, and the
// relay's schedule publishes the row if no nudge arrives. Its error says
// only that this nudge was not sent.
type Nudger interface {
	Nudge(ctx context.Context) error
}

// Sender sends one nudge (Lambda is the deployed one).
type Sender interface {
	Send(ctx context.Context, p Payload) error
}

// Defaults of CoalescerConfig.
const (
	DefaultInterval = 250 * time.Millisecond
	DefaultTimeout  = time.Second
)

// CoalescerConfig configures a Coalescer.
type CoalescerConfig struct {
	// Sender sends the nudges. Required.
	Sender Sender
	// Interval is the least time between two nudges a Nudge call sends: a
	// burst of commits sends one nudge per Interval, and the commits in
	// between are counted into the next nudge (which Flush sends at the
	// latest). Default (0): 250 ms.
	Interval time.Duration
	// Timeout bounds one send, so that a slow Lambda API holds a writer at
	// most this long. Default (0): 1 s.
	Timeout time.Duration
	// Now is the clock. Default (nil): time.Now.
	Now func() time.Time
	// Logger logs a nudge that could not be sent. Default (nil): nothing
	// is logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c CoalescerConfig) Validate() error {
	switch {
	case c.Sender == nil:
		return fmt.Errorf("%w: Sender is nil", ErrInvalidConfig)
	case c.Interval < 0:
		return fmt.Errorf("%w: Interval %v is negative", ErrInvalidConfig, c.Interval)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v is negative", ErrInvalidConfig, c.Timeout)
	}
	return nil
}

// Coalescer is a Nudger that sends at most one nudge per Interval from its
// Nudge calls: the first commit of a burst nudges at once (the relay's
// Drain then publishes what commits until it finds the outbox empty), the
// others are counted and go with the next nudge, sent by the first Nudge
// after the Interval or by Flush. It starts no goroutine and no timer, so
// nothing of it outlives a Lambda invocation: a writer's handler calls
// Flush before it returns, so that no commit of the invocation waits for
// the schedule. Safe for concurrent use.
type Coalescer struct {
	sender   Sender
	interval time.Duration
	timeout  time.Duration
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	last    time.Time // when the last nudge was sent (its start)
	pending int       // commits since then that no nudge stands for
	first   time.Time // the first of them
}

var _ Nudger = (*Coalescer)(nil)

// NewCoalescer returns a Coalescer, or an error wrapping ErrInvalidConfig.
func NewCoalescer(cfg CoalescerConfig) (*Coalescer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coalescer{sender: cfg.Sender, interval: cfg.Interval, timeout: cfg.Timeout, now: cfg.Now, log: cfg.Logger}
	if c.interval == 0 {
		c.interval = DefaultInterval
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Nudge counts a commit and sends a nudge for it and the commits counted
// before, unless a nudge was sent less than Interval ago.
func (c *Coalescer) Nudge(ctx context.Context) error {
	c.mu.Lock()
	now := c.now()
	if c.pending == 0 {
		c.first = now
	}
	c.pending++
	if !c.last.IsZero() && now.Sub(c.last) < c.interval {
		c.mu.Unlock()
		return nil
	}
	return c.sendLocked(ctx, now)
}

// Flush sends a nudge for the commits counted since the last one, if any,
// whenever the last was sent.
func (c *Coalescer) Flush(ctx context.Context) error {
	c.mu.Lock()
	if c.pending == 0 {
		c.mu.Unlock()
		return nil
	}
	return c.sendLocked(ctx, c.now())
}

// sendLocked sends the pending commits' nudge; c.mu is held and released.
// A nudge that fails puts its commits back, for the next.
func (c *Coalescer) sendLocked(ctx context.Context, now time.Time) error {
	p := Payload{Type: PayloadType, FirstCommit: c.first, Commits: c.pending}
	c.pending, c.last = 0, now
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := c.sender.Send(ctx, p)
	if err == nil {
		return nil
	}
	c.mu.Lock()
	if c.pending == 0 || p.FirstCommit.Before(c.first) {
		c.first = p.FirstCommit
	}
	c.pending += p.Commits
	c.mu.Unlock()
	c.log.Warn("nudge: not sent; the relay's schedule publishes the commits", "commits", p.Commits, "error", err)
	return fmt.Errorf("nudge: send: %w", err)
}
