package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Quarantine keeps the keys of a topic whose records cannot be processed,
// with every later record of those keys, until an operator redrives them
// in their original order. pkg/quarantine implements it on DynamoDB; the
// processor only follows what it says. It is pkg/fifo's Quarantine in
// Kafka's terms: a held key is a key of a topic (a TopicKey), a parked
// record's sequence is its offset in its partition, and, as a Kafka
// record has no receive count, the quarantine counts each key's failed
// attempts itself (Failed).
//
// The processor calls Check once per batch, before any handler runs, with
// the batch's records that have a lane key; Park, Done and Failed as the
// lanes run. Lambda runs one batch of a partition at a time, so for a given
// key of a partition these calls come one at a time, in lane order; only an
// operator's redrive changes a hold in between.
type Quarantine interface {
	// Check returns the holds of the records' keys and what to do with
	// the records that are redriven copies or were parked before: one
	// consistent read for the whole batch. An error fails every record of
	// the batch that has a key: without the holds none of them may run.
	// (Records without a key, in their partition's null-key lane, are not
	// quarantined and run as they would without it.)
	Check(ctx context.Context, recs []KeyedRecord) (QuarantineView, error)
	// Park stores recs, records of key in lane order (all of one
	// partition), as parked, and returns the key's hold afterwards. With
	// hold set, the key is put (back) on hold because of cause: recs[0]
	// failed, reached the threshold or carries another partition count.
	// With hold set and no recs, a redriven copy failed again or reached the
	// threshold: its own parked record stays parked, and the key is held
	// again. Without hold, the key is already held or draining and recs
	// join what is parked. Parking a record already parked changes
	// nothing, so a redelivered record is never counted twice.
	Park(ctx context.Context, key TopicKey, recs []*Record, cause error, hold bool) (Hold, error)
	// Done records that the redriven copy rec was processed, so its parked
	// record is no longer parked, and returns the key's hold afterwards:
	// released (NotHeld) when nothing is left parked.
	Done(ctx context.Context, key TopicKey, rec *Record) (Hold, error)
	// Failed records that rec, of key, failed once more (cause), and
	// returns the key's attempts afterwards: one more than hold.Attempts
	// when those are rec's, else rec's first. hold is the key's hold as the
	// processor knows it (Check's, then each call's): the write is
	// conditional on it, so that counting costs no read of its own, and a
	// Quarantine whose write is refused reads the record anew and writes
	// again, so the count never depends on hold being current.
	Failed(ctx context.Context, key TopicKey, hold Hold, rec *Record, cause error) (Attempts, error)
}

// TopicKey is what a quarantine holds: a key of a topic, as the lane key
// (Config.LaneKey) gives it. Its records in two partitions are one held
// key; the hold records the partition its records were parked from.
type TopicKey struct {
	Topic string
	Key   string
}

// KeyedRecord is a record Check is given, with its key.
type KeyedRecord struct {
	Key    TopicKey
	Record *Record
}

// HoldState is the state of a key's hold.
type HoldState uint8

// The states of a hold.
const (
	// NotHeld: the key's records run.
	NotHeld HoldState = iota
	// Held: the key's records are parked, in order, until a redrive.
	Held
	// Draining: a redrive is sending the parked records back; the copy of
	// the oldest parked record (Hold.Next) runs, every other record of the
	// key is parked after them.
	Draining
)

var holdStates = [...]string{NotHeld: "not_held", Held: "held", Draining: "draining"}

func (s HoldState) String() string {
	if int(s) < len(holdStates) {
		return holdStates[s]
	}
	return "unknown"
}

// Hold is a key's hold as the processor needs it.
type Hold struct {
	State HoldState
	// Epoch is the current redrive's epoch while Draining.
	Epoch int64
	// Next is, while Draining, the offset of the key's oldest parked
	// record: only its copy (the copy whose Disposition.Of is Next) may
	// run. A copy of the epoch that stands for another record arrived
	// before the copy of an older one, which was lost on the way; running
	// it would pass that record, so the key is held again instead
	// (ErrCopyOutOfOrder).
	Next int64
	// Partition is, while Held or Draining, the partition the key's parked
	// records were read from. A record of the key read from another
	// partition (the topic's partition count changed, so the key moved) is
	// refused (ErrKeyMovedPartition): its offset is of another partition's
	// sequence, so it can be neither parked in order nor run.
	Partition int64
	// Attempts are the failed attempts of the key's most recent failing
	// record, whatever the state.
	Attempts Attempts
}

