package projection

import (
	"errors"
	"fmt"
)

// Error categories, matched with errors.Is.
var (
	// ErrGap: an event arrived whose predecessor has not been applied to the
	// totals. Nothing was counted; the message must be received again (or the
	// projection recovered from the job). See GapError.
	ErrGap = errors.New("gap in the job's versions")
	// ErrNotFound: no view has the job id.
	ErrNotFound = errors.New("view not found")
	// ErrInvalid: the input can never be projected (a bad id, a version below
	// what the store accepts); nothing was written.
	ErrInvalid = errors.New("invalid input")
)

// GapError is returned when version Version of a job arrives while the
// totals have applied only up to Cursor (< Version-1). It matches ErrGap.
type GapError struct {
	JobID   string
	Cursor  int64 // the last version whose delta was applied; 0 if none
	Version int64 // the version that arrived
}

func (e *GapError) Error() string {
	return fmt.Sprintf("projection: job %s: %v: version %d arrived with the cursor at %d; waiting for version %d",
		e.JobID, ErrGap, e.Version, e.Cursor, e.Cursor+1)
}

// Unwrap lets errors.Is(err, ErrGap) match.
func (e *GapError) Unwrap() error { return ErrGap }
