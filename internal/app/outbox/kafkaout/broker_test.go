package kafkaout_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// These tests run the relay on kfake, franz-go's in-process broker (the
// real protocol, idempotent producers included), on 127.0.0.1: one broker,
// the two topics of 4 partitions each (partitions).

// brokerBundle is a test's broker and the relay's producer on it.
type brokerBundle struct {
	cluster  *kfake.Cluster
	addrs    []string
	producer *kgo.Client
	logs     *bytes.Buffer // the relay's log, written in Handle alone
}

func setupBroker(t *testing.T) *brokerBundle {
	t.Helper()
	return setupBrokerWith(t, partitions)
}

// setupBrokerWith is setupBroker with topics of n partitions.
func setupBrokerWith(t *testing.T, n int32) *brokerBundle {
	t.Helper()
	c := newCluster(t, n, commandsTopic, eventsTopic)
	b := &brokerBundle{cluster: c, addrs: c.ListenAddrs(), logs: &bytes.Buffer{}}
	b.producer = b.newProducer(t, "")
	return b
}

// newCluster is a one-broker kfake cluster on 127.0.0.1 with the topics of
// n partitions each, closed when the test ends.
func newCluster(t *testing.T, n int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(n, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newProducer is another relay producer on the bundle's broker (another
// execution environment's), named id ("" for the default).
func (b *brokerBundle) newProducer(t *testing.T, id string) *kgo.Client {
	t.Helper()
	p, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: b.addrs, ClientID: id})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// relay is the relay on the bundle's producer, logging into b.logs.
func (b *brokerBundle) relay(t *testing.T, cfg kafkaout.Config) *outbox.Relay {
	t.Helper()
	cfg.Producer = b.producer
	if cfg.CommandsTopic == "" {
		cfg.CommandsTopic = commandsTopic
	}
	if cfg.EventsTopic == "" {
		cfg.EventsTopic = eventsTopic
	}
	if cfg.PartitionCount == 0 {
		cfg.PartitionCount = partitions
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(b.logs, nil))
	r, err := kafkaout.NewRelay(cfg)
	require.NoError(t, err)
	return r
}

// consume reads every record of topic, from the start to the end offsets
// the broker gives now, in each partition's order.
func (b *brokerBundle) consume(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	var want int64
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	var recs []*kgo.Record
	for int64(len(recs)) < want {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records of %s", len(recs), want, topic)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// lanes are the outbox ids of recs per key, in offset order, and the one
// partition of each key (a key in two partitions fails the test).
func lanes(t *testing.T, recs []*kgo.Record) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	partition := map[string]int32{}
	last := map[int32]int64{}
	for _, r := range recs {
		key := string(r.Key)
		if p, ok := partition[key]; ok {
			require.Equal(t, p, r.Partition, "job %s in two partitions", key)
		}
		partition[key] = r.Partition
		if o, ok := last[r.Partition]; ok {
			require.Greater(t, r.Offset, o, "partition %d read out of order", r.Partition)
		}
		last[r.Partition] = r.Offset
		out[key] = append(out[key], header(r, kafkaout.HeaderOutboxID))
	}
	return out
}

// failProduce answers the produce requests for which fail is true with
// code on every partition, and lets the others through; it counts them.
func failProduce(c *kfake.Cluster, code int16, fail func(n int64) bool) *atomic.Int64 {
	var n atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !fail(n.Add(1)) {
			return nil, nil, false
		}
		preq := req.(*kmsg.ProduceRequest)
		resp := preq.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range preq.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, code, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	return &n
}

// On a broker, the relay's records are written idempotently (a producer id
// on every batch) with acks from all replicas; a consumer finds each job's
// records on one partition of each topic, in version order, keyed by the
// job, with the outbox id, the type and the trace header, and bodies the
// consumers' decoders accept.
func TestOnABrokerEachJobsRecordsAreIdempotentKeyedAndInOrder(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	var acks []int16
	var mu sync.Mutex
	b.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		mu.Lock()
		acks = append(acks, req.(*kmsg.ProduceRequest).Acks)
		mu.Unlock()
		return nil, nil, false
	})
	var recs []events.DynamoDBEventRecord
	histories := map[string][]events.DynamoDBEventRecord{}
	for _, id := range []string{"job-1", "job-2", "job-3", "job-4", "job-5", "job-6"} {
		histories[id] = outboxtest.History(id, jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	}
	for v := range 4 {
		for _, id := range []string{"job-1", "job-2", "job-3", "job-4", "job-5", "job-6"} {
			recs = append(recs, histories[id][v])
		}
	}
	const trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	ctx := context.WithValue(t.Context(), "x-amzn-trace-id", trace) //nolint:staticcheck // SA1029: aws-lambda-go's own key, a plain string
	resp, err := b.relay(t, kafkaout.Config{}).Handle(ctx, events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, b.logs.String())

	mu.Lock()
	require.NotEmpty(t, acks)
	for _, a := range acks {
		require.Equal(t, int16(-1), a, "acks from all in-sync replicas")
	}
	mu.Unlock()
	commands, evts := b.consume(t, commandsTopic), b.consume(t, eventsTopic)
	require.Len(t, commands, 6)
	require.Len(t, evts, 18)
	for _, r := range append(commands, evts...) {
		require.GreaterOrEqual(t, r.ProducerID, int64(0), "an idempotent producer's batch")
		require.Equal(t, trace, header(r, kafkaout.HeaderTrace))
		if r.Topic == commandsTopic {
			c, err := outbox.DecodeCommand(string(r.Value))
			require.NoError(t, err)
			require.Equal(t, c.JobID, string(r.Key))
			require.Equal(t, c.CommandID, header(r, kafkaout.HeaderOutboxID))
			require.Equal(t, c.Type, header(r, kafkaout.HeaderType))
			continue
		}
		e, err := outbox.DecodeEvent(string(r.Value))
		require.NoError(t, err)
		require.Equal(t, e.JobID, string(r.Key))
		require.Equal(t, e.EventID, header(r, kafkaout.HeaderOutboxID))
		require.Equal(t, e.Type, header(r, kafkaout.HeaderType))
	}
	byJob := lanes(t, evts)
	for id := range histories {
		require.Equal(t, []string{id + "/v1", id + "/v2", id + "/v3"}, byJob[id])
		require.Equal(t, []string{id + "/v0"}, lanes(t, commands)[id])
	}
}

// A produce the broker refuses (here INVALID_RECORD, on the request that
// holds job-42's version 2) is the record's failure: the relay names its
// stream record and never produces version 3; the retry from there
// publishes both, and the consumer reads the job's events in order.
func TestABrokersRefusalStopsTheJobAtTheRefusedRecord(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	// One record per round, so one produce request each: v0, v1, v2, v3.
	requests := failProduce(b.cluster, kerr.InvalidRecord.Code, func(n int64) bool { return n == 3 })
	relay := b.relay(t, kafkaout.Config{})
	resp, err := relay.Handle(t.Context(), events.DynamoDBEvent{Records: a})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[2].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, int64(3), requests.Load(), "job-42/v3 is never produced")
	require.Equal(t, map[string][]string{"job-42": {"job-42/v1"}}, lanes(t, b.consume(t, eventsTopic)))
	require.Contains(t, b.logs.String(), "INVALID_RECORD")

	resp, err = relay.Handle(t.Context(), events.DynamoDBEvent{Records: a[2:]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, map[string][]string{"job-42": {"job-42/v1", "job-42/v2", "job-42/v3"}}, lanes(t, b.consume(t, eventsTopic)))
	require.Equal(t, map[string][]string{"job-42": {"job-42/v0"}}, lanes(t, b.consume(t, commandsTopic)))
}

// A record whose write outlives the relay's wait (the broker answers after
// the invocation's deadline less the reserve) counts as not published, and
// the retry publishes it again: the consumer reads the copy after the
// first, both with the same outbox id, and the job's next version after
// both. A consumer drops the copy by that id.
func TestARecordWrittenAfterTheWaitIsPublishedAgainAndToldByItsID(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventCompleted)
	release := make(chan struct{})
	var requests atomic.Int64
	b.cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		if requests.Add(1) == 1 { // job-42/v1: written, but acknowledged only once released
			b.cluster.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	relay := b.relay(t, kafkaout.Config{ResponseReserve: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	// From version 1 on: the held request is the first, whatever the time
	// the client takes to connect.
	resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: a[1:]})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), "not acknowledged by 100ms before the invocation's deadline")
	close(release)

	resp, err = relay.Handle(t.Context(), events.DynamoDBEvent{Records: a[1:]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, map[string][]string{"job-42": {"job-42/v1", "job-42/v1", "job-42/v2"}}, lanes(t, b.consume(t, eventsTopic)))
}

