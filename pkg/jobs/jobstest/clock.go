package jobstest

import (
	"sync"
	"time"
)

// Start is the time a Clock starts at unless told otherwise: the seed
// article's date.
var Start = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

// Clock is a controllable clock, safe for concurrent use. Pass its Now as
// jobs.Config's Now.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t, which must not be in its past: time never
// goes back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic("jobstest: clock set backwards")
	}
	c.now = t
}
