package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// The processor's side of the Quarantine: one Check per batch, then each
// keyed lane run under its key's hold (runQuarantinedLane), as pkg/fifo's
// processor runs a group's lane under its hold.

// laneKeyOf returns the lane key record i was given and whether it has one
// (false for a null-key lane, or the broken lane of a LaneKey that
// panicked): the part of its lane name after the partition's index and
// the kind (see keyedLane).
func (b *batch) laneKeyOf(i int) (string, bool) {
	name := b.lanes.name(i)
	j := strings.IndexFunc(name, func(r rune) bool { return r < '0' || r > '9' })
	if j < 0 || name[j] != keyedLane {
		return "", false
	}
	return name[j+1:], true
}

// quarantined reports whether record i's lane runs under the quarantine.
func (b *batch) quarantined(i int) bool {
	if b.p.cfg.Quarantine == nil {
		return false
	}
	_, ok := b.laneKeyOf(i)
	return ok
}

func (b *batch) topicKey(i int) TopicKey {
	k, _ := b.laneKeyOf(i)
	return TopicKey{Topic: b.records[i].Topic, Key: k}
}

// Prepare stops the run if a lane key function panicked, the batch's
// first failure, and reads the holds of the batch's keys, once, before any
// lane starts (lanes.Preparer).
func (b *batch) Prepare(ctx context.Context) {
	if b.keyFailed {
		b.StopOnFailure()
	}
	q := b.p.cfg.Quarantine
	if q == nil {
		return
	}
	var recs []KeyedRecord
	for i := range b.records {
		if b.quarantined(i) && b.Results[i].Outcome == pending {
			recs = append(recs, KeyedRecord{Key: b.topicKey(i), Record: &b.records[i]})
		}
	}
	if len(recs) == 0 {
		return
	}
	b.held, b.heldErr = lanes.CheckQuarantine(&b.Batch, func() (QuarantineView, error) { return q.Check(ctx, recs) })
}

// RunHeldLane runs a lane of a quarantined key (lanes.HeldLaner).
func (b *batch) RunHeldLane(head int) { b.runQuarantinedLane(head) }

// runQuarantinedLane runs a key's lane under its hold, following the hold
// as it changes: a record that fails permanently, fails as often as the
// threshold allows or carries another partition count holds the key and
// parks itself and the rest of the lane; the redriven copy of the key's
// oldest parked record runs, and its success can release the hold, after
// which the lane's later records run.
func (b *batch) runQuarantinedLane(head int) {
	key := b.topicKey(head)
	if b.heldErr != nil {
		for i := head; i >= 0; i = b.Plan.Next(i) {
			b.Results[i].Outcome, b.Results[i].Err = Failed, b.heldErr
			b.LogOutcome(i)
		}
		return
	}
	q := b.heldLane(key)
	hold := b.held.Holds[key]
	rest := pending
	for i := head; i >= 0; i = b.Plan.Next(i) {
		r, rec := &b.Results[i], &b.records[i]
		d, known := b.held.Records[b.checked[i].id]
		isCopy := known && d.Copy
		current := isCopy && hold.State == Draining && hold.Epoch == d.Epoch
		runnable := current && hold.Next == d.Of
		// Another partition count matters to a key not held: a held key's
		// records are parked anyway, in the hold's partition (others are
		// refused below), and its copies are sent to that partition.
		var moved error
		if hold.State == NotHeld {
			moved = checkPartitionCount(rec, b.p.cfg.PartitionCount)
		}
		switch {
		case r.Outcome != pending:
			continue // parked or dropped with an earlier record
		case rest != pending:
			r.Outcome = rest
		case known && d.Drop:
			r.Outcome, r.Note = Dropped, d.Reason
		case hold.State != NotHeld && rec.Partition != hold.Partition:
			// Its offset is of another partition's sequence: parked under
			// the hold it would sort among records it did not follow.
			r.Outcome, rest = Failed, SkippedAfterFailure
			r.Err = fmt.Errorf("%w: partition %d, the key is %s from partition %d", ErrKeyMovedPartition, rec.Partition, hold.State, hold.Partition)
		case current && d.Of < hold.Next:
			// Check saw its record parked, but an earlier copy of it ran in
			// this batch (a copy written twice: the brokers' answer was
			// lost and the redrive sent it again): nothing older waits.
			r.Outcome = Dropped
			r.Note = fmt.Sprintf("a second copy of offset %d, which ran in this batch", d.Of)
		case current && !runnable:
			// Its parked record stays parked, for the next redrive to send
			// again after the older one.
			cause := fmt.Errorf("%w: the copy of offset %d came while offset %d is parked", ErrCopyOutOfOrder, d.Of, hold.Next)
			hold, rest = q.Rehold(i, hold, cause, "redriven copy out of order: ")
			continue // rehold logged it
		case isCopy && !runnable:
			r.Outcome = Dropped
			r.Note = fmt.Sprintf("redriven copy of epoch %d while the key is %s (epoch %d): its parked record stays parked", d.Epoch, hold.State, hold.Epoch)
		case !runnable && hold.State != NotHeld:
			hold, rest = q.Park(i, hold, nil, false)
			continue // park logged it
		case moved != nil:
			hold, rest = q.Park(i, hold, moved, true)
			continue // park logged it
		case hold.Attempts.Of(rec)+1 >= b.p.cfg.QuarantineThreshold:
			// Its count was written by an earlier delivery, and parking it
			// then failed (or the threshold was lowered since).
			if runnable {
				hold, rest = q.Rehold(i, hold, b.thresholdCause(i, hold), "redriven copy failed again: ")
			} else {
				hold, rest = q.Park(i, hold, b.thresholdCause(i, hold), true)
			}
			continue // park or rehold logged it
		case b.Stopped():
			// The rest of the lane is skipped too, parked records
			// included: a record parked while an earlier one of its key is
			// delivered again could be redriven, and run, first.
			r.Outcome, rest = SkippedStopped, SkippedStopped
		case !b.MayStart(i):
			r.Outcome, rest = SkippedDeadline, SkippedDeadline
		default:
			b.RunItem(i, func() { hold = b.countFailure(i, key, hold) })
			switch {
			case r.Outcome == Succeeded && runnable:
				hold, rest = q.Done(i, hold)
			case r.Park && runnable:
				hold, rest = q.Rehold(i, hold, r.ParkCause, "redriven copy failed again: ")
			case r.Park:
				hold, rest = q.Park(i, hold, r.ParkCause, true)
			case !r.Outcome.Completed():
				rest = SkippedAfterFailure
			}
			continue // RunItem logged it, and so did park
		}
		b.LogOutcome(i) // decided without running
	}
}

