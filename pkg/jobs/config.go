package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults of the Config.
const (
	// DefaultMaxGenerations is the default RecoveryPolicy.MaxGenerations.
	// The commands queue's maxReceiveCount must be at least MaxGenerations
	// + 1 plus a margin for receives that do not claim, and even then a
	// command can reach the dead-letter queue first: see "Generations and
	// the commands queue" in the package documentation. The template's
	// checks read this constant.
	DefaultMaxGenerations = 3
	// DefaultRetention is how long a final job stays in the table.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultIntentRetention is how long an intent is remembered.
	DefaultIntentRetention = 30 * 24 * time.Hour
	// DefaultClockSkew is the margin LeaseEnd adds to an invocation deadline,
	// and the store's margin (Config.ClockSkew), which it allows twice beyond
	// MaxLambdaTimeout.
	DefaultClockSkew = 5 * time.Second
)

// Bounds of a lease.
const (
	// MaxLambdaTimeout is the longest a Lambda invocation runs. A lease ends
	// at most this long plus twice the clock-skew margin after the store's
	// now: a longer one is refused (ErrInvalid), since no invocation
	// outlives it and a job held by it could not be recovered by any
	// takeover. Twice, so that the bound is strictly beyond any lease
	// LeaseEnd gives with the same margin: that lease ends one margin after
	// a deadline set by the Lambda service's clock, up to MaxLambdaTimeout
	// after the invocation started, while the store reads the host's clock
	// at the claim. With a single margin the only slack would be the time
	// from the invocation's start to the claim, which a host clock running
	// behind the service's eats: a 15-minute function's claim would be
	// refused. The second margin absorbs up to that much offset.
	MaxLambdaTimeout = 15 * time.Minute
	// MaxClockSkew bounds the clock-skew margin (Config.ClockSkew, LeaseEnd).
	// Lambda hosts keep time with the Amazon Time Sync Service, far closer
	// than a second; the 5-second default covers that and requests in
	// flight. A margin of more than a minute is no longer about skew: it
	// delays every takeover of a stalled job by as much, and a command
	// redelivered within it spends a receive on "lease held".
	MaxClockSkew = time.Minute
)

// RecoveryPolicy decides what a claim does with a running job whose lease
// has expired.
type RecoveryPolicy struct {
	// MaxGenerations is how many generations a job may have. A claim that
	// finds generation MaxGenerations expired fails the job (code
	// CodeRecoveryExhausted) in the same conditional write that would have
	// taken it over. Zero means DefaultMaxGenerations.
	MaxGenerations int64
}

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("jobs: invalid configuration")

// Config holds the settings both stores share. Its zero value is the
// system clock and the defaults (DefaultMaxGenerations, DefaultRetention,
// DefaultIntentRetention, DefaultClockSkew).
type Config struct {
	// Now is the clock the store reads "now" from: lease expiry, the item's
	// timestamps and its TTL. Tests inject a controllable one. Default
	// (nil): time.Now.
	Now func() time.Time
	// Recovery is the recovery policy for expired leases. Default (zero
	// MaxGenerations): DefaultMaxGenerations; a negative MaxGenerations is
	// invalid.
	Recovery RecoveryPolicy
	// Retention is how long a final job is kept: its expires_at (TTL) is the
	// time it ended plus Retention. Default (zero): DefaultRetention; a
	// negative one is invalid.
	Retention time.Duration
	// IntentRetention is how long an intent marker is kept after creation.
	// After that, and after the job's own item is gone (see the package
	// documentation), a retried intent creates a new job; with a derived job
	// id the job's item answers for the intent as long as it exists.
	// Default (zero): DefaultIntentRetention; a negative one is invalid.
	IntentRetention time.Duration
	// ClockSkew is the clock-skew margin the store allows, twice, beyond
	// MaxLambdaTimeout: a claim or renewal may ask for a lease ending at
	// most MaxLambdaTimeout + 2*ClockSkew after now (see MaxLambdaTimeout
	// for why twice). Use the same margin, or a smaller one, with LeaseEnd.
	// Default (zero): DefaultClockSkew; it must not be negative nor exceed
	// MaxClockSkew.
	ClockSkew time.Duration
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Recovery.MaxGenerations < 0:
		return fmt.Errorf("%w: Recovery.MaxGenerations %d is negative", ErrInvalidConfig, c.Recovery.MaxGenerations)
	case c.Retention < 0:
		return fmt.Errorf("%w: Retention %v is negative", ErrInvalidConfig, c.Retention)
	case c.IntentRetention < 0:
		return fmt.Errorf("%w: IntentRetention %v is negative", ErrInvalidConfig, c.IntentRetention)
	case c.ClockSkew < 0 || c.ClockSkew > MaxClockSkew:
		return fmt.Errorf("%w: ClockSkew %v is outside 0 to %v", ErrInvalidConfig, c.ClockSkew, MaxClockSkew)
	}
	return nil
}

// config is a valid Config with its defaults filled in: what the stores
// read.
type config struct {
	now             func() time.Time
	recovery        RecoveryPolicy
	retention       time.Duration
	intentRetention time.Duration
	clockSkew       time.Duration
}

// resolve validates c and fills in its defaults.
func (c Config) resolve() (config, error) {
	if err := c.Validate(); err != nil {
		return config{}, err
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return config{
		now:             now,
		recovery:        RecoveryPolicy{MaxGenerations: cmp.Or(c.Recovery.MaxGenerations, DefaultMaxGenerations)},
		retention:       cmp.Or(c.Retention, DefaultRetention),
		intentRetention: cmp.Or(c.IntentRetention, DefaultIntentRetention),
		clockSkew:       cmp.Or(c.ClockSkew, DefaultClockSkew),
	}, nil
}

// leaseLimit is the latest end of a lease granted at now: one margin more
// than LeaseEnd adds, for the offset between the clock that set the
// invocation's deadline and the store's.
func (c *config) leaseLimit(now time.Time) time.Time {
	return now.Add(MaxLambdaTimeout + 2*c.clockSkew)
}

// ErrNoDeadline is returned by LeaseEnd for a context without a deadline.
var ErrNoDeadline = errors.New("jobs: context has no deadline")

// LeaseEnd returns when the lease of an attempt running under ctx ends: the
// invocation deadline plus a clock-skew margin (DefaultClockSkew when skew
// is zero; at most MaxClockSkew). Lambda stops the invocation at its
// deadline, so a takeover after the lease end cannot race a live handler;
// the generation fence still covers requests that were already in flight.
// A store refuses a lease beyond MaxLambdaTimeout plus twice its own margin,
// which leaves room for a host clock up to one margin behind the Lambda
// service's, so skew must not exceed the store's (Config.ClockSkew).
func LeaseEnd(ctx context.Context, skew time.Duration) (time.Time, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return time.Time{}, ErrNoDeadline
	}
	if skew < 0 || skew > MaxClockSkew {
		return time.Time{}, fmt.Errorf("%w: clock skew %v is outside 0 to %v", ErrInvalid, skew, MaxClockSkew)
	}
	if skew == 0 {
		skew = DefaultClockSkew
	}
	return deadline.Add(skew), nil
}
