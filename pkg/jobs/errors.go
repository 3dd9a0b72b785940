package jobs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// Error categories. Every error a Store returns for a refused transition
// matches exactly one of them with errors.Is; the struct types below carry
// the details.
var (
	// ErrNotFound: no job has the id.
	ErrNotFound = errors.New("job not found")
	// ErrStaleGeneration: the caller's generation (or, within it, its
	// version) is no longer current. Nothing was written: the caller must
	// stop, publish nothing and leave its candidate to the sweeper.
	ErrStaleGeneration = errors.New("stale generation")
	// ErrLeaseHeld: another attempt holds a lease that has not expired; a
	// duplicate message does not displace it. See LeaseHeldError.
	ErrLeaseHeld = errors.New("lease held")
	// ErrFinal: the job is completed, failed or cancelled. See FinalError.
	ErrFinal = errors.New("job is final")
	// ErrIntentConflict: the intent already created a job with a different
	// spec.
	ErrIntentConflict = errors.New("intent conflict: the intent already created a job with another spec")
	// ErrJobExists: the requested job id belongs to another intent.
	ErrJobExists = errors.New("job id taken by another intent")
	// ErrInvalid: the request is malformed; nothing was sent
	// (jobitem.ErrInvalid, which jobitem.ValidateID's refusals match too).
	ErrInvalid = jobitem.ErrInvalid
)

// StaleError is returned when a fenced write names a generation or version
// that is no longer current. It matches ErrStaleGeneration.
type StaleError struct {
	Generation int64  // the job's current generation
	Version    int64  // the job's current version
	Status     Status // the job's current status
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("%v: job is at g%d v%d (%s)", ErrStaleGeneration, e.Generation, e.Version, e.Status)
}

// Unwrap lets errors.Is(err, ErrStaleGeneration) match.
func (e *StaleError) Unwrap() error { return ErrStaleGeneration }

// LeaseHeldError is returned by a claim while another attempt's lease is
// live. It matches ErrLeaseHeld.
type LeaseHeldError struct {
	Owner      string    // the holder's attempt id
	Generation int64     // the holder's generation
	Until      time.Time // when the lease expires; a claim after it may take over
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v by %s (g%d) until %s", ErrLeaseHeld, e.Owner, e.Generation, e.Until.Format(time.RFC3339Nano))
}

// Unwrap lets errors.Is(err, ErrLeaseHeld) match.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// FinalError is returned for a transition on a job that has ended. It
// matches ErrFinal.
type FinalError struct {
	Status  Status
	Failure Failure // why it failed or was cancelled, if it did
}

func (e *FinalError) Error() string {
	if e.Failure.Code != "" {
		return fmt.Sprintf("%v: %s (%s)", ErrFinal, e.Status, e.Failure.Code)
	}
	return fmt.Sprintf("%v: %s", ErrFinal, e.Status)
}

// Unwrap lets errors.Is(err, ErrFinal) match.
func (e *FinalError) Unwrap() error { return ErrFinal }

// UndecodableError is GetMany's error when items it read do not decode as
// jobs (FromItem refuses them: written by hand, or by a version that
// stored something else). Only those are missing: GetMany still reads
// every id and returns, with this error, every job that decodes, so a
// caller that walks many jobs can skip the ones named here rather than
// stop at them for good.
type UndecodableError struct {
	Items map[string]error // job id → why its item does not decode
}

func (e *UndecodableError) Error() string {
	ids := slices.Sorted(maps.Keys(e.Items))
	var b strings.Builder
	fmt.Fprintf(&b, "jobs: %d items do not decode as jobs", len(ids))
	for i, id := range ids {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(ids)-i)
			break
		}
		fmt.Fprintf(&b, "; %s: %v", id, e.Items[id])
	}
	return b.String()
}
