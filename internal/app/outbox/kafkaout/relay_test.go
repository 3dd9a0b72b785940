package kafkaout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

const (
	commandsTopic = "fifoworker-commands"
	eventsTopic   = "fifoworker-events"
)

// partitions is the partition count of the tests' topics, as the relay is
// configured with it: setupBroker's topics have as many.
const partitions = 4

// fakeProducer records each record produced and answers it with answer
// (nil: acknowledged at once, from the producing goroutine). It answers a
// metadata request with each topic asked for and its partitions
// (topicPartitions, or partitions), or with metadata's answer when it is
// set; it records the topics of each request.
type fakeProducer struct {
	mu              sync.Mutex
	produced        []*kgo.Record
	answer          func(r *kgo.Record, promise func(*kgo.Record, error))
	topicPartitions map[string]int
	metadata        func(context.Context, *kmsg.MetadataRequest) (kmsg.Response, error)
	asked           [][]string // the topics of each metadata request
}

func (f *fakeProducer) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	mreq, ok := req.(*kmsg.MetadataRequest)
	if !ok {
		return nil, fmt.Errorf("fakeProducer: a %T, not a metadata request", req)
	}
	if mreq.AllowAutoTopicCreation {
		return nil, errors.New("fakeProducer: the metadata request would create the topics")
	}
	var topics []string
	for _, t := range mreq.Topics {
		topics = append(topics, *t.Topic)
	}
	f.mu.Lock()
	f.asked = append(f.asked, topics)
	metadata := f.metadata
	f.mu.Unlock()
	if metadata != nil {
		return metadata(ctx, mreq)
	}
	return metadataResponse(f.topicPartitions, topics...), nil
}