// Attempts counts the failed attempts of one record of a key: what takes
// the place of SQS's ApproximateReceiveCount.
type Attempts struct {
	Partition int64
	Offset    int64
	// Failed is how many attempts of the record at Partition and Offset
	// failed: 0 when the key has failed nothing (then Partition and Offset
	// mean nothing).
	Failed int
	// Cause is why its last attempt failed.
	Cause string
}

// Of returns how many attempts of rec failed: a.Failed when a counts rec,
// else 0.
func (a Attempts) Of(rec *Record) int {
	if a.Failed > 0 && a.Partition == rec.Partition && a.Offset == rec.Offset {
		return a.Failed
	}
	return 0
}

// Disposition says what to do with a record Check recognised.
type Disposition struct {
	// Copy: the record is a redriven copy, under Epoch, of the parked
	// record at offset Of (of the hold's partition), whose parked record
	// still waits. It runs if its key is draining under that epoch and Of
	// is the hold's Next; otherwise it is dropped (its parked record
	// stays), or holds the key again (out of order).
	Copy  bool
	Epoch int64
	Of    int64
	// Drop, with Reason: complete the record without running it. It is a
	// copy of a record already processed or discarded, or a redelivery of
	// a record that was parked before.
	Drop   bool
	Reason string
}

// QuarantineView is what Check returns.
type QuarantineView struct {
	Holds map[TopicKey]Hold // a key not in it is NotHeld and has failed nothing
	// Records holds the dispositions of the records Check recognised;
	// every other record is an ordinary record.
	Records map[ItemIdentifier]Disposition
}

// MinQuarantineThreshold is the smallest Config.QuarantineThreshold: a
// record is delivered once before it can fail.
const MinQuarantineThreshold = 2

// PartitionCountHeader is the header in which a producer writes the
// partition count its partitioner used for the record (decimal): the
// relay's (internal/app/outbox/kafkaout) does. A consumer with
// Config.PartitionCount refuses to run a record that carries another
// count, whose key may have moved partition.
const PartitionCountHeader = "fifoworker-partitions"

var (
	// ErrQuarantineThreshold is the cause a key is held with when a record
	// failed as often as the quarantine threshold allows.
	ErrQuarantineThreshold = errors.New("kafka: the record reached the quarantine threshold of attempts")
	// ErrCopyOutOfOrder is the cause a draining key is held again with
	// when a redriven copy arrives while an older record of the key is
	// still parked (see Hold.Next).
	ErrCopyOutOfOrder = errors.New("kafka: a redriven copy arrived while an older record of its key is still parked (that record's copy was lost)")
	// ErrPartitionCountChanged means the record carries a partition count
	// (PartitionCountHeader) other than Config.PartitionCount. Its key may
	// be in another partition than its earlier records, which may not have
	// run yet: it is held (with a quarantine) or fails (without one), and
	// never runs out of order.
	ErrPartitionCountChanged = errors.New("kafka: the record was partitioned over another partition count than the topic's (the topic's partitions changed: its key may have moved)")
	// ErrKeyMovedPartition means a record of a held key was read from another
	// partition than the hold's. It fails (and is delivered again, and
	// given up by the mapping's MaximumRetryAttempts) rather than run or be
	// parked out of order.
	ErrKeyMovedPartition = errors.New("kafka: a record of a held key came from another partition than the hold's (the topic's partitions changed)")
)

// checkPartitionCount returns why rec may not run under the configured
// count n, or nil: a PartitionCountHeader that is not n. A record without
// the header (not the relay's) is not checked.
func checkPartitionCount(rec *Record, n int) error {
	if n == 0 {
		return nil
	}
	for i := len(rec.Headers) - 1; i >= 0; i-- {
		h := &rec.Headers[i]
		if h.Key != PartitionCountHeader {
			continue
		}
		got, err := strconv.Atoi(string(h.Value))
		if err != nil {
			return fmt.Errorf("%w: its %s header %q is not a number", ErrPartitionCountChanged, PartitionCountHeader, h.Value)
		}
		if got != n {
			return fmt.Errorf("%w: partitioned over %d, the topic has %d (Config.PartitionCount)", ErrPartitionCountChanged, got, n)
		}
		return nil
	}
	return nil
}
