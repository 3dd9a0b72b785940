package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ObjectWriter writes one object: what a KafkaS3Destination asks of S3.
// This package does not import the S3 client (its imports are the event
// sources' it reads), so a caller adapts one, e.g. s3.Client's PutObject
// with the body as its Body; ObjectWriterFunc adapts a function.
type ObjectWriter interface {
	WriteObject(ctx context.Context, bucket, key string, body []byte) error
}

// ObjectWriterFunc is an ObjectWriter made of a function.
type ObjectWriterFunc func(ctx context.Context, bucket, key string, body []byte) error

// WriteObject calls f.
func (f ObjectWriterFunc) WriteObject(ctx context.Context, bucket, key string, body []byte) error {
	return f(ctx, bucket, key, body)
}

// KafkaS3Config configures a KafkaS3Destination. Both fields are required.
type KafkaS3Config struct {
	// Writer writes the objects.
	Writer ObjectWriter
	// Bucket is the destination bucket's name (the bucket ARN's last part,
	// arn:aws:s3:::NAME): 3 to 63 characters of a-z, 0-9, '.' and '-',
	// starting and ending with a letter or a digit.
	Bucket string
}

// bucketName is S3's general purpose bucket naming rule, its characters
// and ends (its length is checked apart).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`)

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c KafkaS3Config) Validate() error {
	switch {
	case c.Writer == nil:
		return fmt.Errorf("%w: Writer is nil", ErrInvalidConfig)
	case len(c.Bucket) < 3 || len(c.Bucket) > 63 || !bucketName.MatchString(c.Bucket):
		return fmt.Errorf("%w: Bucket %q is not a bucket name (3 to 63 characters of a-z, 0-9, '.', '-')", ErrInvalidConfig, c.Bucket)
	}
	return nil
}

// KafkaS3Destination is a Kafka mapping's on-failure destination in an S3
// bucket, template-kafka.yaml's (KafkaFailuresBucket). For each span
// given up it writes one object: the on-failure record (the metadata an
// SQS destination gets too) whose "payload" is the event holding every
// record of the span as an escaped JSON string. AWS's "Capturing
// discarded batches for Amazon MSK and self-managed Apache Kafka event
// sources" (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html,
// checked 2026-12) documents that layout: for S3 "Lambda sends the entire
// invocation record along with the metadata", and "the payload field
// contains the original invocation record as an escaped JSON string"
// ("payload": "<Whole Event>" in its example).
//
// AWS does not document the object's key for Kafka (for streams it gives
// aws/lambda/<ESM-UUID>/<shardID>/...; docs/KAFKA.md says what was not
// seen working): the key is this package's, ObjectKey's. It is the same
// each time the mapping sends the same span again (until Send succeeds),
// so a retried write replaces the object rather than adding one.
type KafkaS3Destination struct {
	cfg KafkaS3Config
}

// NewKafkaS3Destination returns a destination writing to cfg.Bucket, or an
// error wrapping ErrInvalidConfig.
func NewKafkaS3Destination(cfg KafkaS3Config) (*KafkaS3Destination, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &KafkaS3Destination{cfg: cfg}, nil
}

// Send writes f as one object.
func (d *KafkaS3Destination) Send(ctx context.Context, f KafkaFailure) error {
	if len(f.Records) == 0 {
		return errors.New("localesm: an on-failure record with no record given up")
	}
	rec := f.Record
	payload, err := mergeKafkaEvents(f.Records)
	if err != nil {
		return err
	}
	rec.Payload = jsonString(string(payload)) // the event as an escaped JSON string, as AWS's S3 example has it
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("localesm: encode on-failure record: %w", err)
	}
	key := ObjectKey(f)
	if err := d.cfg.Writer.WriteObject(ctx, d.cfg.Bucket, key, body); err != nil {
		return fmt.Errorf("localesm: write on-failure record to s3://%s/%s: %w", d.cfg.Bucket, key, err)
	}
	return nil
}

// ObjectKey is where a KafkaS3Destination writes f:
// aws/lambda/<function>/<yyyy>/<mm>/<dd>/<topic-partition>-<offset>-<request id>.json,
// the function's name from the record's functionArn, the date the
// record's timestamp's (UTC), and the first record given up with the
// invocation's request id: one key per span, the same for the same span.
func ObjectKey(f KafkaFailure) string {
	fn := f.Record.RequestContext.FunctionARN
	fn = fn[strings.LastIndex(fn, ":")+1:]
	day := "0000/00/00"
	if t, err := time.Parse(onFailureTime, f.Record.Timestamp); err == nil {
		day = t.Format("2006/01/02")
	}
	first := "none"
	if len(f.Records) > 0 {
		first = f.Records[0].TopicPartition + "-" + strconv.FormatInt(f.Records[0].Offset, 10)
	}
	return fmt.Sprintf("aws/lambda/%s/%s/%s-%s.json", fn, day, first, f.Record.RequestContext.RequestID)
}

// kafkaEventDoc is a KafkaEvent whose records are kept as they were
// encoded, in the order of the mapping's events.
type kafkaEventDoc struct {
	EventSource      string                       `json:"eventSource"`
	EventSourceARN   string                       `json:"eventSourceArn,omitempty"`
	BootstrapServers string                       `json:"bootstrapServers"`
	Records          map[string][]json.RawMessage `json:"records"`
}

// mergeKafkaEvents is the event holding every record of recs, from the
// events that hold each alone.
func mergeKafkaEvents(recs []KafkaFailedRecord) (json.RawMessage, error) {
	var out kafkaEventDoc
	for i, r := range recs {
		var one kafkaEventDoc
		if err := json.Unmarshal(r.Event, &one); err != nil {
			return nil, fmt.Errorf("localesm: the event of %s offset %d: %w", r.TopicPartition, r.Offset, err)
		}
		if i == 0 {
			out = kafkaEventDoc{EventSource: one.EventSource, EventSourceARN: one.EventSourceARN, BootstrapServers: one.BootstrapServers,
				Records: map[string][]json.RawMessage{}}
		}
		for tp, rs := range one.Records {
			out.Records[tp] = append(out.Records[tp], rs...)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("localesm: encode the records given up: %w", err)
	}
	return b, nil
}
