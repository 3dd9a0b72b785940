package projection

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Store holds the job views and the tenant totals. MemoryStore and
// DynamoStore implement it and pass the same conformance suite,
// projectiontest.Run.
type Store interface {
	// Apply projects one event: its snapshot v into the job's view if the
	// view holds an older version (or none), and, when the event adds
	// something (adds: a delta, or a final status; else Skipped, and the
	// cursor is not touched), delta into the totals of v.Tenant if the
	// job's cursor is behind v.Version at progress v.Progress-delta with a
	// status that is not final (judge). An event at the cursor's version,
	// progress and status is Duplicate, one behind the cursor Older: both
	// count nothing; one beyond cursor+1 that does not start from the
	// cursor counts nothing and returns a *GapError; any other counts
	// nothing and returns a *MismatchError. The view is written whatever
	// the totals decide: a snapshot never waits.
	Apply(ctx context.Context, v View, delta int64) (Result, error)
	// Recover brings the totals of snap.Tenant to the authoritative
	// snapshot snap (read from the Jobs table) in one atomic write: the job's
	// cursor moves to snap, processed changes by snap.Progress minus the
	// cursor's progress, completed by snap's completion minus the
	// cursor's, and the view takes snap (see below). The write is
	// conditioned on the cursor being what Recover read; if it moved,
	// Recover reads it again. The cursor moves when snap is newer, or
	// differs from it at its version, or, snap being final, differs from it
	// at all; a live snapshot behind the cursor changes nothing. The view
	// follows the same rule (a view already snap is written again when the
	// cursor moves, which is harmless).
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
	// Skipped: the event adds nothing to the totals (its delta is 0 and
	// its status is not final: job.started, job.requeued, a renewal that
	// reports no progress), so its cursor was neither read nor moved;
	// only the view was written. See adds.
	Skipped
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Older:
		return "older"
	case Skipped:
		return "skipped"
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
	// for Applied and Duplicate, the newer one found for Older; 0 for
	// Skipped, which does not read it.
	Cursor int64
	// Conflicts is how many rounds the totals write lost to a concurrent
	// write and was retried (DynamoDB's TransactionConflict); 0 from a
	// store that has none to count.
	Conflicts int
}

// Recovery is what Recover did.
type Recovery struct {
	From Cursor // the cursor Recover found
	To   Cursor // the cursor after; From when it needed no change
	// Processed was added to the tenant's processed total: To.Progress -
	// From.Progress (negative after a takeover restarted the count, or
	// when From was forged), or 0.
	Processed int64
	// Completed was added to the tenant's completed total: 1 if To is
	// completed and From was not, -1 the other way round (From was
	// forged), else 0.
	Completed int64
	// ViewUpdated is true when the view was written.
	ViewUpdated bool
	// Conflicts is as Result's.
	Conflicts int
}

// Moved reports whether the recovery moved the cursor: to another
// version, or to the item's progress or status at the same one.
func (r *Recovery) Moved() bool { return r.To != r.From }

// judge tells what an event of snapshot v and delta is to a job whose
// cursor is cur. Every store calls it, so they cannot drift.
//
// The rule is one of states, not of consecutive versions: the event
// applies when it is newer than the cursor and starts from the cursor's
// state, that is its progress minus its delta is the cursor's progress and
// the cursor's status is not final (follows). Each application moves a
// cursor from the state the event starts from to the event's, and adds to
// the totals exactly the difference of what the two states contribute
// (the delta, and 1 to completed for a completion), so a tenant's totals
// stay the sum of its cursors' states, whichever events apply and in
// whatever order; and a cursor only moves forward by events. That is
// what lets an event that adds nothing (adds) skip its write: it leaves
// the state unchanged, so the next event that adds starts from the state
// the cursor holds, and applies, though versions lie between.
//
// At the cursor's version an event is a duplicate only with the cursor's
// progress and status; behind it, older. An event further on that does
// not start from the cursor's state is a gap: an event that added, between
// the two, has not been counted (lost or late), and the rest of the group
// waits until it is or a recovery reads the job item. It is a mismatch
// instead when nothing can lie between: at the cursor's next version, or
// past a final cursor, after which no version of the job comes. Any other
// disagreement is a *MismatchError too.
func judge(cur Cursor, v *View, delta int64) (Outcome, error) {
	switch {
	case v.Version > cur.Version && follows(cur, v, delta):
		return Applied, nil
	case v.Version == cur.Version && cur.Progress == v.Progress && cur.Status == v.Status:
		return Duplicate, nil
	case v.Version < cur.Version:
		return Older, nil
	case v.Version > cur.Version+1 && !cur.Status.Final():
		return 0, &GapError{JobID: v.JobID, Cursor: cur.Version, Version: v.Version}
	}
	return 0, &MismatchError{JobID: v.JobID, Version: v.Version, Progress: v.Progress, Delta: delta, Status: v.Status, Cursor: cur}
}

