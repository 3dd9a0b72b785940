package candidate

import (
	"errors"
	"fmt"
	"time"
)

// Defaults and limits of the Config.
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

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the field.
var ErrInvalidConfig = errors.New("candidate: invalid configuration")

// Config holds every setting of a Store. Client and Bucket are required;
// the zero value of every other field means its default.
type Config struct {
	// Client is the S3 client; usually an *s3.Client. Required.
	Client S3API
	// Bucket is the bucket the candidates are in. Required.
	Bucket string

	// SpoolDir is the directory of the temporary spool files. Default "":
	// os.TempDir(), which is /tmp on Lambda. It must have room for the
	// SpoolBudget, or without one for every candidate being written at the
	// same time. It excludes Spool.
	SpoolDir string
	// Spool makes the spool files instead of a directory: a test's spool
	// of a fixed size (candidatetest.Disk). Default nil: files in
	// SpoolDir. It excludes SpoolDir.
	Spool Spool

	// MaxSize lowers the largest candidate a write accepts. Default (0):
	// MaxSize, which is also its upper bound; it must not be negative. A
	// Write that would exceed it fails with ErrTooLarge before the spool
	// grows further. It is also each reservation's size in the SpoolBudget.
	MaxSize int64
	// SpoolBudget bounds the bytes the store's writers hold in the spool
	// at once. Default 0: no bound. With a budget, at most SpoolBudget /
	// MaxSize candidates are spooled at a time, each in a reservation of
	// the max size (Reserve), and the next waits for one of them to be
	// closed. It must be at least the max size (CheckSpoolBudget), and the
	// spool must have that many bytes free: on Lambda, what the function's
	// ephemeral storage leaves for it.
	SpoolBudget int64

	// ConflictAttempts is how often a write is sent in all when S3 answers
	// 409 ConditionalRequestConflict. Default (0): DefaultConflictAttempts;
	// 1 sends it once, without a retry. It must not be negative.
	ConflictAttempts int
	// ConflictBackoff is the wait before the first retry after a 409.
	// Default (0): DefaultConflictBackoff. It must not be negative; a test
	// that wants no wait gives a nanosecond.
	ConflictBackoff time.Duration
}

// Validate reports the first setting that cannot work, as an error
// wrapping ErrInvalidConfig that names the field.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case c.Bucket == "":
		return fmt.Errorf("%w: Bucket is empty", ErrInvalidConfig)
	case c.SpoolDir != "" && c.Spool != nil:
		return fmt.Errorf("%w: SpoolDir %q and Spool exclude each other", ErrInvalidConfig, c.SpoolDir)
	case c.MaxSize < 0 || c.MaxSize > MaxSize:
		return fmt.Errorf("%w: MaxSize %d is outside 1..%d (a single PutObject; 0 means %[3]d)", ErrInvalidConfig, c.MaxSize, MaxSize)
	case c.ConflictAttempts < 0:
		return fmt.Errorf("%w: ConflictAttempts %d is negative (0 means %d)", ErrInvalidConfig, c.ConflictAttempts, DefaultConflictAttempts)
	case c.ConflictBackoff < 0:
		return fmt.Errorf("%w: ConflictBackoff %v is negative", ErrInvalidConfig, c.ConflictBackoff)
	case c.SpoolBudget != 0:
		if err := CheckSpoolBudget(c.withDefaults().MaxSize, c.SpoolBudget); err != nil {
			return fmt.Errorf("%w: SpoolBudget: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// withDefaults returns c with each zero optional field set to its default.
func (c Config) withDefaults() Config {
	if c.Spool == nil {
		c.Spool = dirSpool{dir: c.SpoolDir}
	}
	if c.MaxSize == 0 {
		c.MaxSize = MaxSize
	}
	if c.ConflictAttempts == 0 {
		c.ConflictAttempts = DefaultConflictAttempts
	}
	if c.ConflictBackoff == 0 {
		c.ConflictBackoff = DefaultConflictBackoff
	}
	return c
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
