package kafkaout_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// readAll reads n records of topic from its start, every partition.
func readAll(ctx context.Context, t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		got = append(got, cl.PollFetches(ctx).Records()...)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(got), n)
	}
	return got
}

func headerValues(r *kgo.Record, key string) []string {
	var out []string
	for _, h := range r.Headers {
		if h.Key == key {
			out = append(out, string(h.Value))
		}
	}
	return out
}

// The relay's producer partitions a keyed record only over the partition
// count it carries, and stamps one that carries none with the count it
// partitioned over, once: one that carries another count (or one that is
// not a number) is refused, and nothing of it is written. A record without
// a key carries no count and is never refused for one.
func TestAKeyedRecordIsPartitionedOnlyOverTheCountItCarries(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 4, "commands")
	p, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stamped := func(value, count string) *kgo.Record {
		return &kgo.Record{Topic: "commands", Key: []byte("job-1"), Value: []byte(value), Headers: []kgo.RecordHeader{{Key: kafka.PartitionCountHeader, Value: []byte(count)}}}
	}
	results := p.ProduceSync(ctx,
		&kgo.Record{Topic: "commands", Key: []byte("job-1"), Value: []byte("none")},
		stamped("4", "4"),
		stamped("3", "3"),
		stamped("5", "5"),
		stamped("04", "04"),
		stamped("x", "x"),
		&kgo.Record{Topic: "commands", Value: []byte("no key"), Headers: []kgo.RecordHeader{{Key: kafka.PartitionCountHeader, Value: []byte("9")}}},
	)
	refused := map[string]bool{}
	for _, r := range results {
		if r.Err != nil {
			refused[string(r.Record.Value)] = true
		}
	}
	require.Equal(t, map[string]bool{"3": true, "5": true, "04": true, "x": true}, refused)
	written := map[string][]string{}
	for _, r := range readAll(ctx, t, c.ListenAddrs(), "commands", 3) {
		written[string(r.Value)] = headerValues(r, kafka.PartitionCountHeader)
	}
	require.Equal(t, map[string][]string{"none": {"4"}, "4": {"4"}, "no key": {"9"}}, written)
}

// movedKey returns a key whose partition differs over from and to
// partitions, by kgo's default (murmur2) partitioner.
func movedKey(t *testing.T, from, to int) string {
	t.Helper()
	tp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 1000 {
		k := fmt.Sprintf("job-%d", i)
		if tp.Partition(&kgo.Record{Key: []byte(k)}, from) != tp.Partition(&kgo.Record{Key: []byte(k)}, to) {
			return k
		}
	}
	t.Fatal("no key moves")
	return ""
}

func lambdaRecord(r *kgo.Record) events.KafkaRecord {
	out := events.KafkaRecord{Topic: r.Topic, Partition: int64(r.Partition), Offset: r.Offset,
		Key: base64.StdEncoding.EncodeToString(r.Key), Value: base64.StdEncoding.EncodeToString(r.Value)}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, map[string]events.JSONNumberBytes{h.Key: h.Value})
	}
	return out
}

// A key moved by partitions added to its topic is held, never run out of
// order: its record produced after the change, on its new partition,
// carries the new count, and a consumer configured with the old one holds
// the key there; its older record, still waiting in the old partition, is
// then refused (another partition than the hold's) rather than run after
// it. Nothing of the key runs.
func TestAKeyMovedByAddedPartitionsIsHeldNotReordered(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 2, "commands")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	key := movedKey(t, 2, 8)
	before, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	require.NoError(t, before.ProduceSync(ctx, &kgo.Record{Topic: "commands", Key: []byte(key), Value: []byte("v1")}).FirstErr())
	before.Close()

	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer adm.Close()
	_, err = kadm.NewClient(adm).CreatePartitions(ctx, 6, "commands")
	require.NoError(t, err)
	after, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	defer after.Close()
	require.NoError(t, after.ProduceSync(ctx, &kgo.Record{Topic: "commands", Key: []byte(key), Value: []byte("v2")}).FirstErr())

	recs := map[string]*kgo.Record{}
	for _, r := range readAll(ctx, t, c.ListenAddrs(), "commands", 2) {
		recs[string(r.Value)] = r
	}
	require.NotEqual(t, recs["v1"].Partition, recs["v2"].Partition, "the key moved")
	require.Equal(t, []string{"2"}, headerValues(recs["v1"], kafka.PartitionCountHeader))
	require.Equal(t, []string{"8"}, headerValues(recs["v2"], kafka.PartitionCountHeader))

	store := quarantine.NewMemoryStore()
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: "commands"})
	require.NoError(t, err)
	var mu sync.Mutex
	var ran []string
	p, err := kafka.New(kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, string(r.Value))
		return nil
	}, Quarantine: q, QuarantineThreshold: 3, PartitionCount: 2})
	require.NoError(t, err)
	batch := func(r *kgo.Record) events.KafkaEvent {
		return events.KafkaEvent{Records: map[string][]events.KafkaRecord{kafka.TopicPartition(r.Topic, int64(r.Partition)): {lambdaRecord(r)}}}
	}
	// The new partition is read first: its mapping's poller got there first.
	resp, err := p.Process(ctx, batch(recs["v2"]))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "parked")
	h, err := store.Hold(ctx, "commands", key)
	require.NoError(t, err)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Contains(t, h.Cause, "partitioned over 8, the topic has 2")

	resp, err = p.Process(ctx, batch(recs["v1"]))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1, "refused: the key is held on another partition")
	require.Empty(t, ran, "nothing of the key ran, in either order")
}

// Records without a key are partitioned as kgo's default partitioner
// would: sticky to a partition until a new batch, then another. (The
// wrapper passes kgo's OnNewBatch on; without it they would all go to one
// partition.)
func TestRecordsWithoutAKeyStillSpreadOverPartitions(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 4, "events")
	p, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: c.ListenAddrs()})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const n = 40
	for i := range n {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, "%d", i)}).FirstErr())
	}
	partitions := map[int32]bool{}
	for _, r := range readAll(ctx, t, c.ListenAddrs(), "events", n) {
		partitions[r.Partition] = true
	}
	require.Greater(t, len(partitions), 1)
}
