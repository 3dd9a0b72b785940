package candidate

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidKey is wrapped by every error about a job id, attempt id,
	// generation, extension or object key that is not a candidate's.
	ErrInvalidKey = errors.New("invalid candidate key")

	// ErrExists means the key already holds an object with other content: a
	// second writer for the same attempt, which is a bug, or a replay that
	// produced different bytes. The object in S3 is left as it was. The
	// error is an *ExistsError.
	ErrExists = errors.New("candidate already exists")

	// ErrNotFound means no object exists at the key.
	ErrNotFound = errors.New("candidate not found")

	// ErrChecksumMismatch means an object's content does not match the
	// SHA-256 or size recorded for it, or S3's own checksum of the object
	// contradicts the recorded SHA-256. A Reader reports it as a
	// *ChecksumError.
	ErrChecksumMismatch = errors.New("candidate checksum mismatch")

	// ErrInvalidMetadata means the object at a candidate key lacks the
	// metadata this package writes, or its metadata names another job,
	// generation or attempt than the key: it was not written by Store.
	ErrInvalidMetadata = errors.New("invalid candidate metadata")

	// ErrTooLarge means a write exceeded the store's size limit (MaxSize
	// unless Config.MaxSize lowered it). It is permanent: the same content
	// exceeds the same limit on every try.
	ErrTooLarge = errors.New("candidate too large")

	// ErrSpoolBusy means Reserve's context ended while other reservations
	// held the whole spool budget. Nothing was taken; a later try may find
	// room.
	ErrSpoolBusy = errors.New("no room in the spool budget")

	// ErrBudgetTooSmall is wrapped by CheckSpoolBudget's error for a max
	// size above the spool budget.
	ErrBudgetTooSmall = errors.New("a candidate of the max size cannot fit the spool budget")
)

// ExistsError reports a write refused because the key already holds an
// object that is not identical to the one being written.
type ExistsError struct {
	Key Key
	// SHA256 is the recorded hash of the object in S3, or "" if it could
	// not be read.
	SHA256 string
	// Ours is the hash of the content that was refused.
	Ours string
}

func (e *ExistsError) Error() string {
	existing := e.SHA256
	if existing == "" {
		existing = "unknown"
	}
	return fmt.Sprintf("candidate: put %s: an object already exists (sha256 %s; ours %s)", e.Key, existing, e.Ours)
}

// Unwrap lets errors.Is(err, ErrExists) match.
func (e *ExistsError) Unwrap() error { return ErrExists }

// ChecksumError reports content that does not match its recorded hash.
type ChecksumError struct {
	Key      Key
	Want     string // recorded SHA-256, hex
	Got      string // SHA-256 of what was read, hex; "" if the size was already wrong
	WantSize int64
	GotSize  int64
}

func (e *ChecksumError) Error() string {
	if e.WantSize != e.GotSize {
		return fmt.Sprintf("candidate: read %s: got %d bytes, the recorded size is %d", e.Key, e.GotSize, e.WantSize)
	}
	return fmt.Sprintf("candidate: read %s: content has sha256 %s, the recorded sha256 is %s", e.Key, e.Got, e.Want)
}

// Unwrap lets errors.Is(err, ErrChecksumMismatch) match.
func (e *ChecksumError) Unwrap() error { return ErrChecksumMismatch }
