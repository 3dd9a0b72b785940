package projection

import (
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Error categories, matched with errors.Is.
var (
	// ErrInvalidConfig: a constructor's configuration cannot work; the
	// message names the field.
	ErrInvalidConfig = errors.New("projection: invalid configuration")
	// ErrGap: an event arrived whose predecessor has not been applied to the
	// totals. Nothing was counted; the message must be received again (or the
	// projection recovered from the job). See GapError.
	ErrGap = errors.New("gap in the job's versions")
	// ErrMismatch: an event disagrees with the job's cursor: its delta
	// does not lead from the cursor's progress to its own, or it repeats
	// the cursor's version with another progress or status, or it follows
	// a final status. One of the two is not the job's; nothing was
	// counted. See MismatchError.
	ErrMismatch = errors.New("event disagrees with the job's cursor")
	// ErrKeyMismatch: a Kafka record's key is not its event's job (a null
	// key included). The key picks the record's partition and its lane,
	// so the event would be projected beside its job's own events, out of
	// their order; HandleRecord refuses it for good. (Handle does not
	// check an SQS message's group.)
	ErrKeyMismatch = errors.New("projection: record key is not the event's job")
	// ErrNotFound: no view has the job id.
	ErrNotFound = errors.New("view not found")
	// ErrInvalid: the input can never be projected (a bad id, a version below
	// what the store accepts); nothing was written.
	ErrInvalid = errors.New("invalid input")
)

// GapError is returned when version Version of a job arrives while the
// totals have applied only up to Cursor (< Version-1), and the event does
// not start from the cursor's state: a version between the two that adds
// to the totals has not been counted. It matches ErrGap.
type GapError struct {
	JobID   string
	Cursor  int64 // the last version whose delta was applied; 0 if none
	Version int64 // the version that arrived
}

func (e *GapError) Error() string {
	return fmt.Sprintf("projection: job %s: %v: version %d arrived with the cursor at %d; waiting for a version from %d to %d that adds",
		e.JobID, ErrGap, e.Version, e.Cursor, e.Cursor+1, e.Version-1)
}

// Unwrap lets errors.Is(err, ErrGap) match.
func (e *GapError) Unwrap() error { return ErrGap }

// MismatchError is returned when an event of version Version, progress
// Progress, delta Delta and status Status disagrees with the job's cursor
// Cursor (see ErrMismatch), which it matches. Only the job item can tell
// which of the two is the job's: the projector recovers from it.
type MismatchError struct {
	JobID    string
	Version  int64
	Progress int64
	Delta    int64
	Status   jobs.Status
	Cursor   Cursor
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("projection: job %s: %v: version %d (%s, progress %d, delta %d) against the cursor at version %d (%s, progress %d)",
		e.JobID, ErrMismatch, e.Version, e.Status, e.Progress, e.Delta, e.Cursor.Version, e.Cursor.Status, e.Cursor.Progress)
}

// Unwrap lets errors.Is(err, ErrMismatch) match.
func (e *MismatchError) Unwrap() error { return ErrMismatch }
