package fifo

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Quarantine keeps a FIFO queue's groups whose messages cannot be processed,
// with every later message of those groups, until an operator redrives them
// in their original order. pkg/quarantine implements it on DynamoDB; the
// processor only follows what it says.
//
// The processor calls Check once per batch, before any handler runs, with
// the batch's messages that belong to a group; Park and Done as the lanes
// run. A group's batches never overlap (SQS's group lock), so for a given
// group these calls come one at a time, in lane order; only an operator's
// redrive changes a hold in between.
type Quarantine interface {
	// Check returns the holds of the messages' groups and what to do with
	// the messages that are redriven copies or were parked before: one
	// consistent read for the whole batch. An error fails every message
	// of the batch that has a group: without the holds none of them may
	// run. (Messages without a group, of a standard queue, are not
	// quarantined and run as they would without it.)
	Check(ctx context.Context, msgs []*events.SQSMessage) (QuarantineView, error)
	// Park stores msgs, messages of group in lane order, as parked, and
	// returns the group's hold afterwards. With hold set, the group is put
	// (back) on hold because of cause: msgs[0] failed, reached the
	// threshold. With hold set and no msgs, a redriven copy failed again or
	// reached the threshold: its own parked message stays parked, and the
	// group is held again. Without
	// hold, the group is already held or draining and msgs join what is
	// parked. Parking a message already parked changes nothing, so a
	// retried batch never counts a message twice.
	Park(ctx context.Context, group string, msgs []*events.SQSMessage, cause error, hold bool) (Hold, error)
	// Done records that the redriven copy msg was processed, so its parked
	// message is no longer parked, and returns the group's hold afterwards:
	// released (NotHeld) when nothing is left parked.
	Done(ctx context.Context, group string, msg *events.SQSMessage) (Hold, error)
}

// HoldState is the state of a group's hold.
type HoldState uint8

// The states of a hold.
const (
	// NotHeld: the group's messages run.
	NotHeld HoldState = iota
	// Held: the group's messages are parked, in order, until a redrive.
	Held
	// Draining: a redrive is sending the parked messages back; copies of
	// the current epoch run, every other message is parked after them.
	Draining
)

func (s HoldState) String() string {
	switch s {
	case NotHeld:
		return "not_held"
	case Held:
		return "held"
	case Draining:
		return "draining"
	}
	return "unknown"
}

// Hold is a group's hold as the processor needs it.
type Hold struct {
	State HoldState
	// Epoch is the current redrive's epoch while Draining.
	Epoch int64
	// Next names, while Draining, the group's oldest parked message: only
	// its copy (the copy whose Disposition.Key is Next) may run. A copy of
	// the epoch that names another message arrived before the copy of an
	// older one, which was lost on the way (SQS dead-lettered it after
	// the quarantine's store failed to take it back, say); running it
	// would pass that message, so the group is held again instead
	// (ErrCopyOutOfOrder). A Quarantine that leaves Next and every Key
	// empty does not order its copies.
	Next string
}

// Disposition says what to do with a message Check recognised.
type Disposition struct {
	// Copy: the message is a redriven copy of a parked message under Epoch,
	// whose parked message still waits. It runs if its group is draining
	// under that epoch; otherwise it is dropped (its parked message stays).
	Copy  bool
	Epoch int64
	// Key names the parked message the copy stands for, as Hold.Next does.
	Key string
	// Drop, with Reason: acknowledge the message without running it. It is
	// a copy of a message already processed or discarded, or a redelivery
	// of a message that was parked before.
	Drop   bool
	Reason string
}

// QuarantineView is what Check returns.
type QuarantineView struct {
	Holds map[string]Hold // by group; a group not in it is NotHeld
	// Messages holds the dispositions of the messages Check recognised, by
	// message id; every other message is an ordinary message.
	Messages map[string]Disposition
}

// ErrQuarantineThreshold is the cause a group is held with when a message
// reached the quarantine threshold before it ran.
var ErrQuarantineThreshold = errors.New("fifo: the message reached the quarantine threshold of receives")

// ErrCopyOutOfOrder is the cause a draining group is held again with when
// a redriven copy arrives while an older message of the group is still
// parked (see Hold.Next).
var ErrCopyOutOfOrder = errors.New("fifo: a redriven copy arrived while an older message of its group is still parked (that message's copy was lost, or is in the dead-letter queue)")

// Prepare reads the holds of the batch's groups, once, before any lane
// starts (lanes.Preparer).
func (b *batch) Prepare(ctx context.Context) {
	q := b.p.cfg.Quarantine
	if q == nil {
		return
	}
	var msgs []*events.SQSMessage
	for i := range b.records {
		if b.records[i].Attributes[groupAttribute] != "" {
			msgs = append(msgs, &b.records[i])
		}
	}
	if len(msgs) == 0 {
		return
	}
	b.held, b.heldErr = lanes.CheckQuarantine(&b.Batch, func() (QuarantineView, error) { return q.Check(ctx, msgs) })
}