// countFailure records a failed attempt of record i (Quarantine.Failed)
// after its handler returned, before its outcome is logged, and returns
// the key's hold with the attempts afterwards. A record whose next attempt
// would be parked before it runs is parked now instead (r.Park): that
// saves the delivery of its partition's batch again. A permanent failure
// is parked at once, uncounted.
func (b *batch) countFailure(i int, key TopicKey, hold Hold) Hold {
	r := &b.Results[i]
	if r.Park || (r.Outcome != Failed && r.Outcome != Panicked) {
		return hold
	}
	ctx, cancel := b.countContext()
	defer cancel()
	got, err := lanes.CallQuarantine(func() (Attempts, error) {
		return b.p.cfg.Quarantine.Failed(ctx, key, hold, &b.records[i], r.Err)
	}, func(err error) {
		r.Err = errors.Join(r.Err, fmt.Errorf("kafka: count the failed attempt: %w", err))
	})
	if err != nil {
		return hold
	}
	hold.Attempts = got
	if got.Of(&b.records[i])+1 >= b.p.cfg.QuarantineThreshold {
		// Failed until runQuarantinedLane parks it.
		r.Park, r.ParkCause = true, b.thresholdCause(i, hold)
	}
	return hold
}

// countContext is the context a failed attempt is counted under. A
// handler that ran into its deadline returns when the handlers' context
// ends, ResponseReserve before the invocation's deadline: counted under that
// context, its failure would be refused, and such a record would never be
// parked (the mapping would give it up while its key's later records run).
// So the count is detached from the handlers' context (its values kept)
// and ends half the reserve before the invocation's deadline: the other
// half is left for the response. Without a deadline it is the handlers'
// context. The caller cancels it: nothing of it outlives Process.
func (b *batch) countContext() (context.Context, context.CancelFunc) {
	handlers, ok := b.Context().Deadline()
	if !ok {
		return b.Context(), func() {}
	}
	reserve := cmp.Or(b.p.cfg.ResponseReserve, lanes.DefaultResponseReserve)
	return context.WithDeadline(context.WithoutCancel(b.Context()), handlers.Add(reserve/2))
}

// thresholdCause is why record i is parked at the threshold: its attempts
// under hold, and its last failure's cause.
func (b *batch) thresholdCause(i int, hold Hold) error {
	return fmt.Errorf("%w (%d failed, attempt %d is the threshold): %s", ErrQuarantineThreshold,
		hold.Attempts.Of(&b.records[i]), b.p.cfg.QuarantineThreshold, hold.Attempts.Cause)
}

// heldLane is the quarantine's side of a key's lane.
type heldLane = lanes.Held[TopicKey, Record, Hold]

// heldLane returns the quarantine's side of key's lane.
func (b *batch) heldLane(key TopicKey) heldLane {
	return lanes.HeldLane(&b.Batch, b.p.cfg.Quarantine, key, b.records, lanes.HeldView[Hold]{
		Unit: "key",
		Mark: func(j int) (isCopy, drop bool, epoch int64) {
			d, known := b.held.Records[b.checked[j].id]
			return known && d.Copy, known && d.Drop, d.Epoch
		},
		State: func(h Hold) (string, bool, int64) { return h.State.String(), h.State == Draining, h.Epoch },
	})
}
