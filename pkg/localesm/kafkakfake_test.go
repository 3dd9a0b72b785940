package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests run the mapping on franz-go against kfake, an in-process
// broker speaking Kafka's protocol on 127.0.0.1: what the fake cannot
// show (real compaction, transactions, a group's rebalance).

// kfakeCommitted reads a group's committed offsets.
func kfakeCommitted(t *testing.T, cl *kgo.Client, group string) map[kafkaTP]int64 {
	t.Helper()
	offsets, err := kadm.NewClient(cl).FetchOffsets(t.Context(), group)
	out := map[kafkaTP]int64{}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out // the group has not joined yet
	}
	require.NoError(t, err)
	offsets.Each(func(o kadm.OffsetResponse) { out[kafkaTP{o.Topic, o.Partition}] = o.At })
	return out
}

// runOnKfake runs a mapping on the broker at addrs until the test ends.
func runOnKfake(t *testing.T, addrs []string, cfg KafkaConfig) (stop func()) {
	t.Helper()
	cfg.BootstrapServers = addrs
	cfg.Topics = []string{testTopic}
	m, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	return runMapping(t, m.Run)
}

func produceSync(t *testing.T, cl *kgo.Client, partition int32, key, value string) int64 {
	t.Helper()
	r := &kgo.Record{Topic: testTopic, Partition: partition, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	require.NoError(t, cl.ProduceSync(t.Context(), r).FirstErr())
	return r.Offset
}

// TestKafkaGapsOnKfakeNeverStall: a compacted topic's missing offsets and
// an aborted transaction (its records and markers) are never invoked nor
// waited for, and a commit after a gap goes to the next record there is.
func TestKafkaGapsOnKfakeNeverStall(t *testing.T) {
	t.Parallel()
	addrs, producer, cluster := startKfake(t, 1, map[string]string{"cleanup.policy": "compact"})
	for _, key := range []string{"a", "a", "a", "b", "b", "c"} { // one batch each
		produceSync(t, producer, 0, key, "v-"+key)
	}
	cluster.Compact() // keeps a@2, b@4 and c@5, the last batch
	abortedTransaction(t, addrs, 0)
	committedTx := produceSyncInTransaction(t, addrs, "d")
	last := produceSync(t, producer, 0, "e", "v-e")
	require.Equal(t, []int64{9, 11}, []int64{committedTx, last}, "offsets 6 to 8: the aborted transaction; 10: the commit marker")

	var log kafkaLog
	h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
		if len(log.batches()) == 1 {
			return json.RawMessage(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":9}}]}`), nil
		}
		return nil, nil
	}
	runOnKfake(t, addrs, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, MaximumBatchingWindow: time.Second}, &log, h))
	// The mapping records a settle after the broker took its commit: wait
	// for both, or the log may not hold the second yet.
	waitFor(t, 30*time.Second, "offset 12 to be committed and both batches settled", func() bool {
		return kfakeCommitted(t, producer, "g")[kafkaTP{testTopic, 0}] == 12 && len(log.settled()) >= 2
	})
	require.Equal(t, []map[string][]int64{tp0(2, 4, 5, 9, 11), tp0(9, 11)}, log.batches())
	commits := log.settled()
	require.Equal(t, map[string]int64{testTopic + "-0": 9}, commits[0].Committed, "to 9, the record after the aborted transaction, not to 6")
	require.Equal(t, map[string]int64{testTopic + "-0": 12}, commits[1].Committed)
}

