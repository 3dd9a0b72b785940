package sweeper

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// walk is one of the repair's two walks of the finished index: the first
// check of each final job, RepairAfter after it ended, and the recheck,
// RecheckAfter after it ended.
type walk struct {
	name    string // "repair" or "recheck", in logs and metrics
	cursor  Cursor
	after   time.Duration
	recheck bool
}

// walked is where a walk stopped.
type walked struct {
	cursor string // where the next run's walk starts
	listed int    // final jobs listed
	lag    int64  // seconds the cursor is behind the walk's bound
	known  bool   // the cursor was read, so lag means something
}

// repairFinished walks the finished index twice, from the repair cursor
// and from the recheck cursor, and recovers each final job whose
// projection is not its job item's (see the package documentation).
func (r *run) repairFinished() {
	if r.projection == nil || r.outOfTime() {
		return
	}
	r.repairStart = r.clock()
	r.lags = map[string]int64{}
	first := r.walk(walk{name: "repair", cursor: r.repairCursor, after: r.repairAfter})
	r.r.RepairCursor, r.r.Finished, r.r.RepairLagSeconds = first.cursor, first.listed, first.lag
	if first.known {
		r.lags[MetricRepairLag] = first.lag
	}
	second := r.walk(walk{name: "recheck", cursor: r.recheckCursor, after: r.recheckAfter, recheck: true})
	r.r.RecheckCursor, r.r.Rechecked, r.r.RecheckLagSeconds = second.cursor, second.listed, second.lag
	if second.known {
		r.lags[MetricRecheckLag] = second.lag
	}
}

// walk checks, from w's cursor, the final jobs that ended before
// now - w.after: at most MaxItems per listing, and another listing while
// the last came back full and the run is within its RepairBudget. Then it
// saves the cursor.
func (r *run) walk(w walk) walked {
	if r.outOfTime() {
		return walked{}
	}
	from, err := w.cursor.Load(r.ctx)
	if err != nil {
		r.fail(err, "sweep: load the "+w.name+" cursor")
		return walked{}
	}
	if !isFinishedCursor(from) {
		// Only a hand-written object can be anything else; a cursor past
		// every key would stop the walk for good.
		r.log.WarnContext(r.ctx, "sweep: the "+w.name+" cursor is not a finished index key; starting at the first final job", "cursor", from)
		from = ""
	}
	before := r.now.Add(-w.after)
	out := walked{cursor: from, known: true}
	for listing := 0; listing == 0 || r.withinRepairBudget(); listing++ {
		next, listed, more := r.repairBatch(w, out.cursor, before)
		out.cursor, out.listed = next, out.listed+listed
		if !more {
			break
		}
	}
	out.lag, out.known = lagSeconds(out.cursor, before)
	if r.dry || out.cursor == from {
		return out
	}
	if err := w.cursor.Save(r.ctx, out.cursor); err != nil {
		r.fail(err, "sweep: save the "+w.name+" cursor", "cursor", out.cursor)
	}
	return out
}

// withinRepairBudget reports whether the repair may list more final jobs:
// only with a RepairBudget, and until it has passed since the repair
// began.
func (r *run) withinRepairBudget() bool {
	return r.repairBudget > 0 && r.clock().Sub(r.repairStart) < r.repairBudget
}

// repairBatch lists at most MaxItems final jobs after from that ended
// before before, reads them together (jobs.BatchGetter, 100 a request) and
// checks each in key order. It returns where the walk goes on, how many
// were listed, and whether the walk may list again at once: the listing
// was full and every job on it was decided.
func (r *run) repairBatch(w walk, from string, before time.Time) (next string, listed int, more bool) {
	if r.outOfTime() {
		return from, 0, false
	}
	got, err := r.jobs.Finished(r.ctx, from, before, r.maxItems)
	if err != nil {
		r.fail(err, "sweep: list finished jobs", "walk", w.name, "cursor", from)
		return from, 0, false
	}
	ids := make([]string, 0, len(got))
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	found, _, ok := r.getMany(ids, "sweep: read finished jobs")
	if !ok {
		return from, len(got), false
	}
	next = from
	for _, f := range got {
		if r.outOfTime() {
			return next, len(got), false
		}
		if j, ok := found[f.ID]; ok && !r.repair(&j, w) {
			return next, len(got), false // the next run starts with this job again
		}
		// Gone since the index was read (TTL), or an item that does not
		// decode (logged and counted): nothing to repair to.
		next = f.Key
	}
	if len(got) < r.maxItems {
		// Fewer than asked for: the listing held every final job before
		// the bound, each now decided, so the cursor may pass the bound.
		if bound := jobs.FinishedBound(before); bound > next {
			next = bound
		}
		return next, len(got), false
	}
	return next, len(got), true
}

// repair checks one final job's projection and recovers it from j when it
// is not in step with it. It returns false when a request failed and j
// must be checked again.
func (r *run) repair(j *jobs.Job, w walk) bool {
	if !j.Status.Final() {
		// Only a job id reused after its item expired can be listed and
		// live: its projection is the projector's business.
		return true
	}
	lag, err := projection.LagOf(r.ctx, r.projection, j)
	if err != nil {
		r.fail(err, "sweep: read a finished job's projection", "job_id", j.ID, "walk", w.name)
		return false
	}
	if lag.InStep() {
		return true
	}
	diverged := lag.Diverged()
	attrs := []any{"job_id", j.ID, "tenant", j.Tenant, "status", j.Status, "version", j.Version,
		"view_version", lag.View, "view_in_step", lag.ViewInStep, "cursor_version", lag.Cursor.Version,
		"cursor_in_step", lag.CursorInStep, "finished_at", j.UpdatedAt, "walk", w.name}
	if r.dry {
		r.count(w, diverged, func() { r.r.WouldRepair++ })
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
	r.count(w, diverged, func() { r.r.Repaired++ })
	if diverged {
		r.log.ErrorContext(r.ctx, "sweep: repaired a final job's projection that differed from its job item", attrs...)
		return true
	}
	r.log.WarnContext(r.ctx, "sweep: repaired a final job's projection from its job item", attrs...)
	return true
}

// count counts a repair (or, in a dry run, one that would be) with add,
// and in RepairedOnRecheck and Diverged as it was one.
func (r *run) count(w walk, diverged bool, add func()) {
	add()
	if w.recheck {
		// The first check passed this job without seeing it out of step:
		// the finished index showed it late, or events that were not the
		// job's came after.
		r.r.RepairedOnRecheck++
	}
	if diverged {
		r.r.Diverged++
	}
}

// lagSeconds returns how far cursor is behind FinishedBound(before), in
// whole seconds (0 at or past it), and false for the cursor "", which no
// walk has moved yet.
func lagSeconds(cursor string, before time.Time) (int64, bool) {
	if len(cursor) < 13 {
		return 0, false
	}
	at, err := strconv.ParseInt(cursor[:13], 10, 64)
	if err != nil {
		return 0, false
	}
	return max(before.UnixMilli()-at, 0) / 1000, true
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
