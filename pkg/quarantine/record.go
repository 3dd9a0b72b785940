package quarantine

import (
	"errors"
	"fmt"
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
)
