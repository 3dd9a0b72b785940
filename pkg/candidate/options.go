package candidate

import (
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
	// (internal/backoff).
	DefaultConflictBackoff = 50 * time.Millisecond
	maxConflictBackoff     = 2 * time.Second
	spoolBufferSize        = 64 << 10
)

// Option configures a Store.
type Option func(*config)

type config struct {
	spoolDir         string // "" means os.TempDir()
	maxSize          int64
	conflictAttempts int
	conflictBackoff  time.Duration
}

func defaultConfig() config {
	return config{
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
	case c.conflictAttempts < 1:
		return fmt.Errorf("candidate: %d conflict attempts; at least 1 (the first try) is needed", c.conflictAttempts)
	case c.conflictBackoff < 0:
		return fmt.Errorf("candidate: conflict backoff %v is negative", c.conflictBackoff)
	}
	return nil
}

// WithSpoolDir sets the directory of the temporary spool files (default:
// os.TempDir(), which is /tmp on Lambda). It must have room for the largest
// candidate being written at the same time.
func WithSpoolDir(dir string) Option {
	return func(c *config) { c.spoolDir = dir }
}

// WithMaxSize lowers the largest candidate a write accepts (default and
// upper bound: MaxSize). A Write that would exceed it fails with
// ErrTooLarge before the spool grows further, which protects a small
// ephemeral disk from a runaway task.
func WithMaxSize(n int64) Option {
	return func(c *config) { c.maxSize = n }
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
