package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// views is the projection store under the projector and the sweeper
// (projection.MemoryStore or projection.PostgresStore), with every write
// observed. A view must never go
// back, except from a snapshot its job never had to the job's final item
// (a recovery undoing a forged event); the totals must always be the sum
// of the deltas and completions the store reports it counted; and the
// relay's own events must never disagree with a cursor the job's own
// history put there.
type views struct {
	w   *World
	mem projection.Store
}

var _ projection.Store = (*views)(nil)

// view returns the job's view (ok false: none), whatever became of ctx.
func (v *views) view(ctx context.Context, id string) (projection.View, bool) {
	got, err := v.mem.View(context.WithoutCancel(ctx), id)
	return got, err == nil
}

func (v *views) Apply(ctx context.Context, snap projection.View, delta int64) (projection.Result, error) {
	before, _ := v.view(ctx, snap.JobID)
	res, err := v.mem.Apply(ctx, snap, delta)
	v.wrote(ctx, snap.JobID, before, nil, "apply "+jobs.OutboxID(snap.JobID, snap.Version))
	v.w.checkMismatch(snap, delta, err)
	if err == nil && res.Outcome == projection.Applied {
		v.w.deltas[snap.Tenant] += delta
		if snap.Status == jobs.StatusCompleted {
			v.w.completions[snap.Tenant]++
		}
		v.w.logf("  applied %s delta %d", jobs.OutboxID(snap.JobID, snap.Version), delta)
	}
	v.checkTotals(ctx, snap.Tenant)
	return res, err
}

func (v *views) Recover(ctx context.Context, snap projection.View) (projection.Recovery, error) {
	before, _ := v.view(ctx, snap.JobID)
	r, err := v.mem.Recover(ctx, snap)
	v.wrote(ctx, snap.JobID, before, &snap, "recover "+snap.JobID)
	if err == nil {
		v.w.deltas[snap.Tenant] += r.Processed
		v.w.completions[snap.Tenant] += r.Completed
		if r.Moved() {
			v.w.stats.Recoveries++
			v.w.logf("  recovered %s from v%d to v%d (processed %+d, completed %+d)", snap.JobID, r.From.Version, r.To.Version, r.Processed, r.Completed)
		}
	}
	v.checkTotals(ctx, snap.Tenant)
	return r, err
}

// wrote checks that a write left the job's view where it was or ahead;
// only a recovery to a final item (final) may take it back, and only from
// a snapshot the job never had.
func (v *views) wrote(ctx context.Context, id string, before projection.View, final *projection.View, what string) {
	after, _ := v.view(ctx, id)
	if after.Version >= before.Version {
		return
	}
	if final != nil && final.Status.Final() && after == *final && !v.w.genuineView(before) {
		v.w.stats.ViewsPutBack++
		v.w.logf("  %s put the view of %s back from a forged v%d to v%d", what, id, before.Version, after.Version)
		return
	}
	v.w.violate("%s took the view of %s back from v%d to v%d", what, id, before.Version, after.Version)
}

func (v *views) checkTotals(ctx context.Context, tenant string) {
	t, err := v.mem.Totals(context.WithoutCancel(ctx), tenant)
	if err != nil {
		v.w.violate("totals of %s: %v", tenant, err)
		return
	}
	if t.Processed != v.w.deltas[tenant] || t.Completed != v.w.completions[tenant] {
		v.w.violate("the totals of %s are processed %d, completed %d; the writes counted %d and %d",
			tenant, t.Processed, t.Completed, v.w.deltas[tenant], v.w.completions[tenant])
	}
}

func (v *views) View(ctx context.Context, id string) (projection.View, error) {
	return v.mem.View(ctx, id)
}
func (v *views) Totals(ctx context.Context, tenant string) (projection.Totals, error) {
	return v.mem.Totals(ctx, tenant)
}
func (v *views) Cursor(ctx context.Context, tenant, id string) (projection.Cursor, error) {
	return v.mem.Cursor(ctx, tenant, id)
}

