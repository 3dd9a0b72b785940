package quarantine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The rules both stores apply, written once: what a hold becomes when
// messages are parked, unparked or redriven.

// checkPark validates a Park call's arguments.
func checkPark(queue, group string, items []Parked) error {
	if queue == "" || group == "" {
		return errors.New("quarantine: park without a queue or a group")
	}
	for i, p := range items {
		if _, err := SeqKey(p.Sequence); err != nil || len(p.Sequence) != seqWidth {
			return fmt.Errorf("quarantine: park: item %d: sequence %q is not a sequence key", i, p.Sequence)
		}
		if i > 0 && items[i-1].Sequence >= p.Sequence {
			return fmt.Errorf("quarantine: park: items are not in increasing sequence order at %d", i)
		}
		if p.Group != "" && p.Group != group {
			return fmt.Errorf("quarantine: park: item %d belongs to group %q, not %q", i, p.Group, group)
		}
		if err := checkKafkaItem(items, i); err != nil {
			return err
		}
	}
	return nil
}

// parkCall is one Park call's arguments, which every store's Park takes
// through the same steps: begin, then, for each hold it reads, apply.
type parkCall struct {
	queue, group string
	items        []Parked
	hold         bool
	cause        string
	now          time.Time
}

// begin is what a store's Park does before it reads anything: it returns
// the context's error and checkPark's as they are, then runs the store's
// own check of the items (check; nil: none), whose error, as every later
// one of the call, fail wraps with the call's operation.
func (c parkCall) begin(ctx context.Context, check func([]Parked) error) (fail func(error) (HoldRecord, error), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPark(c.queue, c.group, c.items); err != nil {
		return nil, err
	}
	fail = func(err error) (HoldRecord, error) {
		return HoldRecord{}, fmt.Errorf("quarantine: park %d messages of group %q of %s: %w", len(c.items), c.group, c.queue, err)
	}
	if check != nil {
		if err := check(c.items); err != nil {
			_, err = fail(err)
			return nil, err
		}
	}
	return fail, nil
}

// apply runs the park's rules on hold h (ok: it exists), stored saying
// which items are parked already: fresh is the others, stamped parked by
// the call's queue and group at its now, and next the hold after them.
// write false: there is nothing to write, and h is the answer.
func (c parkCall) apply(h HoldRecord, ok bool, stored func(seq string) bool) (next HoldRecord, fresh []Parked, write bool, err error) {
	if err := parkConflict(h, ok, c.items); err != nil {
		return HoldRecord{}, nil, false, err
	}
	for _, p := range c.items {
		if !stored(p.Sequence) {
			p.Queue, p.Group, p.Status, p.ParkedAt, p.UpdatedAt = c.queue, c.group, StatusParked, c.now, c.now
			fresh = append(fresh, p)
		}
	}
	if nothingToHold(h, ok, fresh) {
		return h, fresh, false, nil
	}
	return parkedHold(h, ok, c.queue, c.group, fresh, c.hold, c.cause, c.now), fresh, true, nil
}

// checkKafkaItem checks that items[i] is a Kafka record if and only if
// items[0] is, and then of items[0]'s partition: one Park is one lane.
func checkKafkaItem(items []Parked, i int) error {
	p := items[i]
	if (p.Kafka == nil) != (items[0].Kafka == nil) {
		return fmt.Errorf("quarantine: park: item %d is a Kafka record and item 0 is not, or the other way round", i)
	}
	if p.Kafka == nil {
		return nil
	}
	part, _, ok := KafkaPosition(p.Sequence)
	first, _, _ := KafkaPosition(items[0].Sequence)
	switch {
	case !ok:
		return fmt.Errorf("quarantine: park: item %d: sequence %q is not a Kafka record's (KafkaSeq)", i, p.Sequence)
	case part != first:
		return fmt.Errorf("quarantine: park: item %d is of partition %d, item 0 of partition %d", i, part, first)
	}
	return nil
}

