package fifo

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultDeadlineMargin is how much time must remain before the
	// invocation deadline for a message to start.
	DefaultDeadlineMargin = time.Second
	// DefaultResponseReserve is how long before the invocation deadline the
	// handlers' context expires, so that Process can still return its
	// partial response in time. If Lambda times the invocation out instead,
	// the whole batch is received again, including what had succeeded.
	DefaultResponseReserve = 200 * time.Millisecond
)

// Option configures a Processor.
type Option func(*config)

type config struct {
	concurrency     int // lanes run at once; 0 means every lane of the batch
	stopOnFirst     bool
	deadlineMargin  time.Duration
	responseReserve time.Duration
	deadLetter      *deadLetter
	quarantine      *quarantine
	logger          *slog.Logger
	metrics         func(BatchMetrics)
	// now reads the clock: time.Now, or a test's clock that can step back
	// as the wall clock can (export_test.go).
	now func() time.Time
}

func defaultConfig() config {
	return config{
		deadlineMargin:  DefaultDeadlineMargin,
		responseReserve: DefaultResponseReserve,
		now:             time.Now,
	}
}

// Validate reports the first setting that cannot work.
func (c *config) Validate() error {
	switch {
	case c.concurrency < 0:
		return fmt.Errorf("fifo: concurrency %d is negative (0 means every lane)", c.concurrency)
	case c.deadlineMargin < 0:
		return fmt.Errorf("fifo: deadline margin %v is negative", c.deadlineMargin)
	case c.responseReserve < 0:
		return fmt.Errorf("fifo: response reserve %v is negative", c.responseReserve)
	case c.responseReserve > c.deadlineMargin:
		return fmt.Errorf("fifo: response reserve %v exceeds the deadline margin %v: a message could start with an expired context",
			c.responseReserve, c.deadlineMargin)
	}
	if c.deadLetter != nil && c.quarantine != nil {
		return errors.New("fifo: a quarantine and a dead-letter queue exclude each other: a permanent failure either parks its group or moves on without it")
	}
	if c.deadLetter != nil {
		return c.deadLetter.validate()
	}
	if c.quarantine != nil {
		return c.quarantine.validate()
	}
	return nil
}

// WithConcurrency bounds how many lanes (message groups) run at once.
// The default, 0, runs every lane of the batch at once. When the bound is
// smaller than the number of lanes, longer lanes start first.
func WithConcurrency(n int) Option {
	return func(c *config) { c.concurrency = n }
}

// WithStopOnFirstFailure switches to the mode AWS documents for FIFO queues:
// after the first failure no further message starts anywhere in the batch,
// and every message not completed is reported. Handlers already running
// finish, and those that succeed are acknowledged.
func WithStopOnFirstFailure() Option {
	return func(c *config) { c.stopOnFirst = true }
}

// WithDeadlineMargin sets how much time must remain before the context's
// deadline for a message to start (default DefaultDeadlineMargin).
func WithDeadlineMargin(d time.Duration) Option {
	return func(c *config) { c.deadlineMargin = d }
}

// WithResponseReserve sets how long before the context's deadline the
// handlers' context expires (default DefaultResponseReserve). It must not
// exceed the deadline margin.
func WithResponseReserve(d time.Duration) Option {
	return func(c *config) { c.responseReserve = d }
}

// WithDeadLetterQueue sends messages that failed with a permanent error to
// the queue at queueURL (a FIFO queue for a FIFO source), then acknowledges
// them so that their lane continues. Without it, a permanent error is
// reported like any other failure and the redrive policy moves the message
// after maxReceiveCount receives.
func WithDeadLetterQueue(client DeadLetterSender, queueURL string) Option {
	return func(c *config) { c.deadLetter = &deadLetter{client: client, queueURL: queueURL} }
}

// WithClock makes the processor read the time from now instead of
// time.Now: when a message may still start before the context's deadline,
// and the durations it logs and reports. A simulation gives it its own
// clock, so that the deadline of a context it made from that clock is
// judged in the same time; the clock may step back, as the wall clock can.
// Nil means time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			now = time.Now
		}
		c.now = now
	}
}

// WithLogger logs one record per message (message_id, group_id,
// receive_count, duration, outcome) and one per batch. Successes are logged
// at Debug, failures at Warn, panics and invalid batches at Error. A logger
// that panics on a message's line fails that message, as a panicking
// handler would; a panic anywhere else in it is contained.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithMetrics calls hook once per batch, after every handler has returned
// and before Process returns, with the outcome and timings of each message.
// The hook never runs on a lane's path, so a slow hook cannot delay a
// message; a panic in it is recovered and logged. It does delay the
// response, so it must return quickly (count, or buffer an embedded-metric
// line): when the handlers have used up the time before the response
// reserve, the hook is skipped (and a warning logged) rather than risk a
// Lambda timeout, which would make the whole batch be received again.
func WithMetrics(hook func(BatchMetrics)) Option {
	return func(c *config) { c.metrics = hook }
}
