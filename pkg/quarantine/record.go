package quarantine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// State is the state of a hold record.
type State string

// The states a hold record goes through: held when a message of its group
// fails, draining while a redrive sends the parked messages back, released
// when the last of them was processed or discarded. A released hold is
// kept (with a TTL) so that a late redelivery of a message it parked is
// recognised.
const (
	StateHeld     State = "held"
	StateDraining State = "draining"
	StateReleased State = "released"
)

// Status is the status of a parked message.
type Status string

// The statuses of a parked message. Only StatusParked counts in its hold;
// the others are kept (with a TTL) so that a late copy of the message is
// dropped rather than run.
const (
	StatusParked    Status = "parked"
	StatusDone      Status = "done"      // its redriven copy was processed
	StatusDiscarded Status = "discarded" // an operator discarded it (archived first)
)

// HoldRecord is a group's hold.
type HoldRecord struct {
	Queue string // the queue's name (the last part of its ARN or URL)
	Group string
	State State
	// Epoch is raised by each redrive; copies of an older epoch are dropped.
	Epoch int64
	// Parked counts the messages with StatusParked.
	Parked int64
	// Cause is why the group was last held.
	Cause string
	// From and Through are the first and the last sequence number parked
	// under this hold: every message of the group in that range was parked.
	From, Through string
	// Next is the sequence key of the oldest message still parked (empty
	// once released): the only one whose redriven copy may run, so that a
	// copy lost on its way (dead-lettered) is never passed by a later one.
	Next      string
	HeldAt    time.Time
	UpdatedAt time.Time
	// Attempts count the failed attempts of the group's most recent
	// failing record (Store.Failed), whatever the state: a Kafka key's
	// count, in place of SQS's receive count. Zero on SQS.
	Attempts Attempts
}

// Attempts count the failed attempts of one record of a group.
type Attempts struct {
	// Sequence is the record's sequence key; "" when nothing failed.
	Sequence string
	// Failed is how many of its attempts failed.
	Failed int64
	// Cause is why the last of them failed.
	Cause string
}

// Failure is a failed attempt Store.Failed records: of the record
// Sequence, because of Cause. Seen and SeenHeld are the group's hold's
// Attempts, and whether it was held or draining, as the caller last read
// them (Read): a store may write on the condition that they are still
// so, and must read the record anew and write again when they are not,
// so that its result never depends on them.
type Failure struct {
	Sequence string
	Cause    string
	Seen     Attempts
	SeenHeld bool
}

// MessageAttribute is one of a parked message's message attributes.
type MessageAttribute struct {
	DataType    string `json:"data_type"`
	StringValue string `json:"string_value,omitempty"`
	BinaryValue []byte `json:"binary_value,omitempty"`
}

// Parked is a parked message.
type Parked struct {
	Queue string
	Group string
	// Sequence is the message's SequenceNumber in its source queue, as a
	// sortable key (SeqKey).
	Sequence  string
	MessageID string
	// Body is the message's body; empty when it is kept in S3 under BodyKey.
	Body     string
	BodyKey  string
	BodyMD5  string // hex MD5 of the body, as SQS computes MD5OfBody
	BodySize int64
	// Attributes are the message's message attributes, resent with it.
	Attributes map[string]MessageAttribute
	// DeduplicationID is the message's original MessageDeduplicationId.
	DeduplicationID string
	// Nonce is a random secret the quarantine gives the message when it
	// parks it. A redriven copy carries it (Copy), so a copy is recognised
	// only if it was made from this item: a producer knows its message's
	// body, sequence number and id, never the nonce. It is never shown.
	Nonce        string `json:"-"`
	ReceiveCount int
	Cause        string
	Status       Status
	ParkedAt     time.Time
	UpdatedAt    time.Time
	// Kafka is what a parked Kafka record keeps (its sequence is
	// KafkaSeq of its partition and offset; Body, Attributes, MessageID
	// and DeduplicationID are empty); nil for an SQS message.
	Kafka *KafkaRecord
}

