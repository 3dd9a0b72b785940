package kafka

import (
	"time"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Outcome is what became of one record of a batch (lanes.Outcome).
type Outcome = lanes.Outcome

// The outcomes. Only Succeeded, DeadLettered, Parked and Dropped count as
// completed; every other outcome puts the record in the response's
// BatchItemFailures.
const (
	// Succeeded: the handler returned nil.
	Succeeded = lanes.Succeeded
	// DeadLettered: the handler returned a permanent error and
	// Config.DeadLetter stored the record.
	DeadLettered = lanes.DeadLettered
	// Failed: the handler returned an error (or a permanent error that
	// could not be dead-lettered), or the record was refused before it ran
	// (its partition count, see Config.PartitionCount).
	Failed = lanes.Failed
	// Panicked: the handler panicked or called runtime.Goexit, or code the
	// processor called for the record did (see PanicError.In). A record
	// whose lane key function panicked has this outcome without having run.
	Panicked = lanes.Panicked
	// SkippedAfterFailure: an earlier record of the same lane failed (or,
	// after a lane key function's panic, an earlier record of the same
	// partition).
	SkippedAfterFailure = lanes.SkippedAfterFailure
	// SkippedStopped: StopOnFirstFailure is set and a record failed before
	// this one could start.
	SkippedStopped = lanes.SkippedStopped
	// SkippedDeadline: too little time remained before the deadline, or the
	// context was done, before the record, or an earlier record of its
	// lane, could start.
	SkippedDeadline = lanes.SkippedDeadline
	// Parked: the record's key is quarantined (see Config.Quarantine); the
	// record was parked in order under its key's hold, to be redriven. It
	// may have run first: a permanent failure, or a failure that reached
	// the threshold, parks the record that failed.
	Parked = lanes.Parked
	// Dropped: the quarantine recognised the record as a copy of one
	// already processed, discarded or parked, or as a redelivery of a
	// record parked before, so it did not run.
	Dropped = lanes.Dropped
)

// RecordMetrics is what the metrics hook learns of one record.
type RecordMetrics struct {
	TopicPartition string
	Offset         int64
	Outcome        Outcome
	// Wait is the time from the start of Process until the handler
	// started: the wait for earlier records of the lane and for a free
	// lane slot. Zero if the handler never started.
	Wait time.Duration
	// Duration is how long the handler ran; zero if it never started.
	Duration time.Duration
}

// BatchMetrics is what the metrics hook learns of one batch.
type BatchMetrics struct {
	Records  []RecordMetrics // in topic-partition, then offset order
	Lanes    int             // number of lanes: (partition, key) pairs, and each partition's null-key lane
	Duration time.Duration   // from the start of Process until every handler had returned
}

// Count returns how many records of the batch had outcome o.
func (b BatchMetrics) Count(o Outcome) int {
	return lanes.CountOutcome(b.Records, func(m *RecordMetrics) Outcome { return m.Outcome }, o)
}