// parkConflict says why items (checked by checkPark) may not be parked
// under hold h (ok: it exists), or nil: Kafka records of another partition
// than a held or draining hold's, whose offsets are of another sequence.
func parkConflict(h HoldRecord, ok bool, items []Parked) error {
	if !ok || h.State == StateReleased || len(items) == 0 || items[0].Kafka == nil {
		return nil
	}
	held, _, _ := KafkaPosition(h.From)
	part, _, _ := KafkaPosition(items[0].Sequence)
	if held != part {
		return fmt.Errorf("quarantine: park: records of partition %d, and the key is %s from partition %d: %w", part, h.State, held, ErrOtherPartition)
	}
	return nil
}

// nothingToHold reports whether a park finds nothing to do: no message
// is new, and the group has no hold or a released one. A hold without a
// parked message would hold the group with nothing to redrive (a redriven
// copy that failed again after an operator discarded its message, say).
func nothingToHold(h HoldRecord, ok bool, fresh []Parked) bool {
	return len(fresh) == 0 && (!ok || h.State == StateReleased)
}

// parkedHold is hold h (ok: it exists) after fresh, the items not parked
// before, are parked.
func parkedHold(h HoldRecord, ok bool, queue, group string, fresh []Parked, hold bool, cause string, now time.Time) HoldRecord {
	restart := !ok || h.State == StateReleased
	if restart {
		// The epoch goes on from the released hold's, so that a copy of
		// an earlier epoch still in flight is never taken for a current one.
		h = HoldRecord{Queue: queue, Group: group, State: StateHeld, Epoch: h.Epoch, HeldAt: now, Cause: cause, Attempts: h.Attempts}
	}
	if hold {
		h.State, h.Cause = StateHeld, cause
		if !restart {
			h.HeldAt = now
		}
	}
	if h.Cause == "" {
		h.Cause = cause
	}
	// Next is lowered only when it is known: a hold with messages parked
	// but no next (written before holds kept one, or by such a version
	// during a rolling deploy) keeps none, so that the next redrive reads
	// its oldest parked message instead of naming a later one.
	known := h.Next != "" || h.Parked == 0
	h.Parked += int64(len(fresh))
	for _, p := range fresh {
		if known && (h.Next == "" || p.Sequence < h.Next) {
			h.Next = p.Sequence
		}
		if h.From == "" || p.Sequence < h.From {
			h.From = p.Sequence
		}
		if p.Sequence > h.Through {
			h.Through = p.Sequence
		}
	}
	h.UpdatedAt = now
	return h
}

// doneConflict says why the redriven copy of message seq, of epoch,
// cannot be recorded done on hold h (not released), or nil: a copy runs
// only while its group drains, and only the copy of the oldest message
// parked (a later one would pass it); a redrive begun while it ran raises
// the epoch without changing the copy's place in the group's order.
func doneConflict(h HoldRecord, seq string, epoch int64) error {
	switch {
	case h.State != StateDraining:
		return fmt.Errorf("the hold is %s, not draining: %w", h.State, ErrConflict)
	case epoch < 1 || epoch > h.Epoch:
		return fmt.Errorf("epoch %d is not one the hold has begun (it is at %d): %w", epoch, h.Epoch, ErrConflict)
	case seq != h.Next:
		return fmt.Errorf("message %s is not the oldest parked, %s is: %w", SeqNumber(seq), cmp.Or(SeqNumber(h.Next), "the hold names none (a redrive reads it)"), ErrConflict)
	}
	return nil
}

// unparkedHold is hold h after its parked message seq was done or
// discarded: released when it was the last. next is the oldest message
// parked after seq, which is the hold's next when seq was.
func unparkedHold(h HoldRecord, seq, next string, now time.Time) HoldRecord {
	h.Parked--
	if h.Next == seq {
		h.Next = next
	}
	if h.Parked <= 0 {
		h.Parked, h.State, h.Next = 0, StateReleased, ""
	}
	h.UpdatedAt = now
	return h
}

