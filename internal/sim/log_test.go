package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/sim"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

func newTopic(t *testing.T, partitions int) *sim.Topic {
	t.Helper()
	now := sim.Epoch
	tp, err := sim.NewTopic(sim.TopicConfig{Name: "commands", Partitions: partitions, Now: func() time.Time { return now }})
	require.NoError(t, err)
	return tp
}

// The partitioner is Kafka's default for a keyed record (murmur2 of the
// key, its sign bit cleared, modulo the partition count), the one franz-go
// uses by default and Java's clients use: a job's records land where a
// real producer would put them.
func TestTheTopicPartitionsKeysAsKafkasDefaultPartitioner(t *testing.T) {
	t.Parallel()
	for _, partitions := range []int{1, 2, 3, 4, 7, 16} {
		tp := newTopic(t, partitions)
		kp := kgo.StickyKeyPartitioner(nil).ForTopic("commands")
		seen := map[int]bool{}
		for i := range 500 {
			key := []byte(fmt.Sprintf("job-%d-%x", i, i*7919))
			if i%50 == 0 {
				key = key[:i%5] // short keys exercise every tail length
			}
			want := kp.Partition(&kgo.Record{Key: key}, partitions)
			require.Equal(t, want, tp.PartitionOf(key), "key %q over %d partitions", key, partitions)
			seen[want] = true
		}
		require.Len(t, seen, partitions, "500 keys reach every one of %d partitions", partitions)
	}
}

// Kafka's murmur2 vectors (its clients' own unit test): the partitioner's
// hash is Kafka's, not merely franz-go's.
func TestMurmur2MatchesKafkasVectors(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		require.Equal(t, want, sim.Murmur2([]byte(key)), key)
	}
}

// A fetch returns the records from an offset on, in offset order, skipping
// offsets that hold no record (a transaction marker's, a compacted
// record's) without waiting for them.
func TestAFetchSkipsOffsetsThatHoldNoRecord(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 1)
	p := tp.Partition(0)
	a := p.Append([]byte("a"), []byte("1"))
	p.Skip(2) // a marker, or an aborted write
	b := p.Append([]byte("b"), []byte("2"))
	c := p.Append([]byte("a"), []byte("3"))
	require.Equal(t, []int64{0, 3, 4}, []int64{a.Offset, b.Offset, c.Offset})
	require.Nil(t, p.Appended(1), "a skipped offset holds no record")
	require.Same(t, c, p.Appended(4))
	require.Equal(t, int64(5), p.End())

	require.Equal(t, []*sim.LogRecord{a, b}, p.Fetch(0, 2))
	require.Equal(t, []*sim.LogRecord{b, c}, p.Fetch(1, 10), "from a missing offset: the next record")
	require.Equal(t, []*sim.LogRecord{c}, p.Fetch(4, 1))
	require.Empty(t, p.Fetch(5, 10), "at the end")
	require.Empty(t, p.Fetch(0, 0))
	require.Same(t, b, p.At(3))
	require.Nil(t, p.At(1))
}

// Compaction keeps each key's latest record and removes an older one only
// below the bound (the active segment is never cleaned): the offsets stay
// as they were, with holes.
func TestCompactionKeepsEachKeysLatestRecord(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 1)
	p := tp.Partition(0)
	a0 := p.Append([]byte("a"), []byte("1"))
	b0 := p.Append([]byte("b"), []byte("1"))
	a1 := p.Append([]byte("a"), []byte("2"))
	c0 := p.Append([]byte("c"), []byte("1"))
	a2 := p.Append([]byte("a"), []byte("3"))
	b1 := p.Append([]byte("b"), []byte("2"))

	// Below offset 2: a0 has later records of its key, b0 too.
	removed := p.Compact(1)
	require.Equal(t, []*sim.LogRecord{a0}, removed, "the bound itself is not cleaned")
	removed = p.Compact(3)
	require.Equal(t, []*sim.LogRecord{b0, a1}, removed)
	require.True(t, a0.Compacted && b0.Compacted && a1.Compacted)
	require.Nil(t, p.At(0), "a compacted record is not fetched")
	require.Same(t, a0, p.Appended(0), "nor forgotten")
	require.Equal(t, []*sim.LogRecord{c0, a2, b1}, p.Fetch(0, 10))
	require.Empty(t, p.Compact(p.End()), "every key's latest record stays")
	require.Equal(t, []*sim.LogRecord{a0, b0, a1, c0, a2, b1}, p.All(), "All keeps the compacted records, for the checks")
}

