package candidate

import (
	"errors"
	"fmt"
	"time"
)

// Defaults and limits of the options.
const (
	// MaxSize is the largest object a single PutObject can store: 5 GiB.
	MaxSize int64 = 5 << 30
	// DefaultConflictAttempts is how many times a write is sent in all when
	// S3 answers 409 ConditionalRequestConflict.
	DefaultConflictAttempts = 5
	// DefaultConflictBackoff is the wait before the first retry after a
	// 409; each further retry waits about twice as long, at most
	// maxConflictBackoff, and the upper half of each wait is random
	// (internal/base/backoff).
	DefaultConflictBackoff = 50 * time.Millisecond
	maxConflictBackoff     = 2 * time.Second
	spoolBufferSize        = 64 << 10
)

// Option configures a Store.
type Option func(*config)

type config struct {
	spool            Spool
	spoolBudget      int64 // 0: no bound
	maxSize          int64
	conflictAttempts int
	conflictBackoff  time.Duration
}

func defaultConfig() config {
	return config{
		spool:            dirSpool{},
		maxSize:          MaxSize,
		conflictAttempts: DefaultConflictAttempts,
		conflictBackoff:  DefaultConflictBackoff,
	}
}

// Validate reports the first setting that cannot work.
func (c *config) Validate() error {
	switch {
	case c.maxSize < 1 || c.maxSize > MaxSize:
		return fmt.Errorf("candidate: max size %d is outside 1..%d (a single PutObject)", c.maxSize, MaxSize)
	case c.spool == nil:
		return errors.New("candidate: a nil spool")
	case c.spoolBudget != 0:
		return CheckSpoolBudget(c.maxSize, c.spoolBudget)
	case c.conflictAttempts < 1:
		return fmt.Errorf("candidate: %d conflict attempts; at least 1 (the first try) is needed", c.conflictAttempts)
	case c.conflictBackoff < 0:
		return fmt.Errorf("candidate: conflict backoff %v is negative", c.conflictBackoff)
	}
	return nil
}

// WithSpoolDir sets the directory of the temporary spool files (default:
// os.TempDir(), which is /tmp on Lambda). It must have room for the
// spool budget (WithSpoolBudget), or without one for every candidate being
// written at the same time.
func WithSpoolDir(dir string) Option {
	return func(c *config) { c.spool = dirSpool{dir: dir} }
}

// WithSpool makes the spool files with sp instead of in a directory: a
// test's spool of a fixed size (candidatetest.Disk). It replaces
// WithSpoolDir.
func WithSpool(sp Spool) Option {
	return func(c *config) { c.spool = sp }
}

// WithMaxSize lowers the largest candidate a write accepts (default and
// upper bound: MaxSize). A Write that would exceed it fails with
// ErrTooLarge before the spool grows further. It is also each
// reservation's size in the spool budget (WithSpoolBudget).
func WithMaxSize(n int64) Option {
	return func(c *config) { c.maxSize = n }
}

// WithSpoolBudget bounds the bytes the store's writers hold in the spool at
// once to n (default 0: no bound): at most n / max size candidates are
// spooled at a time, each in a reservation of the max size (Reserve), and
// the next waits for one of them to be closed. n must be at least the max
// size (CheckSpoolBudget), and the spool must have n bytes free: on Lambda,
// what the function's ephemeral storage leaves for it.
func WithSpoolBudget(n int64) Option {
	return func(c *config) { c.spoolBudget = n }
}

// CheckSpoolBudget reports whether candidates of up to maxSize bytes can be
// spooled in a budget of budget bytes: a candidate larger than the whole
// budget could never be written, so such a bound is a configuration error,
// never a wait.
func CheckSpoolBudget(maxSize, budget int64) error {
	switch {
	case budget < 1:
		return fmt.Errorf("candidate: spool budget %d is not positive", budget)
	case maxSize > budget:
		return fmt.Errorf("candidate: max size %d is above the spool budget %d: %w", maxSize, budget, ErrBudgetTooSmall)
	}
	return nil
}

// WithConflictRetry sets how often a write is sent in all when S3 answers
// 409 ConditionalRequestConflict (default DefaultConflictAttempts), and the
// wait before the first retry (default DefaultConflictBackoff).
func WithConflictRetry(attempts int, backoff time.Duration) Option {
	return func(c *config) {
		c.conflictAttempts = attempts
		c.conflictBackoff = backoff
	}
}
