package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// forgeEvent sends into a job's events group an event the relay never
// published, as a misconfigured or compromised sender of the events queue
// would: a version the job has not reached (some of them final), the
// cursor's next version with a delta in agreement with a forged progress
// (which the totals count), or the job's latest event with another delta
// or another result. The projection must converge to the job all the same: checkEnd
// requires every view and cursor at its job's item and the totals at the
// jobs' progress, and unsettled keeps the pipeline running until the
// sweeper has repaired what only it can.
func (w *World) forgeEvent() {
	j := w.pick()
	if j == nil {
		return
	}
	ev, kind, ok := w.forgery(j)
	if !ok {
		return
	}
	ev.EventID = jobs.OutboxID(ev.JobID, ev.Version)
	body, err := json.Marshal(ev)
	if err != nil {
		w.fail(fmt.Errorf("a forged event: %w", err))
		return
	}
	decoded, err := outbox.DecodeEvent(string(body))
	if err != nil {
		w.fail(fmt.Errorf("a forged event does not decode: %w", err))
		return
	}
	w.forged[forgedKey(projection.ViewOfEvent(&decoded), decoded.Delta)] = true
	w.stats.ForgedEvents++
	w.inject(false, j.ID, string(body), fmt.Sprintf("forged-event-%d", w.stats.ForgedEvents), false)
	w.logf("hostile: a forged event (%s) in %s's group: v%d %s progress %d delta %d", kind, j.ID, ev.Version, ev.Status, ev.Progress, ev.Delta)
}

// forgery builds a forged event of j, of a kind the scheduler picks.
func (w *World) forgery(j *jobs.Job) (outbox.Event, string, bool) {
	ev := outbox.Event{Type: jobs.EventProgress, JobID: j.ID, Tenant: j.Tenant, Status: jobs.StatusRunning,
		Generation: j.Generation, OccurredAt: w.clock.Now().UTC()}
	switch w.rng.IntN(3) {
	case 0:
		ev.Version = j.Version + 1 + int64(w.rng.IntN(4))
		ev.Progress = j.Progress + int64(w.rng.IntN(50))
		ev.Delta = ev.Progress - j.Progress
		if w.rng.IntN(2) == 0 {
			ev.Type, ev.Status, ev.ResultKey, ev.ResultSize = jobs.EventCompleted, jobs.StatusCompleted, "candidates/forged.csv", 1
		}
		return ev, "ahead of the job", true
	case 1:
		c, err := w.views.mem.Cursor(context.Background(), j.Tenant, j.ID)
		if err != nil {
			return ev, "", false
		}
		ev.Version = c.Version + 1
		ev.Progress = c.Progress + 1 + int64(w.rng.IntN(100))
		ev.Delta = ev.Progress - c.Progress
		return ev, "the cursor's next version", true
	}
	// The job's latest transition as the relay publishes it, or will,
	// with its delta or its result changed: sent before the relay's own
	// event as often as not, so that it is the one the projection meets
	// first.
	r := w.recordAt(j.ID, j.Version)
	if r == nil || j.Version == 0 {
		return ev, "", false
	}
	msgs, err := outbox.FromTransition(&r.cur, r.prev)
	if err != nil {
		return ev, "", false
	}
	for _, m := range msgs {
		if m.Kind != outbox.KindEvent {
			continue
		}
		own, err := eventOf(string(m.Body))
		if err != nil {
			return ev, "", false
		}
		if w.rng.IntN(2) == 0 {
			own.Delta += 1 + int64(w.rng.IntN(100))
			return own, "the job's own event with another delta", true
		}
		own.ResultKey, own.ResultSize = "candidates/forged.csv", 1
		return own, "the job's own event with another result", true
	}
	return ev, "", false
}

// forgedKey names an event by its snapshot and delta.
func forgedKey(v projection.View, delta int64) string {
	return fmt.Sprintf("%+v delta %d", v, delta)
}

// checkMismatch checks an Apply the store refused as disagreeing with the
// job's cursor: the relay's own event never disagrees with a cursor the
// job's own history put there, so one of the two must be forged.
func (w *World) checkMismatch(snap projection.View, delta int64, err error) {
	var m *projection.MismatchError
	if !errors.As(err, &m) || w.forged[forgedKey(snap, delta)] || !w.genuineCursor(snap.JobID, m.Cursor) {
		return
	}
	w.violate("the relay's event %s (progress %d, delta %d) disagrees with the job's own cursor %+v",
		jobs.OutboxID(snap.JobID, snap.Version), snap.Progress, delta, m.Cursor)
}

// genuineCursor reports whether c is where the job's own history can put
// its cursor: none, or a version it had, with that version's progress and
// status.
func (w *World) genuineCursor(id string, c projection.Cursor) bool {
	if c == (projection.Cursor{}) {
		return true
	}
	r := w.recordAt(id, c.Version)
	return r != nil && c == projection.Cursor{Version: r.cur.Version, Progress: r.cur.Progress, Status: r.cur.Status}
}

// genuineView reports whether v is a snapshot the job had.
func (w *World) genuineView(v projection.View) bool {
	r := w.recordAt(v.JobID, v.Version)
	return r != nil && projection.ViewOfJob(&r.cur) == v
}

// recordAt is the job's stream record of version v, nil if it has none.
func (w *World) recordAt(id string, v int64) *record {
	s := w.streams[id]
	if s == nil || v < 0 || v >= int64(len(s.records)) {
		return nil
	}
	return s.records[v]
}
