package fifo

import "time"

// Outcome is what became of one message of a batch.
type Outcome uint8

// The outcomes. Only Succeeded and DeadLettered are acknowledged; every
// other outcome puts the message in the response's BatchItemFailures.
const (
	// Succeeded: the handler returned nil.
	Succeeded Outcome = iota
	// DeadLettered: the handler returned a permanent error and the message
	// was sent to the dead-letter queue.
	DeadLettered
	// Failed: the handler returned an error (or a permanent error that could
	// not be dead-lettered).
	Failed
	// Panicked: the handler panicked, or the dead-letter client or the
	// logger panicked while handling the message (see PanicError.In).
	Panicked
	// SkippedAfterFailure: an earlier message of the same lane failed.
	SkippedAfterFailure
	// SkippedStopped: StopOnFirstFailure is set and a message failed before
	// this one could start.
	SkippedStopped
	// SkippedDeadline: too little time remained before the deadline, or the
	// context was cancelled, before the message, or an earlier message of
	// its lane, could start.
	SkippedDeadline
	// Parked: the message's group is quarantined (see Config.Quarantine); the
	// message was parked in order under its group's hold, to be redriven.
	// It may have run first: a permanent failure parks the message that
	// failed.
	Parked
	// Dropped: the quarantine recognised the message as a copy of one
	// already processed, discarded or parked, so it did not run.
	Dropped
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	Succeeded:           "succeeded",
	DeadLettered:        "dead_lettered",
	Failed:              "failed",
	Panicked:            "panicked",
	SkippedAfterFailure: "skipped_after_failure",
	SkippedStopped:      "skipped_stopped",
	SkippedDeadline:     "skipped_deadline",
	Parked:              "parked",
	Dropped:             "dropped",
}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// Acknowledged reports whether the message is left out of BatchItemFailures,
// so that Lambda deletes it from the queue.
func (o Outcome) Acknowledged() bool {
	return o == Succeeded || o == DeadLettered || o == Parked || o == Dropped
}

// Started reports whether the outcome is one only a handler that ran can
// have. A Parked message may have run too (its Duration says so).
func (o Outcome) Started() bool { return o <= Panicked }

// MessageMetrics is what the metrics hook learns of one message.
type MessageMetrics struct {
	MessageID    string
	GroupID      string // empty for a message of a standard queue
	ReceiveCount int    // ApproximateReceiveCount, 0 if absent
	Outcome      Outcome
	// Wait is the time from the start of Process until the handler started:
	// the wait for earlier messages of the lane and for a free lane slot.
	// Zero if the handler never started.
	Wait time.Duration
	// Duration is how long the handler ran; zero if it never started.
	Duration time.Duration
}

// BatchMetrics is what the metrics hook learns of one batch.
type BatchMetrics struct {
	Messages []MessageMetrics // in batch order
	Lanes    int              // number of lanes (groups, plus one per message without a group)
	Duration time.Duration    // from the start of Process until every handler had returned
}

// Count returns how many messages of the batch had outcome o.
func (b BatchMetrics) Count(o Outcome) int {
	n := 0
	for i := range b.Messages {
		if b.Messages[i].Outcome == o {
			n++
		}
	}
	return n
}