// metadataResponse answers for topics, each with counts[topic]
// partitions, or partitions when counts has none.
func metadataResponse(counts map[string]int, topics ...string) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	for _, topic := range topics {
		n, ok := counts[topic]
		if !ok {
			n = partitions
		}
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(topic)
		for p := range n {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition = int32(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (f *fakeProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	f.mu.Lock()
	f.produced = append(f.produced, r)
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		promise(r, nil)
		return
	}
	answer(r, promise)
}

// ids are the outbox ids of the records produced to topic, in order.
func (f *fakeProducer) ids(topic string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, r := range f.produced {
		if r.Topic == topic {
			ids = append(ids, header(r, kafkaout.HeaderOutboxID))
		}
	}
	return ids
}

// failing answers the records whose outbox id is in fail with an error,
// and acknowledges the others.
func failing(fail ...string) func(*kgo.Record, func(*kgo.Record, error)) {
	return func(r *kgo.Record, promise func(*kgo.Record, error)) {
		for _, id := range fail {
			if header(r, kafkaout.HeaderOutboxID) == id {
				promise(r, errors.New("injected"))
				return
			}
		}
		promise(r, nil)
	}
}

// header is the value of r's header key, "" when it has none; it fails
// the test's expectations if the header is there twice.
func header(r *kgo.Record, key string) string {
	var v []string
	for _, h := range r.Headers {
		if h.Key == key {
			v = append(v, string(h.Value))
		}
	}
	if len(v) != 1 {
		return strings.Join(v, ",")
	}
	return v[0]
}

func newRelay(t *testing.T, p kafkaout.Producer, log *slog.Logger) *outbox.Relay {
	t.Helper()
	relay, err := kafkaout.NewRelay(kafkaout.Config{Producer: p, CommandsTopic: commandsTopic, EventsTopic: eventsTopic, PartitionCount: partitions, Logger: log})
	require.NoError(t, err)
	return relay
}

// Each message becomes one record on its kind's topic, keyed by its job
// id, with the body SQS would carry as its value and the outbox id, the
// message type, the relay's partition count and the invocation's trace
// header as headers.
func TestEachMessageIsARecordKeyedByItsJobWithItsIDTypeAndTraceHeaders(t *testing.T) {
	t.Parallel()
	recs := outboxtest.History("job-42", jobs.EventStarted, jobs.EventCompleted)
	const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	ctx := context.WithValue(t.Context(), "x-amzn-trace-id", trace) //nolint:staticcheck // SA1029: aws-lambda-go's own key, a plain string
	f := &fakeProducer{}
	resp, err := newRelay(t, f, nil).Handle(ctx, events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Len(t, f.produced, 3)

	var want []outbox.Message
	for _, rec := range recs {
		cur, err := jobs.FromStreamImage(rec.Change.NewImage)
		require.NoError(t, err)
		var prev *jobs.Job
		if rec.Change.OldImage != nil {
			old, err := jobs.FromStreamImage(rec.Change.OldImage)
			require.NoError(t, err)
			prev = &old
		}
		msgs, err := outbox.FromTransition(&cur, prev)
		require.NoError(t, err)
		want = append(want, msgs...)
	}
	for i, r := range f.produced {
		m := want[i]
		topic := eventsTopic
		if m.Kind == outbox.KindCommand {
			topic = commandsTopic
		}
		require.Equal(t, topic, r.Topic, m.OutboxID)
		require.Equal(t, []byte("job-42"), r.Key, "the key is the job id: one partition per job")
		require.Equal(t, m.Body, r.Value, "the value is the body SQS carries")
		require.True(t, json.Valid(r.Value))
		require.Len(t, r.Headers, 4, m.OutboxID)
		require.Equal(t, m.OutboxID, header(r, kafkaout.HeaderOutboxID))
		require.Equal(t, strconv.Itoa(partitions), header(r, kafka.PartitionCountHeader), "the relay's partition count, verified")
		require.Equal(t, m.Type, header(r, kafkaout.HeaderType))
		require.Equal(t, trace, header(r, kafkaout.HeaderTrace))
	}
	require.Equal(t, []string{"job.run", "job.started", "job.completed"},
		[]string{header(f.produced[0], kafkaout.HeaderType), header(f.produced[1], kafkaout.HeaderType), header(f.produced[2], kafkaout.HeaderType)})
}

// Without a trace (or with one the relay cannot vouch for) a record has no
// trace header at all, never an empty one.
func TestARecordHasNoTraceHeaderWhenItsInvocationHasNone(t *testing.T) {
	t.Parallel()
	for name, ctx := range map[string]context.Context{
		"no trace":        t.Context(),
		"a malformed one": context.WithValue(t.Context(), "x-amzn-trace-id", "Root=garbage"), //nolint:staticcheck // SA1029: aws-lambda-go's key
	} {
		f := &fakeProducer{}
		resp, err := newRelay(t, f, nil).Handle(ctx, events.DynamoDBEvent{Records: outboxtest.History("job-42", jobs.EventStarted)})
		require.NoError(t, err, name)
		require.Empty(t, resp.BatchItemFailures, name)
		require.Len(t, f.produced, 2, name)
		for _, r := range f.produced {
			require.Len(t, r.Headers, 3, name) // the outbox id, the type, the partition count
			for _, h := range r.Headers {
				require.NotEqual(t, kafkaout.HeaderTrace, h.Key, name)
			}
		}
	}
}

// A record the producer fails stops its job: the job's later versions are
// never produced, other jobs go on, and the response names the failed
// record's stream record, so Lambda retries from it.
func TestAFailedRecordStopsItsJobAndTheResponseNamesItsStreamRecord(t *testing.T) {
	t.Parallel()
	a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	b := outboxtest.History("job-43", jobs.EventStarted, jobs.EventProgress)
	f := &fakeProducer{answer: failing("job-42/v2")}
	var logs bytes.Buffer
	resp, err := newRelay(t, f, slog.New(slog.NewJSONHandler(&logs, nil))).Handle(t.Context(),
		events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1], a[2], b[2], a[3]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[2].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0", "job-43/v0"}, f.ids(commandsTopic))
	require.Equal(t, []string{"job-42/v1", "job-43/v1", "job-42/v2", "job-43/v2"}, f.ids(eventsTopic), "job-42/v3 is never produced")
	require.Contains(t, logs.String(), `"job_id":"job-42"`)
	require.Contains(t, logs.String(), "injected")

	// The retry from the named record publishes the rest in order; job-43's
	// records, published already, go again and are told by their ids.
	f = &fakeProducer{}
	resp, err = newRelay(t, f, nil).Handle(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[2], b[2], a[3]}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v2", "job-43/v2", "job-42/v3"}, f.ids(eventsTopic))
}

// A failure on one topic stops only the jobs whose records it failed; the
// earliest record not published is named.
func TestTheResponseNamesTheEarliestRecordNotPublished(t *testing.T) {
	t.Parallel()
	a := outboxtest.History("job-42", jobs.EventStarted)
	b := outboxtest.History("job-43", jobs.EventStarted)
	f := &fakeProducer{answer: func(r *kgo.Record, promise func(*kgo.Record, error)) {
		if r.Topic == eventsTopic {
			promise(r, errors.New("events down"))
			return
		}
		promise(r, nil)
	}}
	resp, err := newRelay(t, f, nil).Handle(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
}