// tracked wraps a consumer's handler: each message it processes (returns
// nil for) must come after every older message of its group, in the
// queue's order, that is not processed yet — unless SQS dead-lettered that
// one itself, or the operator discarded it. A redriven copy stands for its
// parked message; a dead-lettered copy excuses nothing (its message stays
// parked, to run at the next redrive, before the messages after it).
func (w *World) tracked(q *Queue, h fifo.Handler) fifo.Handler {
	return func(ctx context.Context, msg events.SQSMessage) error {
		err := h(ctx, msg)
		m := q.ByID(msg.MessageId)
		if err != nil || m == nil {
			if err != nil {
				w.logf("  %s %s failed: %v", q.Name, msg.MessageId, err)
			}
			return err
		}
		group := m.Group
		done := w.processed[q][group]
		if done == nil {
			done = map[uint64]bool{}
			w.processed[q][group] = done
		}
		for _, o := range q.All() {
			if o.Group != group || o.Copy || o.Seq >= m.Original || done[o.Seq] || o.Fate == DeadLettered || w.isDiscarded(ctx, q, o) {
				continue
			}
			w.violate("%s group %s: message %s (sequence %d) was processed before the older message %s (sequence %d)",
				q.Name, group, m.ID, m.Original, o.ID, o.Seq)
			break
		}
		done[m.Original] = true
		w.logf("  %s %s processed (sequence %d)", q.Name, m.ID, m.Original)
		return nil
	}
}

// isDiscarded reports whether the operator discarded m: its parked item,
// under its sequence number, is marked so in the quarantine's store (the
// operator's own answer may have been lost).
func (w *World) isDiscarded(ctx context.Context, q *Queue, m *Msg) bool {
	key, err := quarantine.SeqKey(strconv.FormatUint(m.Seq, 10))
	if err != nil {
		return false
	}
	k := quarantine.ItemKey{Group: m.Group, Sequence: key}
	_, items, err := w.qmem.Read(context.WithoutCancel(ctx), q.Name, nil, []quarantine.ItemKey{k})
	return err == nil && items[k].Status == quarantine.StatusDiscarded
}

// checkResult checks a completed job's result: the accepting attempt's own
// candidate, of the job's generation, stored with the recorded hash and
// size, holding what that attempt's task wrote.
func (w *World) checkResult(ctx context.Context, j *jobs.Job) {
	if err := jobs.ValidateResultKey(j.Result.Key, j.ID, j.Generation, j.LeaseOwner); err != nil {
		w.violate("job %s's result is not its accepting attempt's candidate: %v", j.ID, err)
		return
	}
	key, err := candidate.ParseKey(j.Result.Key)
	if err != nil {
		w.violate("job %s's result key: %v", j.ID, err)
		return
	}
	info, err := w.checker.Head(context.WithoutCancel(ctx), key)
	if err != nil {
		w.violate("job %s's result %s: %v", j.ID, j.Result.Key, err)
		return
	}
	if info.SHA256 != j.Result.SHA256 || info.Size != j.Result.Size {
		w.violate("job %s's result %s is %s (%d bytes); the job recorded %s (%d bytes)",
			j.ID, j.Result.Key, info.SHA256, info.Size, j.Result.SHA256, j.Result.Size)
	}
	body, _ := w.s3.Object(bucket, j.Result.Key)
	if want := header(j.ID, j.Generation, j.LeaseOwner); !bytes.HasPrefix(body, []byte(want)) {
		w.violate("job %s's result does not start with %q", j.ID, want)
	}
	if n := int64(bytes.Count(body, []byte("\n"))) - 1; n != j.Progress {
		w.violate("job %s's result holds %d items; its progress is %d", j.ID, n, j.Progress)
	}
}

// checkDelete is asked before the bucket deletes key: never a final job's
// result, never a candidate of a live job's current generation.
func (w *World) checkDelete(ctx context.Context, key string) {
	k, err := candidate.ParseKey(key)
	if err != nil {
		return // the sweeper's cursors, and objects that are no candidates
	}
	j := w.journal.peek(ctx, k.JobID)
	switch {
	case j == nil:
		w.violate("the candidate %s of a job that does not exist was deleted", key)
	case j.Status.Final() && j.Result.Key == key:
		w.violate("job %s's result %s was deleted", j.ID, key)
	case !j.Status.Final() && k.Generation >= j.Generation:
		w.violate("the candidate %s of live job %s at generation %d was deleted", key, j.ID, j.Generation)
	default:
		w.stats.OrphansDeleted++
		w.logf("  orphan %s deleted", key)
	}
}

// header is the first line of an attempt's candidate.
func header(jobID string, generation int64, attempt string) string {
	return fmt.Sprintf("job %s generation %d attempt %s\n", jobID, generation, attempt)
}

// itemsOf reads a spec's item count.
func itemsOf(spec map[string]string) int {
	n, err := strconv.Atoi(spec["items"])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

var errPoisonTask = errors.New("sim: the job's input cannot be processed")
