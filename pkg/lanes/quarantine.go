package lanes

import (
	"context"
	"errors"
	"fmt"
)

// The quarantine's steps that are the same for every processor: a
// processor's quarantine holds a key (an SQS message group, a Kafka key
// of a topic) with a hold of its own type H, and calls it through the
// functions here, which decide and log the items of each call.

// CheckQuarantine calls check, the quarantine's read of the batch's
// holds, on the processor's own goroutine (Guard), before any lane
// starts. An error, or a panic or runtime.Goexit in check, comes back
// wrapped as the quarantine check's.
func CheckQuarantine[V any](b *Batch, check func() (V, error)) (V, error) {
	var view V
	var err error
	if pe := Guard(PanicInQuarantine, func() { view, err = check() }); pe != nil {
		err = pe
	}
	if err != nil {
		var none V
		return none, fmt.Errorf("%s: quarantine check: %w", b.e.say.name, err)
	}
	return view, nil
}

// Quarantine is a processor's quarantine as a held lane calls it: Park
// parks items of a key K (of type T) in lane order, Done records that a
// redriven copy ran; both return the key's hold H afterwards. pkg/fifo's
// and pkg/kafka's Quarantine are one each.
type Quarantine[K, T, H any] interface {
	Park(ctx context.Context, key K, items []*T, cause error, hold bool) (H, error)
	Done(ctx context.Context, key K, item *T) (H, error)
}

// Held is the quarantine's side of one key's lane: a processor's lane
// under a hold calls Park, Rehold and Done, which make the quarantine's
// calls and settle, and log, the items of each.
type Held[K, T, H any] struct {
	HeldView[H]
	b     *Batch
	ctx   context.Context
	q     Quarantine[K, T, H]
	key   K
	items []T
}

// HeldView is what a held lane reads of the quarantine's view and of its
// holds, in the processor's terms.
type HeldView[H any] struct {
	// Unit is what the quarantine holds ("group", "key").
	Unit string
	// Mark returns what the view says of item j: a redriven copy of epoch,
	// or an item to drop.
	Mark func(j int) (isCopy, drop bool, epoch int64)
	// State returns a hold's state, as logged ("held", "draining"), and
	// whether it is draining under epoch.
	State func(h H) (name string, draining bool, epoch int64)
}

// HeldLane returns the quarantine's side of key's lane in b, whose items
// are items, under the handlers' context.
func HeldLane[K, T, H any](b *Batch, q Quarantine[K, T, H], key K, items []T, view HeldView[H]) Held[K, T, H] {
	return Held[K, T, H]{HeldView: view, b: b, ctx: b.Context(), q: q, key: key, items: items}
}

// Park parks item i and the items after it in its lane that cannot run
// under the hold that results, in one call, holding the key because of
// cause if holdIt: with the key held, every later item (copies are
// dropped, their parked items stay); with it draining, those up to the
// next copy of its epoch, which runs. Parked items are noted with cause
// (the first) or the hold's state (the others); if parking fails they
// fail. It returns the hold after parking and Pending, or, when parking
// failed, hold and what the rest of the lane becomes.
func (q Held[K, T, H]) Park(i int, hold H, cause error, holdIt bool) (H, Outcome) {
	b := q.b
	// The hold that results, as far as choosing the items goes.
	state, draining, drainingEpoch := "held", false, int64(0)
	if !holdIt {
		state, draining, drainingEpoch = q.State(hold)
	}
	note := "its " + q.Unit + " is " + state
	idx := []int{i}
	for j := b.Plan.Next(i); j >= 0; j = b.Plan.Next(j) {
		isCopy, drop, epoch := q.Mark(j)
		if isCopy && draining && epoch == drainingEpoch {
			break // a copy of the epoch: what follows waits for it to run, or to hold the key again
		}
		if !isCopy && !drop {
			idx = append(idx, j)
		} // else decided by the lane when it gets there
	}
	settle := func(err error) {
		for _, j := range idx {
			r := &b.Results[j]
			r.Park = false
			switch {
			case err != nil:
				if r.Outcome == Pending {
					r.Outcome = Failed
				}
				r.Err = errors.Join(r.Err, fmt.Errorf("%s: park: %w", b.e.say.name, err))
			case j == i && cause != nil:
				r.Outcome, r.Note = Parked, cause.Error()
			default:
				r.Outcome, r.Note = Parked, note
			}
			b.LogOutcome(j) // for an item that ran, a second line: its parking
		}
	}
	got, err := CallQuarantine(func() (H, error) { return q.q.Park(q.ctx, q.key, Pointers(q.items, idx), cause, holdIt) }, settle)
	if err != nil {
		return hold, SkippedAfterFailure
	}
	settle(nil)
	return got, Pending
}

// Rehold puts the key back on hold because of cause, the redriven copy i
// having failed again, reached the threshold or come out of order (note
// says which): its parked item stays parked, and the copy is Parked (or
// Failed, if the call fails). It returns what Park does.
func (q Held[K, T, H]) Rehold(i int, hold H, cause error, note string) (H, Outcome) {
	b := q.b
	r := &b.Results[i]
	got, err := CallQuarantine(func() (H, error) { return q.q.Park(q.ctx, q.key, nil, cause, true) }, func(err error) {
		if r.Outcome == Pending {
			r.Outcome = Failed
		}
		r.Park, r.Err = false, errors.Join(r.Err, fmt.Errorf("%s: re-hold: %w", b.e.say.name, err))
		b.LogOutcome(i)
	})
	if err != nil {
		return hold, SkippedAfterFailure
	}
	r.Outcome, r.Park, r.Note = Parked, false, note+cause.Error()
	b.LogOutcome(i)
	return got, Pending
}

// Done records that the redriven copy i ran. If that cannot be recorded
// the copy fails, and is delivered again, and runs again: its parked item
// must not stay parked after it ran, nor run after a later item. It
// returns what Park does.
func (q Held[K, T, H]) Done(i int, hold H) (H, Outcome) {
	b := q.b
	r := &b.Results[i]
	got, err := CallQuarantine(func() (H, error) { return q.q.Done(q.ctx, q.key, &q.items[i]) }, func(err error) {
		r.Outcome, r.Err = Failed, fmt.Errorf("%s: the redriven copy ran, but recording it failed: %w", b.e.say.name, err)
		b.LogOutcome(i)
	})
	if err != nil {
		return hold, SkippedAfterFailure
	}
	return got, Pending
}

// Pointers returns pointers to the items idx of items, in idx's order (nil
// for none): the items a quarantine's call names.
func Pointers[T any](items []T, idx []int) []*T {
	if len(idx) == 0 {
		return nil
	}
	out := make([]*T, len(idx))
	for k, j := range idx {
		out[k] = &items[j]
	}
	return out
}

// CallQuarantine calls f, which calls a method of the quarantine on a
// lane, and returns its result and error, or a panic in it as a
// *PanicError. failed is called with the error before CallQuarantine
// returns it, to decide the items of the call as failed. If f ends the
// goroutine with runtime.Goexit, failed is called with that as the error
// (a copy whose Done never returned must not be completed); the lane's
// goroutine is then replaced (see Run.Lanes) and the rest of the lane is
// skipped.
func CallQuarantine[H any](f func() (H, error), failed func(error)) (got H, err error) {
	exited := true
	defer func() {
		if exited {
			failed(&PanicError{In: PanicInQuarantine, Value: goexitValue})
		}
	}()
	if pe := Contain(PanicInQuarantine, func() { got, err = f() }); pe != nil {
		err = pe
	}
	exited = false
	if err != nil {
		failed(err)
	}
	return got, err
}
