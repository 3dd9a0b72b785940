package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Repairer is the part of a Store that checks a job's projection against
// its job item and recovers it: what the sweeper (pkg/sweeper) needs to
// repair a final job whose last event never arrived. Every Store has it.
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
}

// Behind reports whether the view or the totals miss a version the job
// item has: the view holds an older snapshot (or none), or the cursor has
// not counted the job's last transition.
func (l *Lag) Behind() bool { return l.View < l.Job || l.Cursor.Version < l.Job }

// LagOf reads the view and the cursor of job (both strongly consistent) and
// compares them with job, the authoritative item.
func LagOf(ctx context.Context, s Repairer, job *jobs.Job) (Lag, error) {
	l := Lag{Job: job.Version}
	v, err := s.View(ctx, job.ID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return Lag{}, fmt.Errorf("projection: lag of %s: %w", job.ID, err)
	default:
		l.View = v.Version
	}
	if l.Cursor, err = s.Cursor(ctx, job.Tenant, job.ID); err != nil {
		return Lag{}, fmt.Errorf("projection: lag of %s: %w", job.ID, err)
	}
	return l, nil
}

// RecoverJob brings the projection of job to job, the authoritative item
// read (strongly consistent) from the Jobs table: Store.Recover of the
// item's snapshot (ViewOfJob), so the cursor and the totals move in one
// transaction conditioned on the cursor read, and the view never goes back.
// It is the one recovery path: the Projector takes it when an event has
// waited too long for its predecessor, the sweeper for a final job whose
// projection is behind. Whichever of a recovery and an event's Apply moves
// the cursor first counts the versions between; the other finds them
// counted and counts nothing.
func RecoverJob(ctx context.Context, s Repairer, job *jobs.Job) (Recovery, error) {
	return s.Recover(ctx, ViewOfJob(job))
}
