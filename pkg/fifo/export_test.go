package fifo

import "time"

// WithClock makes the processor read time from now instead of time.Now,
// so that a test can move the clock, backwards too.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}
