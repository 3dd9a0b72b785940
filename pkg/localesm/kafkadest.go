package localesm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaOnFailureDestination receives what a KafkaMapping gives up on:
// records whose retries ran out, that grew older than MaximumRecordAge, or
// that alone make an event larger than MaxRequestSize. The mapping commits
// past them only once Send has returned nil, and calls Send again (with
// the same records) until it does, so a destination must tolerate
// duplicates. KafkaSQSDestination, KafkaS3Destination and
// KafkaTopicDestination are Lambda's destinations that fit a local stack
// (SNS is not built).
type KafkaOnFailureDestination interface {
	Send(ctx context.Context, f KafkaFailure) error
}

// KafkaFailure is what a KafkaMapping gives up on at once: one span of a
// batch, possibly several partitions.
type KafkaFailure struct {
	// Record is the invocation record Lambda sends to an SQS queue or an
	// SNS topic: it locates the records (KafkaBatchInfo.RecordsInfo, per
	// topic-partition), it does not carry them.
	Record KafkaOnFailureRecord
	// Records are the records given up, in topic-partition then offset
	// order, each with the event that holds it alone: what a Kafka-topic
	// destination carries.
	Records []KafkaFailedRecord
}

// KafkaFailedRecord is one record a KafkaMapping gave up on.
type KafkaFailedRecord struct {
	TopicPartition string
	Offset         int64
	Timestamp      time.Time
	Key            []byte          // nil for a null key
	Event          json.RawMessage // the KafkaEvent holding this record alone
}

// The conditions of an on-failure record.
const (
	// ConditionRetryAttemptsExhausted: MaximumRetryAttempts retries failed
	// (AWS's SQS and SNS example).
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	// ConditionRecordAgeExceeded: the records were older than
	// MaximumRecordAge. AWS's Kafka pages name no condition for it; this is
	// the one Lambda uses for streams.
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
	// ConditionMaximumPayloadSizeExceeded: the record alone makes an event
	// over MaxRequestSize; it was never invoked and the record's
	// responseContext is null (AWS's SQS and SNS example).
	ConditionMaximumPayloadSizeExceeded = "MaximumPayloadSizeExceeded"
	// conditionRetriesExhausted is how AWS's Kafka-topic destination
	// example spells ConditionRetryAttemptsExhausted.
	conditionRetriesExhausted = "RetriesExhausted"
)

// KafkaOnFailureRecord is the JSON document Lambda sends to a Kafka
// mapping's on-failure destination, in the shape of AWS's examples
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html,
// https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
type KafkaOnFailureRecord struct {
	RequestContext OnFailureRequestContext `json:"requestContext"`
	// ResponseContext is null when the records were never invoked
	// (ConditionMaximumPayloadSizeExceeded, or records that aged out
	// before their first invocation).
	ResponseContext *OnFailureResponseContext `json:"responseContext"`
	Version         string                    `json:"version"`
	Timestamp       string                    `json:"timestamp"`
	KafkaBatchInfo  KafkaBatchInfo            `json:"KafkaBatchInfo"`
	// Payload is, for a Kafka-topic destination, the event holding the
	// record; for an S3 destination, the event holding the span's records
	// as an escaped JSON string (a JSON string whose text is the event),
	// as AWS's S3 example has it. SQS gets none.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// KafkaBatchInfo locates the records given up.
type KafkaBatchInfo struct {
	BatchSize        int    `json:"batchSize"`
	EventSourceARN   string `json:"eventSourceArn,omitempty"` // MSK only
	BootstrapServers string `json:"bootstrapServers"`
	PayloadSize      int    `json:"payloadSize"` // bytes of the event that holds the records
	// RecordsInfo (SQS and SNS) gives each topic-partition's first and
	// last record.
	RecordsInfo map[string]KafkaRecordsInfo `json:"recordsInfo,omitempty"`
	// RecordInfo (a Kafka topic: one message per record) is the record's.
	RecordInfo *KafkaRecordInfo `json:"recordInfo,omitempty"`
}

// KafkaRecordsInfo is one topic-partition's span of records given up.
// Offsets are decimal strings, as in AWS's example.
type KafkaRecordsInfo struct {
	FirstRecordOffset    string `json:"firstRecordOffset"`
	LastRecordOffset     string `json:"lastRecordOffset"`
	FirstRecordTimestamp string `json:"firstRecordTimestamp"`
	LastRecordTimestamp  string `json:"lastRecordTimestamp"`
}

// KafkaRecordInfo is the record a Kafka-topic destination's message is
// about.
type KafkaRecordInfo struct {
	Offset    string `json:"offset"`
	Timestamp string `json:"timestamp"`
}

// onFailureTime is the timestamps' layout in on-failure records:
// "2019-11-14T00:38:06.021Z".
const onFailureTime = "2006-01-02T15:04:05.000Z"

func formatFailureTime(t time.Time) string { return t.UTC().Format(onFailureTime) }

// KafkaSQSDestination sends KafkaFailure.Record, as JSON, to a standard
// SQS queue: one message per span given up.
type KafkaSQSDestination struct {
	Client   MessageSender
	QueueURL string
}

// Send sends f's invocation record.
func (d KafkaSQSDestination) Send(ctx context.Context, f KafkaFailure) error {
	body, err := json.Marshal(f.Record)
	if err != nil {
		return fmt.Errorf("localesm: encode on-failure record: %w", err)
	}
	if _, err := d.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(d.QueueURL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("localesm: send on-failure record to %s: %w", d.QueueURL, err)
	}
	return nil
}

// KafkaProducer is the part of a franz-go client a KafkaTopicDestination
// uses.
type KafkaProducer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

var _ KafkaProducer = (*kgo.Client)(nil)

// KafkaTopicDestination produces one message per record given up to
// Topic, as Lambda does for a "kafka://topic" destination: its value is the
// invocation record with that record's recordInfo and, as payload, the
// event holding the record alone; its key is the record's key. (A record
// with a null key goes wherever the producer's partitioner puts it; AWS
// uses round-robin.) AWS requires the topic to be on the source cluster
// and to differ from the source topic; the mapping refuses the source
// topic. A partly failed produce is produced again whole: the topic may
// hold a message twice.
type KafkaTopicDestination struct {
	Producer KafkaProducer
	Topic    string
}

// Send produces f's records.
func (d KafkaTopicDestination) Send(ctx context.Context, f KafkaFailure) error {
	recs := make([]*kgo.Record, len(f.Records))
	for i, fr := range f.Records {
		rec := f.Record
		if rec.RequestContext.Condition == ConditionRetryAttemptsExhausted {
			rec.RequestContext.Condition = conditionRetriesExhausted
		}
		rec.KafkaBatchInfo.BatchSize = 1
		rec.KafkaBatchInfo.PayloadSize = len(fr.Event)
		rec.KafkaBatchInfo.RecordsInfo = nil
		rec.KafkaBatchInfo.RecordInfo = &KafkaRecordInfo{Offset: strconv.FormatInt(fr.Offset, 10), Timestamp: formatFailureTime(fr.Timestamp)}
		rec.Payload = fr.Event
		body, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("localesm: encode on-failure record: %w", err)
		}
		recs[i] = &kgo.Record{Topic: d.Topic, Key: fr.Key, Value: body}
	}
	if err := d.Producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("localesm: produce on-failure records to %s: %w", d.Topic, err)
	}
	return nil
}
