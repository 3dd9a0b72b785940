package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// maxSettleRounds bounds the settling phase: a run that has not settled by
// then has a job, a message or a hold that nothing will ever move.
const maxSettleRounds = 400

// settle runs the pipeline without faults until it is quiet: the causes of
// the poison messages are fixed (their jobs created), requests held in the
// network arrive, the relay publishes every record, the consumers drain
// their queues, the operator redrives every held group, and time passes
// for visibility timeouts to end and for the sweeper to nudge stuck jobs
// and repair projections. Then, past the grace period, the sweeper deletes
// every candidate that is no result.
func (w *World) settle() {
	w.faulty = false
	for w.resumeOne(false) {
	}
	for _, in := range w.intents {
		if in.poison && w.journal.peek(context.Background(), in.jobID) == nil {
			w.post(in, in.spec)
		}
	}
	for round := 0; ; round++ {
		if w.err != nil {
			return
		}
		if round == maxSettleRounds {
			w.violate("the pipeline did not settle: %s", strings.Join(w.unsettled(), "; "))
			return
		}
		for w.resumeOne(false) {
		}
		w.deliverDelayed(true)
		w.relay(true)
		w.drain()
		if len(w.unsettled()) == 0 {
			break
		}
		next, ok := w.nextWake()
		if ok {
			w.clock.AdvanceTo(next)
		} else {
			w.clock.Advance(5 * time.Minute)
		}
		w.sweep()
	}
	// Past the grace period, sweeps go round the bucket.
	w.clock.Advance(sweeper.DefaultGrace + time.Minute)
	for range 2 + (len(w.s3.Keys(bucket, candidate.Prefix))/sweeperMaxItems)*2 {
		w.sweep()
	}
}

// drain has the consumers run batches until none is left to run now, then
// the operator redrive what the quarantine holds (or, with Kafka, the
// on-failure destinations).
func (w *World) drain() {
	if w.kafka != nil {
		for busy := true; busy && w.err == nil; {
			busy = w.consumeKafka(w.kafka.worker)
			busy = w.consumeKafka(w.kafka.projector) || busy
		}
		for w.changePartitions(true) {
		}
		w.redriveFailed(true)
		w.redrive(true)
		return
	}
	for busy := true; busy && w.err == nil; {
		busy = w.consume(w.commands, w.workerFn, "worker", workerTimeout)
		busy = w.consume(w.evts, w.projector, "projector", projectorTimeout) || busy
		busy = busy || w.commands.Receivable() > 0 || w.evts.Receivable() > 0
	}
	w.redrive(true)
}

// nextWake is when a message in flight becomes visible again, or, with
// Kafka, a partition is retried or an invocation times out.
func (w *World) nextWake() (time.Time, bool) {
	if w.kafka != nil {
		return w.nextKafkaWake()
	}
	next, ok := w.commands.NextVisible()
	if t, ok2 := w.evts.NextVisible(); ok2 && (!ok || t.Before(next)) {
		next, ok = t, true
	}
	return next, ok
}

// unsettled says what still moves: a live job, an unpublished record, a
// request in the network, a queued message, a held group, a projection
// that is not its final job's (behind it, or moved by forged events).
func (w *World) unsettled() []string {
	var out []string
	for _, id := range w.jobIDs {
		j := w.journal.peek(context.Background(), id)
		if !j.Status.Final() {
			out = append(out, "job "+describe(j))
			continue
		}
		lag, err := projection.LagOf(context.Background(), w.views, j)
		if err != nil || !lag.InStep() {
			out = append(out, fmt.Sprintf("the projection of %s: %+v %v", id, lag, err))
		}
	}
	if ids := w.pendingStreams(); len(ids) > 0 {
		out = append(out, fmt.Sprintf("stream records of %v", ids))
	}
	if len(w.delayed) > 0 {
		out = append(out, fmt.Sprintf("%d requests in the network", len(w.delayed)))
	}
	if w.kafka != nil {
		return append(out, w.kafkaUnsettled()...)
	}
	for _, q := range []*Queue{w.commands, w.evts} {
		if q.Len() > 0 {
			out = append(out, fmt.Sprintf("%d messages in %s", q.Len(), q.Name))
		}
		out = append(out, w.heldGroups(q.Name)...)
	}
	return out
}

// heldGroups names the groups (or keys) of a queue (or topic) the
// quarantine holds.
func (w *World) heldGroups(name string) []string {
	var out []string
	holds, _ := w.qmem.Holds(context.Background(), name)
	for _, h := range holds {
		out = append(out, fmt.Sprintf("%s group %s %s (%d parked: %s)", name, h.Group, h.State, h.Parked, h.Cause))
	}
	return out
}

