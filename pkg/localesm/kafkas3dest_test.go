package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// objects is an ObjectWriter that keeps what it is given, by key.
type objects struct {
	bucket string
	byKey  map[string][]byte
	writes int
	err    error
}

func (o *objects) WriteObject(_ context.Context, bucket, key string, body []byte) error {
	o.writes++
	if o.err != nil {
		return o.err
	}
	o.bucket = bucket
	o.byKey[key] = body
	return nil
}

// s3Failure is what a mapping gives up of two partitions' three records
// after its retries: the failure its on-failure destination is sent.
func s3Failure(t *testing.T) (KafkaFailure, []byte) {
	t.Helper()
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	cfg := KafkaConfig{FunctionARN: "arn:aws:lambda:eu-west-1:000000000000:function:st-worker", Now: func() time.Time { return at }}
	src := kafkaSource{eventSource: EventSourceMSK, arn: "arn:aws:kafka:eu-west-1:000000000000:cluster/st/local", bootstrap: "127.0.0.1:9092"}
	r := &kafkaRun{m: &KafkaMapping{cfg: cfg}, src: src}
	rec := func(p int32, off int64, key []byte) *kafkaRecord {
		return newKafkaRecord(&kgo.Record{Topic: "st-commands", Partition: p, Offset: off, Key: key, Value: []byte(`{"x":1}`),
			Headers: []kgo.RecordHeader{{Key: "outbox-id", Value: []byte("job-1/v1")}}, Timestamp: at.Add(-time.Minute)}, at)
	}
	status := StatusTimeout
	span := kafkaSpan{parts: []kafkaPart{
		{tp: kafkaTP{"st-commands", 0}, recs: []*kafkaRecord{rec(0, 7, []byte("job-1")), rec(0, 8, nil)}},
		{tp: kafkaTP{"st-commands", 3}, recs: []*kafkaRecord{rec(3, 2, []byte("job-2"))}},
	}, invocations: 8, requestID: "req-1", status: &status}
	return r.failure(span, ConditionRetryAttemptsExhausted), src.encode(span.parts)
}

// The S3 destination writes one object per span given up: the on-failure
// record SQS would get, with the whole event of the span's records as its
// payload; a span sent again (the mapping retries until Send succeeds)
// lands on the same key.
func TestKafkaS3DestinationWritesTheRecordWithItsEvent(t *testing.T) {
	t.Parallel()
	f, event := s3Failure(t)
	store := &objects{byKey: map[string][]byte{}}
	d, err := NewKafkaS3Destination(KafkaS3Config{Writer: store, Bucket: "st-kafkafailuresbucket"})
	require.NoError(t, err)
	require.NoError(t, d.Send(t.Context(), f))
	require.NoError(t, d.Send(t.Context(), f))
	require.Equal(t, 2, store.writes)
	require.Len(t, store.byKey, 1, "the same span, the same key")
	require.Equal(t, "st-kafkafailuresbucket", store.bucket)
	key := "aws/lambda/st-worker/2026/03/04/st-commands-0-7-req-1.json"
	require.Contains(t, store.byKey, key)

	var got KafkaOnFailureRecord
	require.NoError(t, json.Unmarshal(store.byKey[key], &got))
	require.Equal(t, ConditionRetryAttemptsExhausted, got.RequestContext.Condition)
	require.Equal(t, 8, got.RequestContext.ApproximateInvokeCount)
	require.Equal(t, "Unhandled", got.ResponseContext.FunctionError)
	require.Equal(t, 3, got.KafkaBatchInfo.BatchSize)
	require.Equal(t, "7", got.KafkaBatchInfo.RecordsInfo["st-commands-0"].FirstRecordOffset)
	require.Equal(t, "8", got.KafkaBatchInfo.RecordsInfo["st-commands-0"].LastRecordOffset)
	require.Equal(t, "2", got.KafkaBatchInfo.RecordsInfo["st-commands-3"].FirstRecordOffset)
	// AWS's example: "the payload field contains the original invocation
	// record as an escaped JSON string".
	var escaped string
	require.NoError(t, json.Unmarshal(got.Payload, &escaped), "payload is a JSON string: %.40s", got.Payload)
	var payload, want events.KafkaEvent
	require.NoError(t, json.Unmarshal([]byte(escaped), &payload))
	require.NoError(t, json.Unmarshal(event, &want))
	require.Equal(t, want, payload, "the event the span's records were invoked with")
	require.Len(t, payload.Records["st-commands-0"], 2)
	require.Empty(t, payload.Records["st-commands-0"][1].Key, "the null key stays null")
	require.Equal(t, "aws:kafka", payload.EventSource)
}

// A write that fails is Send's error, with the object's place: the
// mapping sends again and does not commit past the records meanwhile.
func TestKafkaS3DestinationReportsAFailedWrite(t *testing.T) {
	t.Parallel()
	f, _ := s3Failure(t)
	d, err := NewKafkaS3Destination(KafkaS3Config{Writer: &objects{byKey: map[string][]byte{}, err: errors.New("SlowDown")}, Bucket: "b-1"})
	require.NoError(t, err)
	err = d.Send(t.Context(), f)
	require.ErrorContains(t, err, "SlowDown")
	require.ErrorContains(t, err, "s3://b-1/aws/lambda/st-worker/")
	require.ErrorContains(t, d.Send(t.Context(), KafkaFailure{}), "no record")
}

func TestNewKafkaS3DestinationRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	w := ObjectWriterFunc(func(context.Context, string, string, []byte) error { return nil })
	for name, tc := range map[string]struct {
		cfg   KafkaS3Config
		field string
	}{
		"no writer":        {KafkaS3Config{Bucket: "abc"}, "Writer"},
		"no bucket":        {KafkaS3Config{Writer: w}, "Bucket"},
		"two characters":   {KafkaS3Config{Writer: w, Bucket: "ab"}, "Bucket"},
		"64 characters":    {KafkaS3Config{Writer: w, Bucket: strings.Repeat("a", 64)}, "Bucket"},
		"upper case":       {KafkaS3Config{Writer: w, Bucket: "Abc"}, "Bucket"},
		"ends with a dash": {KafkaS3Config{Writer: w, Bucket: "abc-"}, "Bucket"},
		"an ARN":           {KafkaS3Config{Writer: w, Bucket: "arn:aws:s3:::abc"}, "Bucket"},
	} {
		d, err := NewKafkaS3Destination(tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, d, name)
	}
	for _, bucket := range []string{"abc", strings.Repeat("a", 63), "a.b-c"} {
		_, err := NewKafkaS3Destination(KafkaS3Config{Writer: w, Bucket: bucket})
		require.NoError(t, err, bucket)
	}
}