// quarantined reports whether message i's lane runs under the quarantine.
func (b *batch) quarantined(i int) bool {
	return b.p.cfg.Quarantine != nil && b.records[i].Attributes[groupAttribute] != ""
}

// RunHeldLane runs a lane of a quarantined group (lanes.HeldLaner).
func (b *batch) RunHeldLane(head int) { b.runQuarantinedLane(head) }

// runQuarantinedLane runs a group's lane under its hold, following the
// hold as it changes: a message that fails permanently or has reached the
// threshold holds the group and parks itself and the rest of the lane; the
// redriven copy of the group's oldest parked message runs, and its success
// can release the hold, after which the lane's later messages run.
func (b *batch) runQuarantinedLane(head int) {
	group := b.records[head].Attributes[groupAttribute]
	if b.heldErr != nil {
		for i := head; i >= 0; i = b.Plan.Next(i) {
			b.Results[i].Outcome, b.Results[i].Err = Failed, b.heldErr
			b.LogOutcome(i)
		}
		return
	}
	threshold := b.p.cfg.QuarantineThreshold
	q := b.heldLane(group)
	hold := b.held.Holds[group]
	rest := pending
	for i := head; i >= 0; i = b.Plan.Next(i) {
		r, msg := &b.Results[i], &b.records[i]
		d, known := b.held.Messages[msg.MessageId]
		current := known && d.Copy && hold.State == Draining && hold.Epoch == d.Epoch
		runnable := current && hold.Next == d.Key
		switch {
		case r.Outcome != pending:
			continue // parked or dropped with an earlier message
		case rest != pending:
			r.Outcome = rest
		case known && d.Drop:
			r.Outcome, r.Note = Dropped, d.Reason
		case current && !runnable:
			// Its parked message stays parked, for the next redrive to
			// send again after the older one.
			cause := fmt.Errorf("%w: the copy of %s came while %s is parked", ErrCopyOutOfOrder, d.Key, cmp.Or(hold.Next, "a message the hold does not name"))
			hold, rest = q.Rehold(i, hold, cause, "redriven copy out of order: ")
			continue // rehold logged it
		case known && d.Copy && !runnable:
			r.Outcome = Dropped
			r.Note = fmt.Sprintf("redriven copy of epoch %d while the group is %s (epoch %d): its parked message stays parked", d.Epoch, hold.State, hold.Epoch)
		case !runnable && hold.State != NotHeld:
			hold, rest = q.Park(i, hold, nil, false)
			continue // park logged it
		case receiveCount(msg) >= threshold:
			cause := fmt.Errorf("%w (%d receives, threshold %d)", ErrQuarantineThreshold, receiveCount(msg), threshold)
			if runnable {
				hold, rest = q.Rehold(i, hold, cause, "redriven copy failed again: ")
			} else {
				hold, rest = q.Park(i, hold, cause, true)
			}
			continue // park or rehold logged it
		case b.Stopped():
			// The rest of the lane is skipped too, parked messages
			// included: a message parked while an earlier one of its
			// group is received again could be redriven, and run, first.
			r.Outcome, rest = SkippedStopped, SkippedStopped
		case !b.MayStart(i):
			r.Outcome, rest = SkippedDeadline, SkippedDeadline
		default:
			b.RunItem(i, nil)
			switch {
			case r.Outcome == Succeeded && runnable:
				hold, rest = q.Done(i, hold)
			case r.Outcome == Failed && r.Park && runnable:
				hold, rest = q.Rehold(i, hold, r.Err, "redriven copy failed again: ")
			case r.Outcome == Failed && r.Park:
				hold, rest = q.Park(i, hold, r.Err, true)
			case !r.Outcome.Acknowledged():
				rest = SkippedAfterFailure
			}
			continue // RunItem logged it, and so did park
		}
		b.LogOutcome(i) // decided without running
	}
}

// heldLane is the quarantine's side of a group's lane.
type heldLane = lanes.Held[string, events.SQSMessage, Hold]

// heldLane returns the quarantine's side of group's lane.
func (b *batch) heldLane(group string) heldLane {
	return lanes.HeldLane(&b.Batch, b.p.cfg.Quarantine, group, b.records, lanes.HeldView[Hold]{
		Unit: "group",
		Mark: func(j int) (isCopy, drop bool, epoch int64) {
			d, known := b.held.Messages[b.records[j].MessageId]
			return known && d.Copy, known && d.Drop, d.Epoch
		},
		State: func(h Hold) (string, bool, int64) { return h.State.String(), h.State == Draining, h.Epoch },
	})
}
