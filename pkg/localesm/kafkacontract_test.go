package localesm

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// contractCluster is a cluster under the consumer contract, with topic
// testTopic of two partitions.
type contractCluster struct {
	// produce appends a record with a timestamp to a partition and
	// returns its offset.
	produce func(t *testing.T, partition int32, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) int64
	// gap makes the partition's next offsets hold no record a consumer
	// sees: the next record produced comes after them.
	gap func(t *testing.T, partition int32)
	// join makes a member of a group.
	join func(t *testing.T, cfg kafkaConsumerConfig) kafkaConsumer
	// committed reads a group's committed offsets.
	committed func(t *testing.T, group string) map[kafkaTP]int64
}

// TestKafkaContractOnTheFake and TestKafkaContractOnKfake hold the fake
// the mapping's unit tests run on, and franz-go on an in-process Kafka
// broker (kfake, which speaks Kafka's protocol), to the same behaviour:
// what the mapping relies on.
func TestKafkaContractOnTheFake(t *testing.T) {
	t.Parallel()
	runKafkaContract(t, func(t *testing.T) contractCluster {
		k := newFakeKafka(testTopic, 2)
		return contractCluster{
			produce: func(_ *testing.T, partition int32, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) int64 {
				return k.produceAt(partition, ts, key, value, headers...)
			},
			gap: func(_ *testing.T, partition int32) { k.skip(partition, 3) },
			join: func(t *testing.T, cfg kafkaConsumerConfig) kafkaConsumer {
				c, err := k.newConsumer(cfg)
				require.NoError(t, err)
				t.Cleanup(c.Close)
				return c
			},
			committed: func(_ *testing.T, group string) map[kafkaTP]int64 { return k.committed(group) },
		}
	})
}

func TestKafkaContractOnKfake(t *testing.T) {
	t.Parallel()
	runKafkaContract(t, func(t *testing.T) contractCluster {
		addrs, producer, _ := startKfake(t, 2, nil)
		return contractCluster{
			produce: func(t *testing.T, partition int32, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) int64 {
				r := &kgo.Record{Topic: testTopic, Partition: partition, Timestamp: ts, Key: key, Value: value, Headers: headers}
				require.NoError(t, producer.ProduceSync(t.Context(), r).FirstErr())
				return r.Offset
			},
			gap: func(t *testing.T, partition int32) { abortedTransaction(t, addrs, partition) },
			join: func(t *testing.T, cfg kafkaConsumerConfig) kafkaConsumer {
				cfg.bootstrap = addrs
				c, err := newKgoConsumer(cfg)
				require.NoError(t, err)
				t.Cleanup(c.Close)
				return c
			},
			committed: func(t *testing.T, group string) map[kafkaTP]int64 { return kfakeCommitted(t, producer, group) },
		}
	})
}

// startKfake starts an in-process Kafka broker on 127.0.0.1 with topic
// testTopic of partitions partitions and configs, and a producer for it
// that writes each record to the partition it names; both stop when the
// test ends.
func startKfake(t *testing.T, partitions int32, configs map[string]string) (addrs []string, producer *kgo.Client, cluster *kfake.Cluster) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	require.NoError(t, cluster.CreateTopic(testTopic, partitions, configs))
	producer, err = kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(producer.Close)
	return cluster.ListenAddrs(), producer, cluster
}

// abortedTransaction writes two records to a partition in a transaction
// and aborts it: a read_committed consumer sees neither, nor the abort
// marker, and the partition's offsets skip three.
func abortedTransaction(t *testing.T, addrs []string, partition int32) {
	t.Helper()
	tx, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(t.Name()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer tx.Close()
	require.NoError(t, tx.BeginTransaction())
	for range 2 {
		require.NoError(t, tx.ProduceSync(t.Context(), &kgo.Record{Topic: testTopic, Partition: partition, Value: []byte("aborted")}).FirstErr())
	}
	require.NoError(t, tx.EndTransaction(t.Context(), kgo.TryAbort))
}

// contractMember is a group member under test: what its callbacks said,
// in order, and the records its polls returned.
type contractMember struct {
	c kafkaConsumer

	mu      sync.Mutex
	events  []string // "assigned topic-0", "revoked topic-1", ...
	seqs    []int64  // each event's place among every member's, in callback order
	records []*kgo.Record
}

// contractSeq orders the callbacks of all members.
var contractSeq atomic.Int64

func joinContract(t *testing.T, cl contractCluster, group string, start StartingPosition, at time.Time) *contractMember {
	t.Helper()
	m := &contractMember{}
	note := func(what string) func([]kafkaTP) {
		return func(tps []kafkaTP) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, s := range tpStrings(tps) {
				m.events = append(m.events, what+" "+s)
				m.seqs = append(m.seqs, contractSeq.Add(1))
			}
		}
	}
	m.c = cl.join(t, kafkaConsumerConfig{topic: testTopic, group: group, start: start, startAt: at, assigned: note("assigned"), revoked: note("revoked")})
	return m
}