// checkEnd checks the invariants on the settled pipeline.
func (w *World) checkEnd() {
	ctx := context.Background()
	progress, completed := map[string]int64{}, map[string]int64{}
	results := map[string]bool{}
	for _, id := range w.jobIDs {
		j := w.journal.peek(context.Background(), id)
		// Every job ends final.
		switch j.Status {
		case jobs.StatusCompleted:
			w.stats.Completed++
			completed[j.Tenant]++
			results[j.Result.Key] = true
			w.checkResult(ctx, j)
		case jobs.StatusFailed:
			w.stats.Failed++
		case jobs.StatusCancelled:
			w.stats.Cancelled++
		default:
			w.violate("job %s did not end: %s", id, describe(j))
		}
		progress[j.Tenant] += j.Progress
		w.checkMessages(j)
		// The view holds the job's last version, the totals count it.
		v, err := w.views.View(ctx, id)
		if err != nil || v != projection.ViewOfJob(j) {
			w.violate("the view of %s is %+v (%v); the job is %s", id, v, err, describe(j))
		}
		if c, err := w.views.Cursor(ctx, j.Tenant, id); err != nil || c.Version != j.Version || c.Progress != j.Progress {
			w.violate("the totals' cursor of %s is %+v (%v); the job is %s", id, c, err, describe(j))
		}
	}
	// The totals are the sum of the deltas applied, and of the jobs.
	for _, t := range tenants {
		tot, err := w.views.Totals(ctx, t)
		if err != nil || tot.Processed != progress[t] || tot.Completed != completed[t] {
			w.violate("the totals of %s are %+v (%v); its jobs processed %d items and %d completed", t, tot, err, progress[t], completed[t])
		}
	}
	if w.kafka != nil {
		w.checkLogEnd()
	}
	// Every message ended acknowledged (deleted, parked ones included) or
	// in a dead-letter queue, and nothing is left parked.
	for _, q := range w.queues() {
		for _, m := range q.All() {
			if m.Fate == Queued {
				w.violate("%s message %s (%s) is still queued", q.Name, m.ID, m.DedupID)
			}
			// Nothing was lost: every message was processed (itself, or a
			// redriven copy of it), or dead-lettered, or discarded by the
			// operator. (A copy stands for its parked message.)
			if !m.Copy && !w.processed[q][m.Group][m.Seq] && m.Fate != DeadLettered && !w.isDiscarded(ctx, q, m) {
				w.violate("%s message %s (%s, sequence %d) was acknowledged but never processed", q.Name, m.ID, m.DedupID, m.Seq)
			}
		}
		w.stats.DeadLettered += len(q.DLQ())
		w.stats.DeadLetteredCopies += q.DeadLetteredCopies()
		groups := map[string]bool{}
		for _, m := range q.All() {
			groups[m.Group] = true
		}
		w.checkReleased(ctx, q.Name, groups)
	}
	w.checkOutboxEnd(ctx)
	// Past the grace period, the sweeper has left only the results.
	for _, k := range w.s3.Keys(bucket, candidate.Prefix) {
		if !results[k] {
			w.violate("candidate %s is no result, and the sweeper left it", k)
		}
	}
	for k := range results {
		if _, ok := w.s3.Object(bucket, k); !ok {
			w.violate("result %s is gone", k)
		}
	}
}

// checkReleased checks that every hold of the groups (or keys) of a queue
// (or topic) is released with nothing parked.
func (w *World) checkReleased(ctx context.Context, name string, groups map[string]bool) {
	for _, g := range sortedKeys(groups) {
		h, err := w.qmem.Hold(ctx, name, g)
		if errors.Is(err, quarantine.ErrNoHold) {
			continue
		}
		if err != nil || h.State != quarantine.StateReleased || h.Parked != 0 {
			w.violate("%s group %s: hold %+v (%v)", name, g, h, err)
			continue
		}
		w.stats.Released++
		parked, err := w.qmem.Messages(ctx, name, g, quarantine.StatusParked, "", 0)
		if err != nil || len(parked) > 0 {
			w.violate("%s group %s still has %d parked messages (%v)", name, g, len(parked), err)
		}
	}
}

// queues are the SQS transport's queues; none with Kafka.
func (w *World) queues() []*Queue {
	if w.kafka != nil {
		return nil
	}
	return []*Queue{w.commands, w.evts}
}

// checkMessages checks a job's stream and what the relay made of it: one
// record per version, each published (unless the relay lost it), an event
// for every version from 1 and a command for creation and every nudge,
// each under its outbox id, and no message of a version that does not
// exist.
func (w *World) checkMessages(j *jobs.Job) {
	s := w.streams[j.ID]
	if len(s.records) != int(j.Version)+1 {
		w.violate("job %s is at version %d with %d stream records", j.ID, j.Version, len(s.records))
		return
	}
	for v, r := range s.records {
		id := jobs.OutboxID(j.ID, int64(v))
		if r.cur.Version != int64(v) {
			w.violate("stream record %d of %s is version %d", v, j.ID, r.cur.Version)
		}
		if r.lost {
			continue
		}
		if r.published == 0 {
			w.violate("%s was never published", id)
		}
		_, cmd := w.commandBodies[id]
		body, evt := w.eventBodies[id]
		wantCmd := v == 0 || r.cur.Outbox.Type == jobs.MessageRun
		if cmd != wantCmd || evt != (v > 0) {
			w.violate("%s: command published %v, event published %v", id, cmd, evt)
		}
		if evt {
			ev, err := eventOf(body)
			if err != nil || ev.Version != int64(v) || ev.Status != r.cur.Status || ev.Progress != r.cur.Progress ||
				ev.Delta != r.cur.Progress-progressOf(r.prev) {
				w.violate("event %s is %+v (%v); its transition is %s", id, ev, err, describe(&r.cur))
			}
		}
	}
	for _, bodies := range []map[string]string{w.commandBodies, w.eventBodies} {
		for v := j.Version + 1; ; v++ {
			if _, ok := bodies[jobs.OutboxID(j.ID, v)]; !ok {
				break
			}
			w.violate("a message of %s's version %d, which does not exist, was published", j.ID, v)
		}
	}
}

// progressOf is a job's progress; 0 before its creation.
func progressOf(j *jobs.Job) int64 {
	if j == nil {
		return 0
	}
	return j.Progress
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