// A topic that does not exist fails its records with a message saying so
// (the relay creates no topic, and the broker here creates none either):
// the response names the first, and nothing of the job goes on.
func TestATopicThatDoesNotExistIsAClearFailure(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	a := outboxtest.History("job-42", jobs.EventStarted)
	resp, err := b.relay(t, kafkaout.Config{EventsTopic: "fifoworker-no-such-events"}).Handle(t.Context(), events.DynamoDBEvent{Records: a})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), `topic \"fifoworker-no-such-events\" does not exist`)
	require.Contains(t, b.logs.String(), "UNKNOWN_TOPIC_OR_PARTITION")
	require.Equal(t, map[string][]string{"job-42": {"job-42/v0"}}, lanes(t, b.consume(t, commandsTopic)))
}

// A record over the topic's max.message.bytes is refused by the broker
// (MESSAGE_TOO_LARGE) and is the record's failure, saying so; the job
// stops there, and the stream mapping's retries end it on the on-failure
// destination, where nothing of it is lost.
func TestARecordOverTheTopicsMaxMessageBytesIsAClearFailure(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	const small = "fifoworker-small-events"
	_, err := kadm.NewClient(b.producer).CreateTopic(t.Context(), partitions, 1, map[string]*string{"max.message.bytes": new("200")}, small)
	require.NoError(t, err)
	a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventCompleted)
	resp, err := b.relay(t, kafkaout.Config{EventsTopic: small}).Handle(t.Context(), events.DynamoDBEvent{Records: a})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), "max.message.bytes")
	require.Contains(t, b.logs.String(), "MESSAGE_TOO_LARGE")
	require.Empty(t, b.consume(t, small), "job-42/v2 waits for v1")
}