// unparkCall is one Done or Discard call's arguments, which both stores'
// unpark takes through the same steps: begin, then, for each hold it
// reads, refusal.
type unparkCall struct {
	op                string // "done" or "discard", for errors
	queue, group, seq string
	to                Status                 // the message's status after
	check             func(HoldRecord) error // the call's own rule on a hold that holds
}

// doneCall is a Done of message seq of epoch: doneConflict's rule.
func doneCall(queue, group, seq string, epoch int64) unparkCall {
	return unparkCall{op: "done", queue: queue, group: group, seq: seq, to: StatusDone,
		check: func(h HoldRecord) error { return doneConflict(h, seq, epoch) }}
}

// discardCall is a Discard of message seq: under any state but released.
func discardCall(queue, group, seq string) unparkCall {
	return unparkCall{op: "discard", queue: queue, group: group, seq: seq, to: StatusDiscarded,
		check: func(HoldRecord) error { return nil }}
}

// begin returns the context's error as it is, or fail, which wraps every
// later error of the call with its operation.
func (c unparkCall) begin(ctx context.Context) (fail func(error) (HoldRecord, error), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return func(err error) (HoldRecord, error) {
		return HoldRecord{}, fmt.Errorf("quarantine: %s message %s of group %q of %s: %w", c.op, SeqNumber(c.seq), c.group, c.queue, err)
	}, nil
}

// refusal says why the call may not unpark its message under hold h (ok:
// it exists), or nil.
func (c unparkCall) refusal(h HoldRecord, ok bool) error {
	if !ok || h.State == StateReleased {
		return fmt.Errorf("no hold, or a released one: %w", ErrNoHold)
	}
	return c.check(h)
}

// needsNext reports whether unparking message seq from hold h needs the
// oldest message parked after it: seq is the hold's next, and not its last.
func needsNext(h HoldRecord, seq string) bool {
	return h.Next == seq && h.Parked > 1
}

// redrivenHold is hold h when a redrive begins: draining under a new
// epoch, or released at once when nothing is parked. oldest is the oldest
// message parked, read when h names none (a record written before holds
// kept their next).
func redrivenHold(h HoldRecord, oldest string, now time.Time) HoldRecord {
	if h.Next == "" {
		h.Next = oldest
	}
	h.Epoch++
	h.State = StateDraining
	if h.Parked <= 0 {
		h.Parked, h.State, h.Next = 0, StateReleased, ""
	}
	h.UpdatedAt = now
	return h
}

// needsOldest reports whether a redrive of hold h must read its oldest
// parked message: h has messages parked but names none next.
func needsOldest(h HoldRecord) bool {
	return h.Next == "" && h.Parked > 0
}

// checkFailure validates a Failed call's arguments.
func checkFailure(queue, group string, f Failure) error {
	if queue == "" || group == "" {
		return errors.New("quarantine: failed without a queue or a group")
	}
	if _, err := SeqKey(f.Sequence); err != nil || len(f.Sequence) != seqWidth {
		return fmt.Errorf("quarantine: failed: sequence %q is not a sequence key", f.Sequence)
	}
	return nil
}

// failedHold is hold h (ok: it exists) after the failed attempt f: its
// Attempts one more when they count f's record, else f's first; a group
// without a record gets a released one, which holds nothing and counts.
func failedHold(h HoldRecord, ok bool, queue, group string, f Failure, now time.Time) HoldRecord {
	if !ok {
		h = HoldRecord{Queue: queue, Group: group, State: StateReleased, HeldAt: now, UpdatedAt: now}
	}
	h.Attempts = attemptsAfter(h.Attempts, f)
	return h
}

// attemptsAfter is a after the failed attempt f.
func attemptsAfter(a Attempts, f Failure) Attempts {
	n := int64(1)
	if a.Sequence == f.Sequence && a.Failed > 0 {
		n = a.Failed + 1
	}
	return Attempts{Sequence: f.Sequence, Failed: n, Cause: clip(f.Cause, maxCause)}
}

func sortHolds(hs []HoldRecord) {
	slices.SortFunc(hs, func(a, b HoldRecord) int {
		if c := a.HeldAt.Compare(b.HeldAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Group, b.Group)
	})
}