// poll polls once, for at most d, and keeps what it returned.
func (m *contractMember) poll(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	recs, _ := m.c.Poll(ctx)
	m.mu.Lock()
	m.records = append(m.records, recs...)
	m.mu.Unlock()
	m.c.AllowRebalance()
}

// until polls the members in turn until cond holds, failing the test
// after 20s.
func until(t *testing.T, what string, cond func() bool, members ...*contractMember) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		for _, m := range members {
			m.poll(50 * time.Millisecond)
		}
	}
}

func (m *contractMember) has(event string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.events, event)
}

// seq is when the event happened, 0 if it did not.
func (m *contractMember) seq(event string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.events, event); i >= 0 {
		return m.seqs[i]
	}
	return 0
}

func (m *contractMember) got() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}

// offsets are the offsets m polled from a partition, in order.
func (m *contractMember) offsets(partition int32) []int64 {
	var out []int64
	for _, r := range m.got() {
		if r.Partition == partition {
			out = append(out, r.Offset)
		}
	}
	return out
}

func runKafkaContract(t *testing.T, newCluster func(t *testing.T) contractCluster) {
	const p0, p1 = "assigned " + testTopic + "-0", "assigned " + testTopic + "-1"
	t.Run("records come in offset order, as produced", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		ts := time.Date(2026, 12, 1, 9, 0, 0, 123e6, time.UTC)
		headers := []kgo.RecordHeader{{Key: "h", Value: []byte{0xff, 0}}, {Key: "h", Value: []byte("2")}}
		cl.produce(t, 0, ts, []byte("k"), []byte("v"), headers...)
		cl.produce(t, 0, ts, nil, []byte("null key"))
		cl.produce(t, 0, ts, []byte{}, nil)
		m := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "three records", func() bool { return len(m.got()) == 3 }, m)
		recs := m.got()
		require.Equal(t, []int64{0, 1, 2}, m.offsets(0))
		require.Equal(t, []byte("k"), recs[0].Key)
		require.Equal(t, headers, recs[0].Headers, "headers in order, duplicates kept")
		require.True(t, ts.Equal(recs[0].Timestamp), "the producer's timestamp, to the millisecond")
		require.Equal(t, int8(0), recs[0].Attrs.TimestampType())
		require.Nil(t, recs[1].Key, "a null key stays null")
		require.NotNil(t, recs[2].Key, "an empty key is not a null one")
		require.Empty(t, recs[2].Key)
		require.Nil(t, recs[2].Value)
		require.True(t, m.has(p0) && m.has(p1), "one member holds every partition")
	})
	t.Run("a new member starts at the group's commit, else at its starting position", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		for range 3 {
			cl.produce(t, 0, time.Now(), nil, []byte("p0"))
		}
		cl.produce(t, 1, time.Now(), nil, []byte("p1"))
		a := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "four records", func() bool { return len(a.got()) == 4 }, a)
		require.NoError(t, a.c.Commit(t.Context(), map[kafkaTP]int64{{testTopic, 0}: 2}))
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 2}, cl.committed(t, "g"))
		a.c.Close()
		require.True(t, a.has("revoked "+testTopic+"-0") && a.has("revoked "+testTopic+"-1"), "leaving revokes what the member held")
		b := joinContract(t, cl, "g", Latest, time.Time{})
		until(t, "partition 0 from the commit, partition 1 from its start position", func() bool { return len(b.got()) >= 1 && b.has(p1) }, b)
		for range 5 {
			b.poll(50 * time.Millisecond)
		}
		require.Equal(t, []int64{2}, b.offsets(0), "the commit wins over the starting position")
		require.Empty(t, b.offsets(1), "no commit: Latest")
	})
	t.Run("LATEST starts after the last record, AT_TIMESTAMP at the first at or after the time", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		t0 := time.Now().Truncate(time.Millisecond)
		cl.produce(t, 0, t0.Add(-2*time.Second), nil, []byte("older"))
		cl.produce(t, 0, t0.Add(-time.Second), nil, []byte("at"))
		latest := joinContract(t, cl, "latest", Latest, time.Time{})
		at := joinContract(t, cl, "at", AtTimestamp, t0.Add(-time.Second))
		until(t, "assignments", func() bool { return latest.has(p0) && at.has(p0) && len(at.got()) == 1 }, latest, at)
		for range 10 { // give the consumer time to settle where it starts
			latest.poll(50 * time.Millisecond)
		}
		cl.produce(t, 0, t0, nil, []byte("new"))
		until(t, "the new record", func() bool { return len(latest.got()) == 1 && len(at.got()) == 2 }, latest, at)
		require.Equal(t, []int64{2}, latest.offsets(0))
		require.Equal(t, []int64{1, 2}, at.offsets(0))
	})
	t.Run("offsets may skip, and a commit at a missing offset resumes at the next record", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		cl.produce(t, 0, time.Now(), nil, []byte("0"))
		cl.produce(t, 0, time.Now(), nil, []byte("1"))
		cl.gap(t, 0)
		next := cl.produce(t, 0, time.Now(), nil, []byte("after the gap"))
		require.Greater(t, next, int64(2))
		a := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "three records", func() bool { return len(a.got()) == 3 }, a)
		require.Equal(t, []int64{0, 1, next}, a.offsets(0))
		require.NoError(t, a.c.Commit(t.Context(), map[kafkaTP]int64{{testTopic, 0}: 2}))
		a.c.Close()
		b := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "the record after the gap", func() bool { return len(b.got()) == 1 }, b)
		require.Equal(t, []int64{next}, b.offsets(0))
	})
	t.Run("a paused partition is not returned, and resumes where it was", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		a := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "assignments", func() bool { return a.has(p0) && a.has(p1) }, a)
		a.c.Pause(kafkaTP{testTopic, 0})
		for range 3 {
			cl.produce(t, 0, time.Now(), nil, []byte("p0"))
			cl.produce(t, 1, time.Now(), nil, []byte("p1"))
		}
		until(t, "partition 1", func() bool { return len(a.offsets(1)) == 3 }, a)
		for range 10 {
			a.poll(50 * time.Millisecond)
		}
		require.Empty(t, a.offsets(0))
		a.c.Resume(kafkaTP{testTopic, 0})
		until(t, "partition 0", func() bool { return len(a.offsets(0)) == 3 }, a)
		for range 5 {
			a.poll(50 * time.Millisecond)
		}
		require.Equal(t, []int64{0, 1, 2}, a.offsets(0), "every record once, in order")
	})
	t.Run("a second member takes a partition only after the first gave it up, and the broker takes either's commit", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		a := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "assignments", func() bool { return a.has(p0) && a.has(p1) }, a)
		b := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		var moved string
		until(t, "a partition to move", func() bool {
			for _, tp := range []string{testTopic + "-0", testTopic + "-1"} {
				if b.has("assigned " + tp) {
					moved = tp
					return a.has("revoked " + tp)
				}
			}
			return false
		}, b, a)
		require.Less(t, a.seq("revoked "+moved), b.seq("assigned "+moved), "revoked from a before b got it")
		partition := int32(moved[len(moved)-1] - '0')
		cl.produce(t, partition, time.Now(), nil, []byte("to b"))
		until(t, "b to read it", func() bool { return len(b.offsets(partition)) == 1 }, a, b)
		require.Empty(t, a.offsets(partition), "a polls nothing of a partition it gave up")

		// The broker does not check ownership: a stale member's commit
		// lands. So the mapping must not make one.
		require.NoError(t, a.c.Commit(t.Context(), map[kafkaTP]int64{{testTopic, partition}: 1}))
		require.Equal(t, int64(1), cl.committed(t, "g")[kafkaTP{testTopic, partition}])
	})
	t.Run("Poll ends with its context", func(t *testing.T) {
		t.Parallel()
		cl := newCluster(t)
		a := joinContract(t, cl, "g", TrimHorizon, time.Time{})
		until(t, "assignments", func() bool { return a.has(p0) }, a)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			recs, err := a.c.Poll(ctx)
			if len(recs) > 0 {
				err = errors.New("records from an empty topic")
			}
			done <- err
		}()
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("Poll did not return after its context was cancelled")
		}
		a.c.AllowRebalance()
	})
}
