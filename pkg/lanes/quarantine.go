package lanes

import (
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

// ToPark returns the items to park with item i: i, then the later items of
// its lane up to the first for which stop says so, less those skip names
// (items the lane decides on its own when it gets there).
func (b *Batch) ToPark(i int, stop, skip func(j int) bool) []int {
	idx := []int{i}
	for j := b.Plan.Next(i); j >= 0; j = b.Plan.Next(j) {
		if stop(j) {
			break
		}
		if !skip(j) {
			idx = append(idx, j)
		}
	}
	return idx
}

// Park settles the items idx (idx[0] the item the call is for) after
// park, the quarantine's call that parks them: Parked, with cause as the
// first's note and note as the others', or Failed with park's error. It
// returns the hold park returned and Pending, or, when parking failed,
// hold and what the rest of the lane becomes.
func Park[H any](b *Batch, idx []int, hold H, cause error, note string, park func() (H, error)) (H, Outcome) {
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
			case j == idx[0] && cause != nil:
				r.Outcome, r.Note = Parked, cause.Error()
			default:
				r.Outcome, r.Note = Parked, note
			}
			b.LogOutcome(j) // for an item that ran, a second line: its parking
		}
	}
	got, err := CallQuarantine(park, settle)
	if err != nil {
		return hold, SkippedAfterFailure
	}
	settle(nil)
	return got, Pending
}

// Rehold settles the redriven copy i after park, the quarantine's call
// that holds its key again because of cause (the copy failed again,
// reached the threshold or came out of order): its parked item stays
// parked, and the copy is Parked with note and cause as its note, or
// Failed with park's error. It returns what Park does.
func Rehold[H any](b *Batch, i int, hold H, cause error, note string, park func() (H, error)) (H, Outcome) {
	r := &b.Results[i]
	got, err := CallQuarantine(park, func(err error) {
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

// Done settles the redriven copy i, which ran, after done, the
// quarantine's call that records it. If that fails the copy fails, and is
// delivered again, and runs again: its parked item must not stay parked
// after it ran, nor run after a later item. It returns what Park does.
func Done[H any](b *Batch, i int, hold H, done func() (H, error)) (H, Outcome) {
	r := &b.Results[i]
	got, err := CallQuarantine(done, func(err error) {
		r.Outcome, r.Err = Failed, fmt.Errorf("%s: the redriven copy ran, but recording it failed: %w", b.e.say.name, err)
		b.LogOutcome(i)
	})
	if err != nil {
		return hold, SkippedAfterFailure
	}
	return got, Pending
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
