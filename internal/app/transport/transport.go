package transport

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// Delivery is one delivery of one message to a consumer.
type Delivery struct {
	// ID names the message in logs (message_id) and errors: the SQS
	// message id; for a Kafka record "<topic>-<partition>@<offset>" (its
	// topic-partition, as a partial batch response names it, and its
	// offset).
	ID string
	// Ref names the message inside an attempt id, in an id's characters
	// ([A-Za-z0-9_-]): the SQS message id; for a Kafka record "<topic
	// digest>-<partition>-<offset>", the digest being the first 8 bytes of
	// the topic's SHA-256 in hex. A topic name may hold a dot and be 249
	// bytes long, so it cannot go in as it is; an invocation may hold
	// records of two topics, so it cannot be left out. Ref is at most 56
	// bytes long.
	Ref string
	// Key is the key the transport ordered the message by, logged as
	// group_id: the SQS message group (the MessageGroupId attribute; ""
	// when the message has none), or the Kafka record's key ("" when null:
	// Lambda's event does not tell a null key from an empty one).
	Key string
	// KeyRequired says Key must be the job's, even when empty: true for a
	// Kafka record, whose key picks its partition and its lane (a record
	// under another key, or none, runs beside its job's own records, out
	// of their order). An SQS message's group is checked only when present
	// and only by the consumers that check it (the worker), as before
	// there was a second transport.
	KeyRequired bool
	// Body is the message: the SQS body, or the Kafka record's value (""
	// when null).
	Body string
	// Count is how many times the message has been delivered, this time
	// included: the SQS ApproximateReceiveCount, 1 when the attribute is
	// absent or not a positive number (SQS counts the first receive as
	// 1). Zero means the transport keeps no count: a Kafka record.
	Count int
}

// KeyText names d's key in an error: `key "job-42"`, or "a null key"
// for the empty key (Lambda's Kafka event gives a null and an empty key
// alike).
func (d *Delivery) KeyText() string {
	if d.Key == "" {
		return "a null key"
	}
	return "key " + strconv.Quote(d.Key)
}

// FromSQS is msg as a Delivery.
func FromSQS(msg *events.SQSMessage) Delivery {
	return Delivery{
		ID:    msg.MessageId,
		Ref:   msg.MessageId,
		Key:   msg.Attributes["MessageGroupId"],
		Body:  msg.Body,
		Count: receiveCount(msg),
	}
}

// receiveCount is the message's ApproximateReceiveCount; a message without
// one counts as received once.
func receiveCount(msg *events.SQSMessage) int {
	n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// FromRecord is rec as a Delivery.
func FromRecord(rec *kafka.Record) Delivery {
	part, off := strconv.FormatInt(rec.Partition, 10), strconv.FormatInt(rec.Offset, 10)
	digest := sha256.Sum256([]byte(rec.Topic))
	return Delivery{
		ID:          rec.TopicPartition() + "@" + off,
		Ref:         hex.EncodeToString(digest[:8]) + "-" + part + "-" + off,
		Key:         string(rec.Key),
		KeyRequired: true,
		Body:        string(rec.Value),
	}
}