// KafkaRecord is a parked Kafka record's key, value and headers, byte for
// byte, so that its redriven copy is the record again.
type KafkaRecord struct {
	Key []byte
	// Value is the record's value; nil when it is kept in the BodyStore
	// under the Parked's BodyKey (or is null or empty).
	Value   []byte
	Headers []KafkaHeader
}

// KafkaHeader is one header of a parked Kafka record.
type KafkaHeader struct {
	Key   string
	Value []byte
}

// ItemKey names a parked message.
type ItemKey struct {
	Group    string
	Sequence string // SeqKey form
}

// seqWidth is the width of a sequence key: SQS's sequence numbers are
// 128-bit numbers, at most 39 decimal digits.
const seqWidth = 40

// SeqKey returns the sequence number seq as a key that sorts as the number
// does: 40 digits, zero-padded. It refuses anything but 1 to 40 digits.
func SeqKey(seq string) (string, error) {
	if seq == "" || len(seq) > seqWidth || strings.TrimLeft(seq, "0123456789") != "" {
		return "", fmt.Errorf("quarantine: sequence number %q is not a decimal number of at most %d digits", seq, seqWidth)
	}
	return strings.Repeat("0", seqWidth-len(seq)) + seq, nil
}

// SeqNumber returns a sequence key's number as SQS writes it, and "" for
// "" (no key: a hold that names no next, say).
func SeqNumber(key string) string {
	if key == "" {
		return ""
	}
	n := strings.TrimLeft(key, "0")
	if n == "" {
		return "0"
	}
	return n
}

// kafkaOffsetWidth is how many of a Kafka record's sequence key's digits
// are its offset (an int64 has at most 19); the partition is in the digits
// before them.
const kafkaOffsetWidth = 19

// KafkaSeq returns the sequence key of the Kafka record at partition and
// offset: the partition in the high digits, the offset in the low 19.
// Within a partition it sorts as the offset does; and a key's records in
// two partitions (the topic's partition count changed) never share a key,
// so a released hold's tombstone at an offset of the old partition is
// never taken for the record at that offset of the new one. It refuses a
// negative partition or offset.
func KafkaSeq(partition, offset int64) (string, error) {
	if partition < 0 || offset < 0 {
		return "", fmt.Errorf("quarantine: Kafka partition %d, offset %d: neither may be negative", partition, offset)
	}
	return fmt.Sprintf("%0*d%0*d", seqWidth-kafkaOffsetWidth, partition, kafkaOffsetWidth, offset), nil
}

// KafkaPosition returns the partition and offset of a Kafka record's
// sequence key (KafkaSeq); ok is false for a key no KafkaSeq returns.
func KafkaPosition(seq string) (partition, offset int64, ok bool) {
	if len(seq) != seqWidth {
		return 0, 0, false
	}
	p, err1 := strconv.ParseInt(seq[:seqWidth-kafkaOffsetWidth], 10, 64)
	o, err2 := strconv.ParseInt(seq[seqWidth-kafkaOffsetWidth:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || o < 0 || strings.TrimLeft(seq, "0123456789") != "" {
		return 0, 0, false
	}
	return p, o, true
}

// Errors of the stores.
var (
	// ErrNoHold: the group has no hold (or only a released one) where the
	// operation needs one.
	ErrNoHold = errors.New("quarantine: the group is not held")
	// ErrConflict: the hold or the parked message is not in the state the
	// operation requires (another epoch, not draining, not the oldest
	// message parked); nothing was written.
	ErrConflict = errors.New("quarantine: the hold changed")
	// ErrNotParked: no parked message has that sequence number.
	ErrNotParked = errors.New("quarantine: no such parked message")
	// ErrOtherPartition: Kafka records of a held key's partition are parked
	// under its hold, never those of another partition, whose offsets are
	// of another sequence (the topic's partition count changed); nothing
	// was written.
	ErrOtherPartition = errors.New("quarantine: the records are of another partition than the key's hold")
)
