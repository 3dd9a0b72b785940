package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Defaults of the Config.
const (
	// DefaultDeadlineMargin is how much time must remain before the
	// invocation deadline for a record to start.
	DefaultDeadlineMargin = lanes.DefaultDeadlineMargin
	// DefaultResponseReserve is how long before the invocation deadline the
	// handlers' context expires, so that Process can still return its
	// partial response in time. If Lambda times the invocation out instead,
	// the whole batch is delivered again, including what had completed.
	DefaultResponseReserve = lanes.DefaultResponseReserve
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the field.
var ErrInvalidConfig = errors.New("kafka: invalid configuration")

// Handler processes one record. It returns nil when the record is done, an
// error to have it (and every later offset of its partition) delivered
// again, or Permanent(err) when a delivery again cannot help.
type Handler func(ctx context.Context, rec Record) error

// DeadLetter takes the records that failed with a permanent error (a
// topic, a queue, a table of its own). Send returns nil once the record
// and its cause are stored: the record then counts as completed and its
// lane goes on. An error fails the record as the handler's would have.
// Send may be called again for the same record (a redelivery after the
// invocation failed or timed out), so a store drops a repeat by the
// record's topic, partition and offset.
type DeadLetter interface {
	Send(ctx context.Context, rec Record, cause error) error
}

// DeadLetterFunc is a func as a DeadLetter.
type DeadLetterFunc func(ctx context.Context, rec Record, cause error) error

// Send calls f.
func (f DeadLetterFunc) Send(ctx context.Context, rec Record, cause error) error {
	return f(ctx, rec, cause)
}

// Config holds every setting of a Processor. Only Handler is required; the
// zero value of every other field means its default.
type Config struct {
	// Handler processes each record. Required.
	Handler Handler

	// LaneKey gives a record's lane key: records of one partition with the
	// same key run one after another in offset order, and different keys
	// in parallel. ok false puts the record in its partition's null-key
	// lane, with every record of that partition that has no key. A key
	// function that panics (or calls runtime.Goexit) fails its record and
	// every later record of its partition, which may share its lane (see
	// the package documentation). Default nil: the record's Key, the
	// null-key lane for a nil (null or empty) Key.
	LaneKey func(rec Record) (key string, ok bool)

	// Concurrency bounds how many lanes run at once. Default 0: every lane
	// of the batch at once. When the bound is smaller than the number of
	// lanes, longer lanes start first. It must not be negative.
	Concurrency int

	// StopOnFirstFailure: after the first failure no further record starts
	// anywhere in the batch, and every record not completed is reported.
	// Handlers already running finish, and those that succeed count as
	// completed. Default false: a failure stops only the rest of its own
	// lane.
	StopOnFirstFailure bool

	// DeadlineMargin is how much time must remain before the context's
	// deadline for a record to start. Default (0): DefaultDeadlineMargin.
	// It must not be negative.
	DeadlineMargin time.Duration

	// ResponseReserve is how long before the context's deadline the
	// handlers' context expires. Default (0): DefaultResponseReserve. It
	// must not be negative, nor exceed the deadline margin: a record could
	// then start with an expired context. With a Quarantine, counting the
	// failure of a record whose handler ran into that expiry
	// (Quarantine.Failed) may take the first half of the reserve.
	ResponseReserve time.Duration

	// DeadLetter takes the records that failed with a permanent error
	// (Permanent), which then count as completed, so that their lane and
	// their partition's commit go on. Default nil: a permanent error is an
	// ordinary failure, and the mapping's MaximumRetryAttempts and
	// on-failure destination decide. It excludes Quarantine.
	DeadLetter DeadLetter

	// Quarantine parks, instead of failing, a record that fails
	// permanently, that failed as often as QuarantineThreshold allows, or
	// that carries another partition count (PartitionCount), and every
	// later record of its key, in order, until an operator redrives them
	// (see the package documentation). Parked records count as completed,
	// so the partition's commit moves past them. Records without a lane key
	// (the null-key lanes) are not quarantined. Default nil: no
	// quarantine. It excludes DeadLetter.
	Quarantine Quarantine
	// QuarantineThreshold is the attempt at which a record of a key is
	// parked before it runs: a record whose QuarantineThreshold-1 attempts
	// failed (Quarantine.Failed counts them) is parked at once after the
	// last of them, and its partition goes on. Required with Quarantine (no
	// default), and only with it: at least MinQuarantineThreshold. The
	// processor cannot read the event source mapping, so the upper bound
	// is the deployment's to keep: at most the mapping's
	// MaximumRetryAttempts + 1 (the invocations Lambda makes of a record),
	// so that the mapping gives no record that fails in its handler up to
	// its on-failure destination before the quarantine parks it (the
	// (threshold-1)th failure parks it, at the latest in invocation
	// MaximumRetryAttempts, and the last invocation parks it before it
	// runs if that park failed). template-kafka.yaml is stricter: its
	// thresholds are at most MaximumRetryAttempts, one invocation spare
	// for a second failed park or an attempt not counted, and its tests
	// (internal/dev/samtemplate) hold that.
	QuarantineThreshold int

	// PartitionCount is the partition count of the topics the processor
	// consumes. A record carrying another count in its
	// PartitionCountHeader (the relay's producer writes the count it
	// partitioned over) may have had its key moved to another partition
	// while earlier records of the key wait in the old one: it does not
	// run. With a Quarantine its key is held (ErrPartitionCountChanged),
	// without one it fails. Records without the header are not checked.
	// Default 0: no check. It must not be negative.
	PartitionCount int

	// Now reads the time: when a record may still start before the
	// context's deadline, and the durations the processor logs and
	// reports. The clock may step back, as the wall clock can. Default nil:
	// time.Now.
	Now func() time.Time

	// Logger logs one line per record (topic, partition, offset, outcome,
	// duration, wait) and one per batch. Successes are logged at Debug,
	// failures at Warn, panics and invalid batches at Error. A logger that
	// panics on a record's line fails that record, as a panicking handler
	// would; a panic anywhere else in it is contained. Default nil: no
	// logging.
	Logger *slog.Logger

	// Metrics is called once per batch, after every handler has returned
	// and before Process returns, with the outcome and timings of each
	// record. A panic in it is recovered and logged. It delays the
	// response, so it must return quickly: when the handlers have used up
	// the time before the response reserve, it is skipped (and a warning
	// logged) rather than risk a Lambda timeout, which would deliver the
	// whole batch again. Default nil: no hook.
	Metrics func(BatchMetrics)
}

// Validate reports the first setting that cannot work, as an error
// wrapping ErrInvalidConfig that names the field.
func (c Config) Validate() error {
	if c.Handler == nil {
		return fmt.Errorf("%w: Handler is nil", ErrInvalidConfig)
	}
	if err := c.lanes().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.DeadLetter != nil && c.Quarantine != nil:
		return fmt.Errorf("%w: DeadLetter and Quarantine exclude each other: a permanent failure either parks its key or moves on without it",
			ErrInvalidConfig)
	case c.Quarantine == nil && c.QuarantineThreshold != 0:
		return fmt.Errorf("%w: QuarantineThreshold %d without a Quarantine", ErrInvalidConfig, c.QuarantineThreshold)
	case c.Quarantine != nil && c.QuarantineThreshold < MinQuarantineThreshold:
		return fmt.Errorf("%w: QuarantineThreshold %d: it must be at least %d (a record is delivered once before it can fail)",
			ErrInvalidConfig, c.QuarantineThreshold, MinQuarantineThreshold)
	case c.PartitionCount < 0:
		return fmt.Errorf("%w: PartitionCount %d is negative (0 means no check)", ErrInvalidConfig, c.PartitionCount)
	}
	return nil
}

// lanes is the lane engine's part of c: pkg/lanes checks it and fills in
// its defaults.
func (c Config) lanes() lanes.Config {
	return lanes.Config{
		Concurrency:        c.Concurrency,
		DeadlineMargin:     c.DeadlineMargin,
		ResponseReserve:    c.ResponseReserve,
		Now:                c.Now,
		Logger:             c.Logger,
		Permanent:          IsPermanent,
		StopOnFirstFailure: c.StopOnFirstFailure,
		Name:               "kafka",
		Item:               "record",
	}
}