// follows reports whether an event of snapshot v and delta starts from
// cur's state: its progress minus its delta is cur's progress, and cur's
// status is not final.
func follows(cur Cursor, v *View, delta int64) bool {
	return cur.Progress == v.Progress-delta && !cur.Status.Final()
}

// adds reports whether an event of snapshot v and delta changes what its
// job contributes to the totals, and so must move its cursor: a delta that
// is not 0, or a final status. A final status with no delta adds nothing
// either (only a completion adds to completed), but the cursor is moved to
// it all the same: that is what ends the job's cursor, so that nothing can
// apply after it and the sweeper finds a final job's cursor at its item.
// Every other event (job.started, job.requeued, a renewal without
// progress) is Skipped: one write of the view, none of the totals.
func adds(v *View, delta int64) bool { return delta != 0 || v.Status.Final() }

// pastFinal reports whether a skipped event's snapshot v would move a view
// held at a final status: no version of a job comes after a final one, so
// such an event is not the job's (forged, or left from a job whose id was
// reused). A skipped event reads no cursor that would say so, so the view
// tells: it is not written, and the event is a *MismatchError
// (skippedPastFinal), which has the projector read the job item as any
// event past a final cursor does.
func pastFinal(held, v *View) bool { return held.Status.Final() && held.Version < v.Version }

// skippedPastFinal is the mismatch of a skipped event past a final view,
// against the job's cursor cur.
func skippedPastFinal(v *View, delta int64, cur Cursor) error {
	return &MismatchError{JobID: v.JobID, Version: v.Version, Progress: v.Progress, Delta: delta, Status: v.Status, Cursor: cur}
}

// cursorOf is the cursor after snapshot v was counted.
func cursorOf(v *View) Cursor {
	return Cursor{Version: v.Version, Progress: v.Progress, Status: v.Status}
}

// completedOf is what a cursor at status contributes to the completed
// total.
func completedOf(status jobs.Status) int64 {
	if status == jobs.StatusCompleted {
		return 1
	}
	return 0
}

// planRecovery is the recovery of a cursor at from to the snapshot snap,
// read from the job item. Both stores call it. The cursor moves to snap
// when snap is newer, or at the same version differs (the item's content
// at a version is the only one there is, so a cursor that differs was
// moved by an event that was not the job's), or, when snap is final,
// whenever it differs: nothing that is the job's can be past a final item,
// which never changes. A live item's snapshot behind the cursor changes
// nothing: the item may have moved on since it was read, and the events
// since counted. The totals change by the difference, so that the job's
// share stays its cursor's progress and completion.
func planRecovery(from Cursor, snap *View) Recovery {
	r := Recovery{From: from, To: from}
	to := cursorOf(snap)
	if to == from || snap.Version < from.Version && !snap.Status.Final() {
		return r
	}
	r.To = to
	r.Processed = to.Progress - from.Progress
	r.Completed = completedOf(to.Status) - completedOf(from.Status)
	return r
}

// viewNewer reports whether a view holding version held (ok false: none)
// takes an event's snapshot v: only a newer version replaces it.
func viewNewer(held int64, ok bool, v int64) bool { return !ok || held < v }

// viewTakes reports whether a view holding held (ok false: none) takes the
// snapshot snap of a recovery, read from the job item: when it is older,
// or differs at snap's version, or, snap being final, differs at all (the
// rule planRecovery follows for the cursor). That last is the one case
// where a view goes back: it held what no event of the job ever carried.
// With rewrite (a recovery that moves the cursor, in one transaction with
// it) a view that is already snap is written again, which is harmless and
// leaves out a condition that could cancel the transaction.
func viewTakes(held *View, ok bool, snap *View, rewrite bool) bool {
	switch {
	case !ok || held.Version < snap.Version:
		return true
	case held.Version > snap.Version && !snap.Status.Final():
		return false
	}
	return rewrite || !sameView(held, snap)
}

// sameView reports whether a and b are the same snapshot.
func sameView(a, b *View) bool {
	ta, tb := a.UpdatedAt, b.UpdatedAt
	x, y := *a, *b
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	return x == y && ta.Equal(tb)
}

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