// produceSyncInTransaction produces one record with key in a committed
// transaction and returns its offset.
func produceSyncInTransaction(t *testing.T, addrs []string, key string) int64 {
	t.Helper()
	tx, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(t.Name()+"-committed"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer tx.Close()
	require.NoError(t, tx.BeginTransaction())
	r := &kgo.Record{Topic: testTopic, Partition: 0, Key: []byte(key), Value: []byte("v-" + key)}
	require.NoError(t, tx.ProduceSync(t.Context(), r).FirstErr())
	require.NoError(t, tx.EndTransaction(t.Context(), kgo.TryCommit))
	return r.Offset
}

// TestKafkaTopicDestinationOnKfake: a record whose retries run out is
// produced to the destination topic, keyed as it was, with the failure's
// metadata and the event that held it.
func TestKafkaTopicDestinationOnKfake(t *testing.T) {
	t.Parallel()
	addrs, producer, cluster := startKfake(t, 1, nil)
	require.NoError(t, cluster.CreateTopic("fifoworker-failed", 1, nil))
	produceSync(t, producer, 0, "job-1", "fine")
	poison := produceSync(t, producer, 0, "job-2", "poison")
	produceSync(t, producer, 0, "", "fine")

	var log kafkaLog
	h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
		for _, r := range ev.Records[testTopic+"-0"] {
			if r.Offset == poison {
				return nil, errors.New("poison")
			}
		}
		return nil, nil
	}
	dest := KafkaTopicDestination{Producer: producer, Topic: "fifoworker-failed"}
	runOnKfake(t, addrs, testKafkaConfig(KafkaConfig{EventSource: EventSourceMSK, ClusterARN: testClusterARN,
		BisectBatchOnFunctionError: true, MaximumRetryAttempts: new(1), OnFailure: dest, MaximumBatchingWindow: time.Second}, &log, h))
	waitFor(t, 30*time.Second, "offset 3 to be committed", func() bool {
		return kfakeCommitted(t, producer, "g")[kafkaTP{testTopic, 0}] == 3
	})

	consumer, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics("fifoworker-failed"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	fs := consumer.PollFetches(ctx)
	require.NoError(t, fs.Err())
	msgs := fs.Records()
	require.Len(t, msgs, 1, "only the poison record")
	require.Equal(t, []byte("job-2"), msgs[0].Key, "keyed as the record was")
	var rec KafkaOnFailureRecord
	require.NoError(t, json.Unmarshal(msgs[0].Value, &rec))
	require.Equal(t, "RetriesExhausted", rec.RequestContext.Condition, "AWS's Kafka-destination spelling")
	require.Equal(t, 4, rec.RequestContext.ApproximateInvokeCount, "in the batch, its half, then alone: tried once and retried once")
	require.Equal(t, "Unhandled", rec.ResponseContext.FunctionError)
	require.Equal(t, 1, rec.KafkaBatchInfo.BatchSize)
	require.Equal(t, testClusterARN, rec.KafkaBatchInfo.EventSourceARN)
	require.Equal(t, fmt.Sprint(poison), rec.KafkaBatchInfo.RecordInfo.Offset)
	require.Nil(t, rec.KafkaBatchInfo.RecordsInfo)
	require.Equal(t, len(rec.Payload), rec.KafkaBatchInfo.PayloadSize)
	var payload events.KafkaEvent
	require.NoError(t, json.Unmarshal(rec.Payload, &payload))
	require.Equal(t, "aws:kafka", payload.EventSource)
	require.Len(t, payload.Records[testTopic+"-0"], 1)
	require.Equal(t, "cG9pc29u", payload.Records[testTopic+"-0"][0].Value, "the record itself, base64")
}

// TestKafkaMappingsInOneGroupShareItsPartitions: a second mapping in the
// group takes partitions over; a partition moved while its invocation ran
// is not committed by the mapping that lost it, and its new owner runs it
// from the last commit; in the end every record ran and every partition is
// committed to its end.
func TestKafkaMappingsInOneGroupShareItsPartitions(t *testing.T) {
	t.Parallel()
	const partitions = 4
	addrs, producer, _ := startKfake(t, partitions, nil)
	for p := range int32(partitions) {
		for i := range 3 {
			produceSync(t, producer, p, "", fmt.Sprintf("p%d-%d", p, i))
		}
	}

	var logA, logB kafkaLog
	release := make(chan struct{})
	holdFirst := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
		if len(logA.batches()) == 1 {
			<-release // the first batch, every partition's records, runs until B took some over
		}
		return nil, nil
	}
	runOnKfake(t, addrs, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: time.Second, FunctionTimeout: time.Minute}, &logA, holdFirst))
	waitFor(t, 30*time.Second, "A's first invocation", func() bool { return len(logA.batches()) == 1 })
	require.Len(t, logA.batches()[0], partitions, "one batch holds every partition")
	runOnKfake(t, addrs, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &logB, succeed))
	waitFor(t, 30*time.Second, "B to run the partitions it took over", func() bool { return len(logB.batches()) > 0 })
	close(release)

	for p := range int32(partitions) {
		produceSync(t, producer, p, "", fmt.Sprintf("p%d-late", p))
	}
	waitFor(t, 30*time.Second, "every partition committed to its end", func() bool {
		c := kfakeCommitted(t, producer, "g")
		for p := range int32(partitions) {
			if c[kafkaTP{testTopic, p}] != 4 {
				return false
			}
		}
		return true
	})

	moved := map[string]bool{}
	for _, b := range logB.batches() {
		for tp, offsets := range b {
			if !moved[tp] {
				require.Equal(t, int64(0), offsets[0], "B runs %s from the last commit: none", tp)
			}
			moved[tp] = true
		}
	}
	require.NotEmpty(t, moved)
	require.Less(t, len(moved), partitions, "A kept some partitions")
	first := logA.settled()[0]
	require.Equal(t, OutcomeSuccess, first.Outcome)
	for tp := range first.Committed {
		require.False(t, moved[tp], "A committed %s after losing it", tp)
	}
	for tp := range moved {
		for _, b := range logA.batches()[1:] {
			require.NotContains(t, b, tp, "A ran %s after losing it", tp)
		}
	}
	// Every record ran at least once, each partition in order by each mapping.
	for p := range partitions {
		tp := fmt.Sprintf("%s-%d", testTopic, p)
		var all []int64
		for _, log := range []*kafkaLog{&logA, &logB} {
			var mine []int64
			for _, b := range log.batches() {
				mine = append(mine, b[tp]...)
			}
			require.True(t, slices.IsSorted(mine), "%s in order: %v", tp, mine)
			all = append(all, mine...)
		}
		for off := range int64(4) {
			require.Contains(t, all, off, "%s offset %d ran", tp, off)
		}
	}
}