// A commit from a member whose ownership of the partition ended (the
// partition moved in a rebalance) is refused, as Kafka refuses an
// OffsetCommit of a stale generation; the new owner's is taken.
func TestACommitOfAStaleGenerationIsRefused(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 2)
	g, err := sim.NewGroup(sim.GroupConfig{Name: "worker", Topic: tp, Consumers: 2})
	require.NoError(t, err)
	for range 3 {
		tp.Partition(0).Append([]byte("k"), []byte("v"))
	}
	owner, epoch := g.Owner(0)
	require.NoError(t, g.Commit(0, epoch, 1))
	require.Equal(t, int64(1), g.Committed(0))
	require.Equal(t, int64(2), g.Lag())

	to := g.Move(0)
	require.NotEqual(t, owner, to)
	newOwner, newEpoch := g.Owner(0)
	require.Equal(t, to, newOwner)
	require.Greater(t, newEpoch, epoch)

	require.ErrorIs(t, g.Commit(0, epoch, 3), sim.ErrIllegalGeneration)
	require.Equal(t, int64(1), g.Committed(0), "the refused commit moved nothing")
	require.NoError(t, g.Commit(0, newEpoch, 3))
	require.Equal(t, int64(0), g.Lag())
	tp.Partition(0).Skip(1) // a transaction's marker after the last record
	require.Equal(t, int64(0), g.Lag(), "an offset that holds no record is nothing to read")
	tp.Partition(0).Append(nil, nil)
	require.Equal(t, int64(1), g.Lag())
	_, other := g.Owner(1)
	require.NoError(t, g.Commit(1, other, 0), "the partition that stayed keeps its epoch")
}

// NewTopic and NewGroup refuse each invalid config with ErrInvalidConfig,
// the field named; each bound is valid itself.
func TestNewTopicAndNewGroupRefuseAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   sim.TopicConfig
		field string
	}{
		"no name":         {sim.TopicConfig{Partitions: 1}, "Name"},
		"a name with /":   {sim.TopicConfig{Name: "a/b", Partitions: 1}, "Name"},
		"a name too long": {sim.TopicConfig{Name: strings.Repeat("x", 250), Partitions: 1}, "Name"}, // legal characters: the length alone refuses it
		"no partitions":   {sim.TopicConfig{Name: "t", Partitions: 0}, "Partitions"},
	} {
		tp, err := sim.NewTopic(tc.cfg)
		require.ErrorIs(t, err, sim.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, tp, name)
	}
	for _, cfg := range []sim.TopicConfig{{Name: strings.Repeat("x", 249), Partitions: 1}, {Name: "a.b_c-D9", Partitions: 1}} {
		_, err := sim.NewTopic(cfg)
		require.NoError(t, err, cfg.Name)
	}
	tp := newTopic(t, 1)
	for name, tc := range map[string]struct {
		cfg   sim.GroupConfig
		field string
	}{
		"no name":      {sim.GroupConfig{Topic: tp, Consumers: 1}, "Name"},
		"no topic":     {sim.GroupConfig{Name: "g", Consumers: 1}, "Topic"},
		"no consumers": {sim.GroupConfig{Name: "g", Topic: tp}, "Consumers"},
	} {
		g, err := sim.NewGroup(tc.cfg)
		require.ErrorIs(t, err, sim.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, g, name)
	}
	_, err := sim.NewGroup(sim.GroupConfig{Name: "g", Topic: tp, Consumers: 1})
	require.NoError(t, err)
}

// Produce puts a keyed record in its key's partition, and records without
// a key in turn in each partition (Kafka's default spreads them).
func TestProduceKeepsAKeyInItsPartition(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 3)
	for i := range 30 {
		key := []byte(fmt.Sprintf("job-%d", i%4))
		r, err := tp.Produce(key, []byte("v"))
		require.NoError(t, err)
		require.Equal(t, tp.PartitionOf(key), r.Partition)
		require.Same(t, r, tp.Partition(r.Partition).At(r.Offset))
	}
	var parts []int
	for range 4 {
		r, err := tp.Produce(nil, []byte("v"))
		require.NoError(t, err)
		parts = append(parts, r.Partition)
	}
	require.Equal(t, []int{0, 1, 2, 0}, parts)
}

