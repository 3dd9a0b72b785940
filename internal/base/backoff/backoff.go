// Package backoff is the one retry wait of the module: a base doubled per
// retry up to a cap, with the upper half random so that callers that collided
// once do not collide again in step, and a sleep that ends with its context.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay returns the wait before the given retry (1 for the first): base
// doubled retry-1 times, at most max, of which the upper half is random.
// A base of 0 or less gives 0.
func Delay(base, max time.Duration, retry int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < retry && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d, or until ctx ends, whichever comes first, and returns
// ctx.Err() in the second case. A d of 0 or less returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
