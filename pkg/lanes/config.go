package lanes

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the Config.
const (
	// DefaultDeadlineMargin is how much time must remain before the
	// context's deadline for an item to start.
	DefaultDeadlineMargin = time.Second
	// DefaultResponseReserve is how long before the context's deadline the
	// items' context expires, so that the caller can still answer in time.
	DefaultResponseReserve = 200 * time.Millisecond
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the field.
var ErrInvalidConfig = errors.New("lanes: invalid configuration")

// Config holds every setting of an Engine. No field is required; the zero
// value of each means its default.
type Config struct {
	// Concurrency bounds how many lanes run at once. Default 0: every lane
	// at once. When the bound is smaller than the number of lanes, longer
	// lanes start first. It must not be negative.
	Concurrency int

	// DeadlineMargin is how much time must remain before the context's
	// deadline for an item to start (Run.TimeToStart). Default (0):
	// DefaultDeadlineMargin. It must not be negative.
	DeadlineMargin time.Duration

	// ResponseReserve is how long before the context's deadline the
	// context of Run.Context expires. Default (0): DefaultResponseReserve.
	// It must not be negative, nor exceed the deadline margin: an item
	// could then start with an expired context.
	ResponseReserve time.Duration

	// Now reads the time TimeToStart compares with the deadline. The clock
	// may step back, as the wall clock can. Default nil: time.Now.
	Now func() time.Time

	// Logger logs, at Debug, a lane goroutine that ended by
	// runtime.Goexit and was replaced. Default nil: no logging. (A
	// Batch logs with the logger its BatchConfig gives.)
	Logger *slog.Logger

	// Permanent reports whether a handler's error marks a permanent
	// failure (the processor's IsPermanent), which a Batch dead-letters or
	// parks. Default nil: none does.
	Permanent func(err error) bool

	// StopOnFirstFailure: a Batch's first failure stops its run
	// (Run.Stop), so that no further item starts anywhere in the batch.
	// Default false: a failure stops only the rest of its own lane.
	StopOnFirstFailure bool

	// Name starts the messages a Batch logs and the errors it makes
	// ("fifo": "fifo: batch", "fifo: park: ..."). Default "lanes".
	Name string
	// Item is what a Batch calls an item in its log ("message": the line
	// "fifo: message" for each). Default "item".
	Item string
}

// Validate reports the first setting that cannot work, as an error
// wrapping ErrInvalidConfig that names the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Concurrency < 0:
		return fmt.Errorf("%w: Concurrency %d is negative (0 means every lane)", ErrInvalidConfig, c.Concurrency)
	case c.DeadlineMargin < 0:
		return fmt.Errorf("%w: DeadlineMargin %v is negative", ErrInvalidConfig, c.DeadlineMargin)
	case c.ResponseReserve < 0:
		return fmt.Errorf("%w: ResponseReserve %v is negative", ErrInvalidConfig, c.ResponseReserve)
	case c.ResponseReserve > c.DeadlineMargin:
		return fmt.Errorf("%w: ResponseReserve %v exceeds the DeadlineMargin %v: an item could start with an expired context",
			ErrInvalidConfig, c.ResponseReserve, c.DeadlineMargin)
	}
	return nil
}

// withDefaults returns c with each zero optional field set to its default.
func (c Config) withDefaults() Config {
	if c.DeadlineMargin == 0 {
		c.DeadlineMargin = DefaultDeadlineMargin
	}
	if c.ResponseReserve == 0 {
		c.ResponseReserve = DefaultResponseReserve
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Name == "" {
		c.Name = "lanes"
	}
	if c.Item == "" {
		c.Item = "item"
	}
	return c
}