// A compacted topic refuses a record without a key, as Kafka's brokers do
// (INVALID_RECORD: compaction keeps a key's latest record, and a record
// with no key has none): nothing is appended, anywhere. A keyed record,
// and a record without a key on a topic that is not compacted, are taken.
func TestACompactedTopicRefusesARecordWithoutAKey(t *testing.T) {
	t.Parallel()
	tp, err := sim.NewTopic(sim.TopicConfig{Name: "commands", Partitions: 2, Compacted: true})
	require.NoError(t, err)
	r, err := tp.Produce(nil, []byte("v"))
	require.ErrorIs(t, err, sim.ErrNullKeyOnCompactedTopic)
	require.Nil(t, r)
	r, err = tp.ProduceTo(1, nil, []byte("v"))
	require.ErrorIs(t, err, sim.ErrNullKeyOnCompactedTopic)
	require.Nil(t, r)
	require.Equal(t, []int64{0, 0}, []int64{tp.Partition(0).End(), tp.Partition(1).End()}, "nothing appended")
	_, err = tp.Produce([]byte("k"), []byte("v"))
	require.NoError(t, err)
	_, err = newTopic(t, 2).Produce(nil, []byte("v"))
	require.NoError(t, err, "a topic that is not compacted takes it")
}

// ProduceTo puts a record in the partition it names, whatever its key
// hashes to, with its headers; a partition the topic lacks is refused.
func TestProduceToNamesThePartition(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 3)
	key := []byte("job-1")
	other := (tp.PartitionOf(key) + 1) % 3
	r, err := tp.ProduceTo(other, key, []byte("v"), kafka.Header{Key: "h", Value: []byte("x")})
	require.NoError(t, err)
	require.Equal(t, other, r.Partition)
	require.Equal(t, []kafka.Header{{Key: "h", Value: []byte("x")}}, r.Headers)
	for _, n := range []int{-1, 3} {
		_, err = tp.ProduceTo(n, key, nil)
		require.Error(t, err, n)
	}
	_, err = tp.ProduceTo(2, key, nil)
	require.NoError(t, err, "the last partition is the topic's")
}

// Compaction never takes records without a key for records of one shared
// key: each stays.
func TestCompactionLeavesRecordsWithoutAKey(t *testing.T) {
	t.Parallel()
	p := newTopic(t, 1).Partition(0)
	n0 := p.Append(nil, []byte("1"))
	n1 := p.Append(nil, []byte("2"))
	p.Append([]byte("a"), nil)
	require.Empty(t, p.Compact(p.End()))
	require.False(t, n0.Compacted || n1.Compacted)
}

// An aborted record keeps its offset and is never fetched, as a
// read_committed consumer never sees an aborted transaction's records.
func TestAnAbortedRecordIsNeverFetched(t *testing.T) {
	t.Parallel()
	p := newTopic(t, 1).Partition(0)
	a := p.Append([]byte("a"), nil)
	b := p.Append([]byte("b"), nil)
	p.Abort(b)
	p.Skip(1) // the abort marker
	c := p.Append([]byte("b"), nil)
	require.True(t, b.Aborted)
	require.Same(t, b, p.Appended(1), "an aborted record keeps its offset")
	require.False(t, a.Aborted || c.Aborted)
	require.Equal(t, []*sim.LogRecord{a, c}, p.Fetch(0, 10))
	require.Equal(t, int64(3), c.Offset)
	require.Nil(t, p.At(1))
}

// A topic grows (Kafka only adds partitions): the new partitions are
// empty, the old ones keep their records, and a keyed record goes where
// murmur2 modulo the new count puts it, unless the producer partitions
// over the count it knows (ProduceOver: a producer whose metadata is
// stale), which it then stamps. A topic never shrinks.
func TestATopicGrowsAndAProducerMayPartitionOverTheOldCount(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 2)
	old, err := tp.Produce([]byte("job-7"), []byte("v"))
	require.NoError(t, err)
	require.NoError(t, tp.Grow(5))
	require.Equal(t, 5, tp.Partitions())
	require.Equal(t, int64(0), tp.Partition(4).End())
	require.Same(t, old, tp.Partition(old.Partition).At(0), "the old partitions keep their records")
	require.Error(t, tp.Grow(4), "Kafka cannot take partitions away")
	require.Error(t, tp.Grow(5), "nor grow to the count it has")

	var moved []byte
	for i := 0; moved == nil; i++ {
		if k := []byte(fmt.Sprintf("job-%d", i)); int(sim.Murmur2(k)&0x7fffffff)%2 != tp.PartitionOf(k) {
			moved = k
		}
	}
	now, err := tp.Produce(moved, []byte("v"))
	require.NoError(t, err)
	require.Equal(t, tp.PartitionOf(moved), now.Partition, "over the new count")
	stale, err := tp.ProduceOver(2, moved, []byte("v"))
	require.NoError(t, err)
	require.Equal(t, int(sim.Murmur2(moved)&0x7fffffff)%2, stale.Partition, "over the count the producer knows")
	require.NotEqual(t, now.Partition, stale.Partition)
	_, err = tp.ProduceOver(6, moved, nil)
	require.Error(t, err, "a count the topic does not have")
	_, err = tp.ProduceOver(0, moved, nil)
	require.Error(t, err)

	var parts []int
	for range 3 {
		r, err := tp.ProduceOver(2, nil, []byte("v"))
		require.NoError(t, err)
		parts = append(parts, r.Partition)
	}
	require.Equal(t, []int{0, 1, 0}, parts, "records without a key in turn over the count known")
}

