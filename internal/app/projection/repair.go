package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Repairer is the part of a Store that checks a job's projection against
// its job item and recovers it: what the sweeper (internal/app/sweeper) needs to
// repair a final job whose last event never arrived, or whose projection
// events that were not the job's moved. Every Store has it.
type Repairer interface {
	View(ctx context.Context, jobID string) (View, error)
	Cursor(ctx context.Context, tenant, jobID string) (Cursor, error)
	Recover(ctx context.Context, snap View) (Recovery, error)
}

var _ Repairer = Store(nil)

// Lag compares a job's projection with its job item.
type Lag struct {
	Job    int64  // the job item's version
	View   int64  // the view's version; 0 when the job has no view
	Cursor Cursor // how far the job's deltas have been counted in its tenant's totals
	// ViewInStep: the view is exactly the job item's snapshot.
	// CursorInStep: the cursor is at the item's version, progress and
	// status, so the job's share of the totals is the item's.
	ViewInStep, CursorInStep bool
}

// Behind reports whether the view or the totals miss a version the job
// item has: the view holds an older snapshot (or none), or the cursor has
// not counted the job's last transition.
func (l *Lag) Behind() bool { return l.View < l.Job || l.Cursor.Version < l.Job }

// Diverged reports whether the view or the cursor is ahead of the job
// item, or at its version with other content: what no lost or late event
// leaves, only events that were not the job's (forged, or left from a job
// whose id was reused after its item expired).
func (l *Lag) Diverged() bool {
	return l.View > l.Job || l.Cursor.Version > l.Job ||
		l.View == l.Job && !l.ViewInStep || l.Cursor.Version == l.Job && !l.CursorInStep
}

// InStep reports whether the view and the cursor are exactly the job
// item's. For a final item, which never changes, anything else is to be
// recovered: behind, ahead, or different at its version.
func (l *Lag) InStep() bool { return l.ViewInStep && l.CursorInStep }

// LagOf reads the view and the cursor of job (both strongly consistent) and
// compares them with job, the authoritative item.
func LagOf(ctx context.Context, s Repairer, job *jobs.Job) (Lag, error) {
	snap := ViewOfJob(job)
	l := Lag{Job: job.Version}
	v, err := s.View(ctx, job.ID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return Lag{}, fmt.Errorf("projection: lag of %s: %w", job.ID, err)
	default:
		l.View, l.ViewInStep = v.Version, sameView(&v, &snap)
	}
	if l.Cursor, err = s.Cursor(ctx, job.Tenant, job.ID); err != nil {
		return Lag{}, fmt.Errorf("projection: lag of %s: %w", job.ID, err)
	}
	l.CursorInStep = l.Cursor == cursorOf(&snap)
	return l, nil
}

// RecoverJob brings the projection of job to job, the authoritative item
// read (strongly consistent) from the Jobs table: Store.Recover of the
// item's snapshot (ViewOfJob), so the cursor and the totals move in one
// transaction conditioned on the cursor read. The view never goes back,
// except to a final item it differs from (see the package documentation).
// It is the one recovery path: the Projector takes it when an event has
// waited too long for its predecessor or disagrees with the cursor, the
// sweeper for a final job whose projection is not the item's. Whichever
// of a recovery and an event's Apply moves the cursor first counts the
// versions between; the other finds them counted and counts nothing.
func RecoverJob(ctx context.Context, s Repairer, job *jobs.Job) (Recovery, error) {
	return s.Recover(ctx, ViewOfJob(job))
}
