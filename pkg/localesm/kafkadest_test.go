package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rawSender keeps the bodies sent to it.
type rawSender struct {
	queue  string
	bodies []string
}

func (s *rawSender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.queue = aws.ToString(in.QueueUrl)
	s.bodies = append(s.bodies, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{}, nil
}

// fakeProducer keeps the records produced to it, or fails.
type fakeProducer struct {
	produced []*kgo.Record
	err      error
}

func (p *fakeProducer) ProduceSync(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
	var res kgo.ProduceResults
	for _, r := range rs {
		if p.err == nil {
			p.produced = append(p.produced, r)
		}
		res = append(res, kgo.ProduceResult{Record: r, Err: p.err})
	}
	return res
}

// testFailure is what a mapping on MSK gives up of testSpan after three
// invocations, the last of which failed.
func testFailure(condition string, status *Status) (KafkaFailure, kafkaSource) {
	at := time.Date(2026, 12, 1, 9, 0, 5, 21e6, time.UTC)
	r := &kafkaRun{m: &KafkaMapping{cfg: KafkaConfig{FunctionARN: "arn:aws:lambda:eu-west-1:123456789012:function:worker", Now: func() time.Time { return at }}},
		src: kafkaSource{eventSource: EventSourceMSK, arn: testClusterARN, bootstrap: "b-1:9092"}}
	span := testSpan()
	span.invocations, span.requestID, span.status = 3, "316aa6d0-8154-4f4c-9af7-85d5f4a6bc81", status
	return r.failure(span, condition), r.src
}

// TestKafkaSQSDestinationSendsLambdasRecord: the record AWS documents for
// an SQS or SNS destination
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html):
// it locates each partition's span, it does not carry the records.
func TestKafkaSQSDestinationSendsLambdasRecord(t *testing.T) {
	t.Parallel()
	failed := StatusFunctionError
	f, src := testFailure(ConditionRetryAttemptsExhausted, &failed)
	sender := &rawSender{}
	require.NoError(t, KafkaSQSDestination{Client: sender, QueueURL: "http://q/1/failures"}.Send(t.Context(), f))
	require.Equal(t, "http://q/1/failures", sender.queue)
	require.Len(t, sender.bodies, 1)
	ts := func(off int64) string { return fmt.Sprintf("2026-12-01T09:00:00.%03dZ", off) }
	want := fmt.Sprintf(`{
		"requestContext": {"requestId": "316aa6d0-8154-4f4c-9af7-85d5f4a6bc81", "functionArn": "arn:aws:lambda:eu-west-1:123456789012:function:worker",
			"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
		"responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"version": "1.0",
		"timestamp": "2026-12-01T09:00:05.021Z",
		"KafkaBatchInfo": {
			"batchSize": 5, "eventSourceArn": %q, "bootstrapServers": "b-1:9092", "payloadSize": %d,
			"recordsInfo": {
				"fifoworker-commands-0": {"firstRecordOffset": "10", "lastRecordOffset": "13", "firstRecordTimestamp": %q, "lastRecordTimestamp": %q},
				"fifoworker-commands-1": {"firstRecordOffset": "4", "lastRecordOffset": "5", "firstRecordTimestamp": %q, "lastRecordTimestamp": %q}
			}
		}
	}`, testClusterARN, len(src.encode(testSpan().parts)), ts(10), ts(13), ts(4), ts(5))
	require.JSONEq(t, want, sender.bodies[0])

	// A record too large for an event was never invoked: responseContext
	// is null, as AWS's example says.
	f, _ = testFailure(ConditionMaximumPayloadSizeExceeded, nil)
	require.NoError(t, KafkaSQSDestination{Client: sender, QueueURL: "http://q/1/failures"}.Send(t.Context(), f))
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(sender.bodies[1]), &top))
	require.JSONEq(t, `null`, string(top["responseContext"]))
	require.JSONEq(t, `"MaximumPayloadSizeExceeded"`, string(mustField(t, top["requestContext"], "condition")))
}

func mustField(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return m[key]
}

// TestKafkaTopicDestinationProducesOneMessagePerRecord: the message AWS
// documents for a Kafka-topic destination
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html):
// per record, keyed by the record's key, its recordInfo, and the event
// that holds it as payload.
func TestKafkaTopicDestinationProducesOneMessagePerRecord(t *testing.T) {
	t.Parallel()
	failed := StatusTimeout
	f, _ := testFailure(ConditionRetryAttemptsExhausted, &failed)
	p := &fakeProducer{}
	require.NoError(t, KafkaTopicDestination{Producer: p, Topic: "failed"}.Send(t.Context(), f))
	require.Len(t, p.produced, 5)
	m := p.produced[2] // partition 0, offset 13
	require.Equal(t, "failed", m.Topic)
	require.Equal(t, []byte("k"), m.Key)
	var rec KafkaOnFailureRecord
	require.NoError(t, json.Unmarshal(m.Value, &rec))
	require.Equal(t, "RetriesExhausted", rec.RequestContext.Condition)
	require.Equal(t, 1, rec.KafkaBatchInfo.BatchSize)
	require.Nil(t, rec.KafkaBatchInfo.RecordsInfo)
	require.Equal(t, &KafkaRecordInfo{Offset: "13", Timestamp: "2026-12-01T09:00:00.013Z"}, rec.KafkaBatchInfo.RecordInfo)
	require.Equal(t, len(rec.Payload), rec.KafkaBatchInfo.PayloadSize)
	var payload kafkaPayloadCheck
	require.NoError(t, json.Unmarshal(rec.Payload, &payload))
	require.Equal(t, map[string][]struct {
		Offset int64 `json:"offset"`
	}{"fifoworker-commands-0": {{Offset: 13}}}, payload.Records)
	require.Equal(t, f.Record.RequestContext.RequestID, rec.RequestContext.RequestID)

	// Another condition keeps its name; a failed produce is an error.
	f, _ = testFailure(ConditionRecordAgeExceeded, nil)
	require.NoError(t, KafkaTopicDestination{Producer: p, Topic: "failed"}.Send(t.Context(), f))
	require.NoError(t, json.Unmarshal(p.produced[5].Value, &rec))
	require.Equal(t, ConditionRecordAgeExceeded, rec.RequestContext.Condition)
	down := &fakeProducer{err: errors.New("broker down")}
	require.ErrorContains(t, KafkaTopicDestination{Producer: down, Topic: "failed"}.Send(t.Context(), f), "broker down")
}

type kafkaPayloadCheck struct {
	Records map[string][]struct {
		Offset int64 `json:"offset"`
	} `json:"records"`
}