// With the broker gone, no record is acknowledged: the relay answers
// ResponseReserve before the deadline, the response names the first
// record, and the log asks whether the brokers are reachable.
func TestABrokerThatIsDownIsAClearFailure(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	b.cluster.Close()
	a := outboxtest.History("job-42", jobs.EventStarted)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	resp, err := b.relay(t, kafkaout.Config{ResponseReserve: 100 * time.Millisecond}).Handle(ctx, events.DynamoDBEvent{Records: a})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), "are the brokers reachable?")
}

// What kgo (v1.22.3) guarantees when a record of a partition fails, as
// read in its source (the comment on the sink type in kafkaout.go): a
// batch the broker refuses fails every record buffered behind it in its
// partition with the same error, so nothing later is written before it.
// The relay does not lean on it (it waits per round); this test keeps the
// reading honest: the first record's request is held until two more are
// buffered behind it, then refused.
func TestKgoFailsTheRecordsBehindARefusedBatchWithItsError(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	arrived, release := make(chan int32, 1), make(chan struct{})
	var requests atomic.Int64
	// Control functions run in the order they were added: this one holds
	// the first request, then failProduce's refuses it.
	b.cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		if requests.Add(1) == 1 {
			var batch kmsg.RecordBatch
			if err := batch.ReadFrom(req.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records); err != nil {
				batch.NumRecords = -1
			}
			arrived <- batch.NumRecords
			b.cluster.SleepControl(func() { <-release })
		}
		return nil, nil, false // on to failProduce's control
	})
	failProduce(b.cluster, kerr.InvalidRecord.Code, func(n int64) bool { return n == 1 })
	errs := make([]error, 3)
	var wg sync.WaitGroup
	produce := func(i int) {
		wg.Add(1)
		b.producer.Produce(t.Context(), &kgo.Record{Topic: eventsTopic, Key: []byte("job-42"), Value: []byte{byte(i)}},
			func(_ *kgo.Record, err error) { errs[i] = err; wg.Done() })
	}
	produce(0)
	select {
	case n := <-arrived:
		require.Equal(t, int32(1), n, "the first request holds the first record alone")
	case <-time.After(10 * time.Second): // a guard against a hang, not a wait
		require.FailNow(t, "the first produce request never came")
	}
	produce(1)
	produce(2)
	close(release)
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, kerr.InvalidRecord, "record %d", i)
	}
	require.Equal(t, int64(1), requests.Load(), "the records behind were failed in the client, never sent")
	require.Empty(t, b.consume(t, eventsTopic))
}

// And what it does not: a record too large for a batch on its own fails at
// once, alone (kerr.MessageTooLarge), and the partition's next record is
// written without it. A job's next version produced beside it would be
// published past a version that never was: hence the relay's rounds.
func TestKgoFailsATooLargeRecordAloneAndWritesTheNext(t *testing.T) {
	t.Parallel()
	b := setupBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.ProducerBatchMaxBytes(1000))
	require.NoError(t, err)
	defer cl.Close()
	large := &kgo.Record{Topic: eventsTopic, Key: []byte("job-42"), Value: bytes.Repeat([]byte("v"), 2000)}
	next := &kgo.Record{Topic: eventsTopic, Key: []byte("job-42"), Value: []byte("v+1")}
	results := map[*kgo.Record]error{}
	for _, r := range cl.ProduceSync(t.Context(), large, next) {
		results[r.Record] = r.Err
	}
	require.ErrorIs(t, results[large], kerr.MessageTooLarge)
	require.NoError(t, results[next])
	recs := b.consume(t, eventsTopic)
	require.Len(t, recs, 1)
	require.Equal(t, "v+1", string(recs[0].Value))
}
