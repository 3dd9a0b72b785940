package fifo

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Defaults of the Config.
const (
	// DefaultDeadlineMargin is how much time must remain before the
	// invocation deadline for a message to start.
	DefaultDeadlineMargin = lanes.DefaultDeadlineMargin
	// DefaultResponseReserve is how long before the invocation deadline the
	// handlers' context expires, so that Process can still return its
	// partial response in time. If Lambda times the invocation out instead,
	// the whole batch is received again, including what had succeeded.
	DefaultResponseReserve = lanes.DefaultResponseReserve
	// MinQuarantineThreshold is the smallest Config.QuarantineThreshold: a
	// message is received once before it can fail.
	MinQuarantineThreshold = 2
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the field.
var ErrInvalidConfig = errors.New("fifo: invalid configuration")

// Config holds every setting of a Processor. Only Handler is required; the
// zero value of every other field means its default.
type Config struct {
	// Handler processes each message. Required.
	Handler Handler

	// Concurrency bounds how many lanes (message groups) run at once.
	// Default 0: every lane of the batch at once. When the bound is smaller
	// than the number of lanes, longer lanes start first. It must not be
	// negative.
	Concurrency int

	// StopOnFirstFailure switches to the mode AWS documents for FIFO
	// queues: after the first failure no further message starts anywhere
	// in the batch, and every message not completed is reported. Handlers
	// already running finish, and those that succeed are acknowledged.
	// Default false: a failure stops only the rest of its own lane.
	StopOnFirstFailure bool

	// DeadlineMargin is how much time must remain before the context's
	// deadline for a message to start. Default (0): DefaultDeadlineMargin.
	// It must not be negative.
	DeadlineMargin time.Duration

	// ResponseReserve is how long before the context's deadline the
	// handlers' context expires. Default (0): DefaultResponseReserve. It
	// must not be negative, nor exceed the deadline margin: a message could
	// then start with an expired context.
	ResponseReserve time.Duration

	// DeadLetter sends messages that failed with a permanent error to a
	// queue, then acknowledges them so that their lane continues. Default
	// nil: a permanent error is reported like any other failure, and the
	// queue's redrive policy moves the message after maxReceiveCount
	// receives. It excludes Quarantine.
	DeadLetter *DeadLetterQueue

	// Quarantine parks, instead of failing or dead-lettering, a message
	// that fails permanently or whose ApproximateReceiveCount has reached
	// QuarantineThreshold (before it runs), and every later message of its
	// group, in order, until an operator redrives them (see the package
	// documentation). Messages without a group (standard queues) are not
	// quarantined. Default nil: no quarantine. It excludes DeadLetter.
	Quarantine Quarantine
	// QuarantineThreshold is the receive count at which a message of a
	// group is quarantined before it runs. Required with Quarantine (no
	// default), and only with it: at least MinQuarantineThreshold, and
	// below the queue's maxReceiveCount, so that SQS's own dead-letter
	// queue is left only as the backstop for a quarantine that cannot be
	// written.
	QuarantineThreshold int

	// Now reads the time: when a message may still start before the
	// context's deadline, and the durations the processor logs and
	// reports. A simulation gives it its own clock, so that the deadline of
	// a context it made from that clock is judged in the same time; the
	// clock may step back, as the wall clock can. Default nil: time.Now.
	Now func() time.Time

	// Logger logs one record per message (message_id, group_id,
	// receive_count, duration, outcome) and one per batch. Successes are
	// logged at Debug, failures at Warn, panics and invalid batches at
	// Error. A logger that panics on a message's line fails that message,
	// as a panicking handler would; a panic anywhere else in it is
	// contained. Default nil: no logging.
	Logger *slog.Logger

	// Metrics is called once per batch, after every handler has returned
	// and before Process returns, with the outcome and timings of each
	// message. It never runs on a lane's path, so a slow hook cannot delay
	// a message; a panic in it is recovered and logged. It does delay the
	// response, so it must return quickly (count, or buffer an
	// embedded-metric line): when the handlers have used up the time before
	// the response reserve, the hook is skipped (and a warning logged)
	// rather than risk a Lambda timeout, which would make the whole batch
	// be received again. Default nil: no hook.
	Metrics func(BatchMetrics)
}

// Validate reports the first setting that cannot work, as an error
// wrapping ErrInvalidConfig that names the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Handler == nil:
		return fmt.Errorf("%w: Handler is nil", ErrInvalidConfig)
	case c.Concurrency < 0:
		return fmt.Errorf("%w: Concurrency %d is negative (0 means every lane)", ErrInvalidConfig, c.Concurrency)
	case c.DeadlineMargin < 0:
		return fmt.Errorf("%w: DeadlineMargin %v is negative", ErrInvalidConfig, c.DeadlineMargin)
	case c.ResponseReserve < 0:
		return fmt.Errorf("%w: ResponseReserve %v is negative", ErrInvalidConfig, c.ResponseReserve)
	case c.ResponseReserve > c.DeadlineMargin:
		return fmt.Errorf("%w: ResponseReserve %v exceeds the DeadlineMargin %v: a message could start with an expired context",
			ErrInvalidConfig, c.ResponseReserve, c.DeadlineMargin)
	case c.DeadLetter != nil && c.Quarantine != nil:
		return fmt.Errorf("%w: DeadLetter and Quarantine exclude each other: a permanent failure either parks its group or moves on without it",
			ErrInvalidConfig)
	}
	if c.DeadLetter != nil {
		if err := c.DeadLetter.validate(); err != nil {
			return err
		}
	}
	return c.validateQuarantine()
}

func (c Config) validateQuarantine() error {
	switch {
	case c.Quarantine == nil && c.QuarantineThreshold != 0:
		return fmt.Errorf("%w: QuarantineThreshold %d without a Quarantine", ErrInvalidConfig, c.QuarantineThreshold)
	case c.Quarantine != nil && c.QuarantineThreshold < MinQuarantineThreshold:
		return fmt.Errorf("%w: QuarantineThreshold %d: it must be at least %d (a message is received once before it can fail)",
			ErrInvalidConfig, c.QuarantineThreshold, MinQuarantineThreshold)
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
	return c
}
