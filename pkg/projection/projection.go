package projection

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/outbox"
)

// Store holds the job views and the tenant totals. MemoryStore and
// DynamoStore implement it and pass the same conformance suite,
// projectiontest.Run.
type Store interface {
	// Apply projects one event: its snapshot v into the job's view if the
	// view holds an older version (or none), and delta into the totals of
	// v.Tenant if the job's cursor is at v.Version-1. An event at or behind
	// the cursor is Duplicate or Older and counts nothing; one beyond
	// cursor+1 counts nothing and returns a *GapError. The view is written
	// whatever the totals decide: a snapshot never waits.
	Apply(ctx context.Context, v View, delta int64) (Result, error)
	// Recover brings the totals of snap.Tenant to the authoritative
	// snapshot snap (read from the Jobs table) in one atomic write: the job's
	// cursor moves to snap, processed changes by snap.Progress minus the
	// cursor's progress, completed grows by one if snap is completed and the
	// cursor was not, and the view takes snap unless it holds a newer
	// version. The write is conditioned on the cursor being what Recover read;
	// if it moved, Recover reads it again. A snapshot at or behind the cursor
	// changes no totals.
	Recover(ctx context.Context, snap View) (Recovery, error)
	// View returns the job's view, or an error matching ErrNotFound.
	View(ctx context.Context, jobID string) (View, error)
	// Totals returns the tenant's totals; zero for a tenant with none.
	Totals(ctx context.Context, tenant string) (Totals, error)
	// Cursor returns how far the job's deltas have been applied to the
	// tenant's totals; the zero Cursor if none has.
	Cursor(ctx context.Context, tenant, jobID string) (Cursor, error)
}

// View is a job's snapshot after one version: what the Views table holds
// for it. UpdatedAt has millisecond precision, the precision it is stored
// with.
type View struct {
	JobID      string
	Tenant     string
	Status     jobs.Status
	Generation int64
	Version    int64
	Progress   int64
	ResultKey  string
	ResultSize int64
	ErrorCode  string
	UpdatedAt  time.Time
}

// ViewOfEvent is the snapshot an event carries.
func ViewOfEvent(e *outbox.Event) View {
	return View{
		JobID: e.JobID, Tenant: e.Tenant, Status: e.Status, Generation: e.Generation, Version: e.Version,
		Progress: e.Progress, ResultKey: e.ResultKey, ResultSize: e.ResultSize, ErrorCode: e.ErrorCode,
		UpdatedAt: ms(e.OccurredAt),
	}
}

// ViewOfJob is the snapshot of a job item: the same fields an event of its
// version carries.
func ViewOfJob(j *jobs.Job) View {
	return View{
		JobID: j.ID, Tenant: j.Tenant, Status: j.Status, Generation: j.Generation, Version: j.Version,
		Progress: j.Progress, ResultKey: j.Result.Key, ResultSize: j.Result.Size, ErrorCode: j.Error.Code,
		UpdatedAt: ms(j.UpdatedAt),
	}
}

// Totals are a tenant's counters.
type Totals struct {
	Tenant string
	// Processed is the sum of the deltas applied, plus the corrections of
	// recoveries: the sum of the progress of the tenant's cursors.
	Processed int64
	// Completed is how many of the tenant's jobs reached completed.
	Completed int64
}

// Cursor is how far a job's deltas have been applied to its tenant's
// totals: the version, progress and status of the last snapshot counted.
// The zero Cursor means none has been (version 0, the job's creation, which
// emits no event).
type Cursor struct {
	Version  int64
	Progress int64
	Status   jobs.Status
}

// Outcome is what Apply did with an event's delta.
type Outcome int

// The outcomes of Apply; a gap is an error (*GapError), not an outcome.
const (
	// Applied: the cursor was at the previous version; the delta was added.
	Applied Outcome = iota + 1
	// Duplicate: the cursor was at this very version; nothing was counted.
	Duplicate
	// Older: the cursor was past this version; nothing was counted.
	Older
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Older:
		return "older"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is what Apply did.
type Result struct {
	Outcome Outcome
	// ViewUpdated is false when the view already held this version or a
	// newer one.
	ViewUpdated bool
	// Cursor is the version of the job's cursor after the call: the event's
	// for Applied and Duplicate, the newer one found for Older.
	Cursor int64
}

// Recovery is what Recover did.
type Recovery struct {
	From Cursor // the cursor Recover found
	To   Cursor // the cursor after; From when the snapshot was not ahead
	// Processed was added to the tenant's processed total: To.Progress -
	// From.Progress (negative after a takeover restarted the count), or 0.
	Processed int64
	// Completed was added to the tenant's completed total: 1 if To is
	// completed and From was not.
	Completed   int64
	ViewUpdated bool
}

// Moved reports whether the recovery moved the cursor.
func (r *Recovery) Moved() bool { return r.To.Version != r.From.Version }

// classify tells what an event of version v is to a job whose cursor is at
// version c. Both stores call it, so they cannot drift.
func classify(jobID string, c, v int64) (Outcome, error) {
	switch {
	case v == c+1:
		return Applied, nil
	case v == c:
		return Duplicate, nil
	case v < c:
		return Older, nil
	}
	return 0, &GapError{JobID: jobID, Cursor: c, Version: v}
}

// cursorOf is the cursor after snapshot v was counted.
func cursorOf(v *View) Cursor {
	return Cursor{Version: v.Version, Progress: v.Progress, Status: v.Status}
}

// completedDelta is what reaching to from from adds to the completed total.
func completedDelta(from, to jobs.Status) int64 {
	if to == jobs.StatusCompleted && from != jobs.StatusCompleted {
		return 1
	}
	return 0
}

// planRecovery is the recovery of a cursor at from to the snapshot snap.
// Both stores call it.
func planRecovery(from Cursor, snap *View) Recovery {
	r := Recovery{From: from, To: from}
	if snap.Version <= from.Version {
		return r
	}
	r.To = cursorOf(snap)
	r.Processed = snap.Progress - from.Progress
	r.Completed = completedDelta(from.Status, snap.Status)
	return r
}

// viewNewer reports whether a view holding version held (ok false: none)
// takes snapshot v: only a newer version replaces it.
func viewNewer(held int64, ok bool, v int64) bool { return !ok || held < v }

const maxTenant = 256

// validate accepts a snapshot of a version that emitted an event: 1 or
// later.
func (v *View) validate() error {
	if err := jobs.ValidateID(v.JobID); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := validateTenant(v.Tenant); err != nil {
		return err
	}
	switch v.Status {
	case jobs.StatusPending, jobs.StatusRunning, jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled:
	default:
		return fmt.Errorf("%w: job %s: unknown status %q", ErrInvalid, v.JobID, v.Status)
	}
	if v.Version < 1 {
		return fmt.Errorf("%w: job %s: version %d; events start at version 1", ErrInvalid, v.JobID, v.Version)
	}
	if v.Progress < 0 || v.Generation < 0 || v.ResultSize < 0 {
		return fmt.Errorf("%w: job %s: negative progress, generation or result size", ErrInvalid, v.JobID)
	}
	return nil
}

func validateTenant(tenant string) error {
	if tenant == "" || len(tenant) > maxTenant || !utf8.ValidString(tenant) {
		return fmt.Errorf("%w: tenant must be 1 to %d bytes of UTF-8", ErrInvalid, maxTenant)
	}
	return nil
}

// ms truncates t to the stored precision.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}