// A group follows its topic's growth (Grow): each new partition is owned
// by a member at a new epoch, with nothing committed (from offset 0, as a
// group with no commit for a partition starts at TRIM_HORIZON); the old
// partitions keep their owners, epochs and commits.
func TestAGroupTakesTheNewPartitionsOfItsTopic(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 2)
	g, err := sim.NewGroup(sim.GroupConfig{Name: "worker", Topic: tp, Consumers: 3})
	require.NoError(t, err)
	tp.Partition(1).Append([]byte("k"), nil)
	_, e1 := g.Owner(1)
	require.NoError(t, g.Commit(1, e1, 1))
	require.NoError(t, tp.Grow(4))
	g.Grow()
	owner, epoch := g.Owner(3)
	require.NotEmpty(t, owner)
	require.Greater(t, epoch, e1)
	require.Equal(t, int64(0), g.Committed(3))
	require.NoError(t, g.Commit(3, epoch, 0))
	_, still := g.Owner(1)
	require.Equal(t, e1, still)
	require.Equal(t, int64(1), g.Committed(1))
	tp.Partition(3).Append([]byte("k"), nil)
	require.Equal(t, int64(1), g.Lag())
}

// A topic refuses a record larger than its max.message.bytes
// (MESSAGE_TOO_LARGE): nothing is appended. A record of exactly the limit
// is taken. The size is the record's key, value and headers.
func TestATopicRefusesARecordOverItsMaxMessageBytes(t *testing.T) {
	t.Parallel()
	tp, err := sim.NewTopic(sim.TopicConfig{Name: "commands", Partitions: 1, MaxMessageBytes: 100})
	require.NoError(t, err)
	h := kafka.Header{Key: "hh", Value: []byte("vvvv")} // 6 bytes
	r, err := tp.Produce([]byte("key"), make([]byte, 100-3-6), h)
	require.NoError(t, err, "exactly the limit")
	require.Equal(t, 100, sim.RecordBytes(r.Key, r.Value, r.Headers))
	_, err = tp.Produce([]byte("key"), make([]byte, 100-3-6+1), h)
	require.ErrorIs(t, err, sim.ErrRecordTooLarge)
	_, err = tp.ProduceTo(0, []byte("key"), make([]byte, 101))
	require.ErrorIs(t, err, sim.ErrRecordTooLarge)
	require.Equal(t, int64(1), tp.Partition(0).End(), "nothing appended")
	def, err := sim.NewTopic(sim.TopicConfig{Name: "events", Partitions: 1})
	require.NoError(t, err)
	_, err = def.Produce(nil, make([]byte, sim.DefaultMaxMessageBytes))
	require.NoError(t, err, "Kafka's default limit")
	_, err = def.Produce(nil, make([]byte, sim.DefaultMaxMessageBytes+1))
	require.ErrorIs(t, err, sim.ErrRecordTooLarge)
	_, err = sim.NewTopic(sim.TopicConfig{Name: "events", Partitions: 1, MaxMessageBytes: -1})
	require.ErrorIs(t, err, sim.ErrInvalidConfig)
}

// KeyRecords are a key's records in the order they were produced, across
// partitions (a key's partition changes when its topic grows), and each
// record's Seq is its place in the topic's production order.
func TestKeyRecordsFollowAKeyAcrossPartitions(t *testing.T) {
	t.Parallel()
	tp := newTopic(t, 1)
	a, _ := tp.Produce([]byte("k"), []byte("1"))
	_, err := tp.Produce([]byte("other"), []byte("x"))
	require.NoError(t, err)
	require.NoError(t, tp.Grow(8))
	b, _ := tp.ProduceTo(5, []byte("k"), []byte("2"))
	c := tp.Partition(0).Append([]byte("k"), []byte("3"))
	n := tp.Partition(0).Append(nil, []byte("4"))
	require.Equal(t, []*sim.LogRecord{a, b, c}, tp.KeyRecords([]byte("k")))
	require.Empty(t, tp.KeyRecords(nil), "a record without a key has no key's order")
	require.Less(t, a.Seq, b.Seq)
	require.Less(t, b.Seq, c.Seq)
	require.Less(t, c.Seq, n.Seq)
}
