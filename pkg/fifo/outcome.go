package fifo

import (
	"time"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Outcome is what became of one message of a batch (lanes.Outcome).
type Outcome = lanes.Outcome

// The outcomes. Only Succeeded, DeadLettered, Parked and Dropped are
// acknowledged; every other outcome puts the message in the response's
// BatchItemFailures.
const (
	// Succeeded: the handler returned nil.
	Succeeded = lanes.Succeeded
	// DeadLettered: the handler returned a permanent error and the message
	// was sent to the dead-letter queue.
	DeadLettered = lanes.DeadLettered
	// Failed: the handler returned an error (or a permanent error that could
	// not be dead-lettered).
	Failed = lanes.Failed
	// Panicked: the handler panicked, or the dead-letter client or the
	// logger panicked while handling the message (see PanicError.In).
	Panicked = lanes.Panicked
	// SkippedAfterFailure: an earlier message of the same lane failed.
	SkippedAfterFailure = lanes.SkippedAfterFailure
	// SkippedStopped: StopOnFirstFailure is set and a message failed before
	// this one could start.
	SkippedStopped = lanes.SkippedStopped
	// SkippedDeadline: too little time remained before the deadline, or the
	// context was cancelled, before the message, or an earlier message of
	// its lane, could start.
	SkippedDeadline = lanes.SkippedDeadline
	// Parked: the message's group is quarantined (see Config.Quarantine); the
	// message was parked in order under its group's hold, to be redriven.
	// It may have run first: a permanent failure parks the message that
	// failed.
	Parked = lanes.Parked
	// Dropped: the quarantine recognised the message as a copy of one
	// already processed, discarded or parked, so it did not run.
	Dropped = lanes.Dropped
)

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
	return lanes.CountOutcome(b.Messages, func(m *MessageMetrics) Outcome { return m.Outcome }, o)
}
