package sweeper

import (
	"errors"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/projection"
)

// repairFinished checks the projections of the final jobs that ended after
// the repair cursor and before now - RepairAfter, at most MaxItems of them
// in the finished index's order, and recovers each one that is behind its
// job item (see the package documentation).
func (r *run) repairFinished() {
	if r.projection == nil || r.outOfTime() {
		return
	}
	from, err := r.repairCursor.Load(r.ctx)
	if err != nil {
		r.fail(err, "sweep: load the repair cursor")
		return
	}
	if !isFinishedCursor(from) {
		// Only a hand-written object can be anything else; a cursor past
		// every key would stop the repair for good.
		r.log.WarnContext(r.ctx, "sweep: the repair cursor is not a finished index key; starting at the first final job", "cursor", from)
		from = ""
	}
	r.r.RepairCursor = from
	before := r.now.Add(-r.repairAfter)
	listed, err := r.jobs.Finished(r.ctx, from, before, r.maxItems)
	if err != nil {
		r.fail(err, "sweep: list finished jobs", "cursor", from)
		return
	}
	r.r.Finished = len(listed)
	// Fewer than asked for: the listing holds every final job before the
	// bound, and once each is decided the cursor may pass the bound.
	complete := len(listed) < r.maxItems
	var found map[string]jobs.Job
	if len(listed) > 0 {
		ids := make([]string, 0, len(listed))
		for _, f := range listed {
			ids = append(ids, f.ID)
		}
		if found, err = r.jobs.GetMany(r.ctx, ids); err != nil {
			r.fail(err, "sweep: read finished jobs", "jobs", len(ids))
			return
		}
	}
	next := from
	for _, f := range listed {
		if r.outOfTime() {
			complete = false
			break
		}
		if j, ok := found[f.ID]; ok && !r.repair(&j) {
			complete = false
			break // the next run starts with this job again
		}
		// Gone since the index was read (TTL): nothing to repair to.
		next = f.Key
	}
	if bound := jobs.FinishedBound(before); complete && bound > next {
		next = bound
	}
	r.r.RepairCursor = next
	if r.dry || next == from {
		return
	}
	if err := r.repairCursor.Save(r.ctx, next); err != nil {
		r.fail(err, "sweep: save the repair cursor", "cursor", next)
	}
}

// repair checks one final job's projection and recovers it from j when it
// is behind. It returns false when a request failed and j must be checked
// again.
func (r *run) repair(j *jobs.Job) bool {
	if !j.Status.Final() {
		// Only a job id reused after its item expired can be listed and
		// live: its projection is the projector's business.
		return true
	}
	lag, err := projection.LagOf(r.ctx, r.projection, j)
	if err != nil {
		r.fail(err, "sweep: read a finished job's projection", "job_id", j.ID)
		return false
	}
	if !lag.Behind() {
		return true
	}
	attrs := []any{"job_id", j.ID, "tenant", j.Tenant, "status", j.Status, "version", j.Version,
		"view_version", lag.View, "cursor_version", lag.Cursor.Version, "finished_at", j.UpdatedAt}
	if r.dry {
		r.r.WouldRepair++
		r.log.InfoContext(r.ctx, "sweep: would repair a final job's projection", attrs...)
		return true
	}
	rec, err := projection.RecoverJob(r.ctx, r.projection, j)
	switch {
	case errors.Is(err, projection.ErrInvalid):
		// It can never be projected; waiting changes nothing.
		r.fail(err, "sweep: repair: the job cannot be projected", attrs...)
		return true
	case err != nil:
		r.fail(err, "sweep: repair", attrs...)
		return false
	}
	attrs = append(attrs, "cursor_from", rec.From.Version, "cursor_to", rec.To.Version,
		"processed_delta", rec.Processed, "completed_delta", rec.Completed, "view_updated", rec.ViewUpdated)
	if !rec.Moved() && !rec.ViewUpdated {
		// The event arrived between the check and the recovery.
		r.log.InfoContext(r.ctx, "sweep: repair found the projection in step", attrs...)
		return true
	}
	r.r.Repaired++
	r.log.WarnContext(r.ctx, "sweep: repaired a final job's projection from its job item", attrs...)
	return true
}

// isFinishedCursor reports whether c is a repair cursor: "", a
// jobs.FinishedBound (13 digits) or a jobs.FinishedKey (13 digits, "#", a
// job id).
func isFinishedCursor(c string) bool {
	if c == "" {
		return true
	}
	if len(c) < 13 || strings.Trim(c[:13], "0123456789") != "" {
		return false
	}
	id, ok := strings.CutPrefix(c[13:], "#")
	return len(c) == 13 || ok && jobs.ValidateID(id) == nil
}
