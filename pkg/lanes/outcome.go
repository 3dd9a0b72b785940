package lanes

// Outcome is what became of one item of a batch. pkg/fifo and pkg/kafka
// name it as their own (fifo.Outcome, kafka.Outcome).
type Outcome uint8

// The outcomes. Only Succeeded, DeadLettered, Parked and Dropped are
// completed; an item with any other outcome is delivered again.
const (
	// Succeeded: the handler returned nil.
	Succeeded Outcome = iota
	// DeadLettered: the handler returned a permanent error and the
	// dead-letter store took the item.
	DeadLettered
	// Failed: the handler returned an error (or a permanent error that
	// could not be dead-lettered or parked), or the item was refused
	// before it ran.
	Failed
	// Panicked: the handler panicked or called runtime.Goexit, or code the
	// processor called for the item did (see PanicError.In).
	Panicked
	// SkippedAfterFailure: an earlier item of the same lane failed.
	SkippedAfterFailure
	// SkippedStopped: StopOnFirstFailure is set and an item failed before
	// this one could start.
	SkippedStopped
	// SkippedDeadline: too little time remained before the deadline, or the
	// context was done, before the item, or an earlier item of its lane,
	// could start.
	SkippedDeadline
	// Parked: the item's key is quarantined; the item was parked in order
	// under its key's hold, to be redriven. It may have run first: a
	// permanent failure parks the item that failed.
	Parked
	// Dropped: the quarantine recognised the item as a copy of one already
	// processed, discarded or parked, so it did not run.
	Dropped
	// Pending: not decided yet. A Batch's items are Pending until their
	// lane decides them; none is left Pending once Batch.Lanes returns.
	Pending
)

var outcomeNames = [...]string{
	Succeeded:           "succeeded",
	DeadLettered:        "dead_lettered",
	Failed:              "failed",
	Panicked:            "panicked",
	SkippedAfterFailure: "skipped_after_failure",
	SkippedStopped:      "skipped_stopped",
	SkippedDeadline:     "skipped_deadline",
	Parked:              "parked",
	Dropped:             "dropped",
	Pending:             "pending",
}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Completed reports whether the item is done with: left out of the
// response's failures, so that it is not delivered again.
func (o Outcome) Completed() bool {
	return o == Succeeded || o == DeadLettered || o == Parked || o == Dropped
}

// Acknowledged is Completed in SQS's word (pkg/fifo's): the message is
// left out of BatchItemFailures, so that Lambda deletes it.
func (o Outcome) Acknowledged() bool { return o.Completed() }

// Started reports whether the outcome is one only a handler that ran can
// have (a Parked item may have run too: its Duration says so; pkg/kafka
// also gives Panicked to a record whose lane key function panicked).
func (o Outcome) Started() bool { return o <= Panicked }

// CountOutcome returns how many of ms have outcome o, as outcome reads
// it: a processor's BatchMetrics.Count.
func CountOutcome[M any](ms []M, outcome func(*M) Outcome, o Outcome) int {
	n := 0
	for i := range ms {
		if outcome(&ms[i]) == o {
			n++
		}
	}
	return n
}
