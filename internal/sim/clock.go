package sim

import (
	"sync"
	"time"
)

// Epoch is where every run's clock starts. It lies far beyond any wall
// clock, so that the real timers of the contexts whose deadlines are
// simulated times (an invocation's) never fire during a run: every deadline
// is judged by the packages against the simulated clock they were given,
// and nothing in a run reads the wall clock for a decision.
var Epoch = time.Date(2100, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is the simulated time. Only the scheduler and the simulated work
// move it, forward.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{now: Epoch} }

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (never back).
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// AdvanceTo moves the clock forward to t, if t is later.
func (c *Clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}
