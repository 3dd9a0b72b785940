package sim

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// ErrIllegalGeneration is a consumer group's refusal of an offset commit
// from a member whose ownership of the partition has ended: the partition
// moved to another member in a rebalance since the member fetched. Kafka
// answers such an OffsetCommit with ILLEGAL_GENERATION (the classic
// protocol) or a stale member epoch (KIP-848's), and the commit does not
// land.
var ErrIllegalGeneration = errors.New("sim: offset commit of a stale generation")

// ErrNullKeyOnCompactedTopic is a broker's refusal of a record without a
// key produced to a compacted topic (cleanup.policy=compact): Kafka's log
// validator refuses the batch ("Compacted topic cannot accept message
// without key"), the producer gets INVALID_RECORD, and nothing is
// appended. Compaction keeps a key's latest record, so a record with no
// key has no place on such a topic.
var ErrNullKeyOnCompactedTopic = errors.New("sim: a record without a key on a compacted topic (INVALID_RECORD)")

// ErrRecordTooLarge is a broker's refusal of a record larger than its
// topic's max.message.bytes: the producer gets MESSAGE_TOO_LARGE, and
// nothing is appended.
var ErrRecordTooLarge = errors.New("sim: a record over the topic's max.message.bytes (MESSAGE_TOO_LARGE)")

// DefaultMaxMessageBytes is Kafka's default max.message.bytes, a topic's
// largest record batch: 1,048,588 bytes (1 MiB and 12).
const DefaultMaxMessageBytes = 1048588

// LogRecord is a record a partition of a Topic holds.
type LogRecord struct {
	Topic     string
	Partition int
	Offset    int64
	// Key is nil for a null key.
	Key, Value []byte
	Headers    []kafka.Header
	// Time is the record's timestamp (CREATE_TIME): set by its producer,
	// so it need not rise with the offsets. Append sets it to Arrived.
	Time time.Time
	// Arrived is when the partition appended it (what a poller fetching at
	// once sees it arrive): a batching window runs from it.
	Arrived time.Time
	// Seq is the record's place in its topic's production order, across
	// partitions.
	Seq int64
	// Compacted: compaction removed it (a later record of its key stays).
	Compacted bool
	// Aborted: its transaction was aborted; a read_committed consumer
	// (Lambda's) never sees it.
	Aborted bool
}

// Partition is one partition of a Topic: an append-only log whose offsets
// may have holes.
type Partition struct {
	t     *Topic
	topic string
	n     int
	now   func() time.Time
	recs  []*LogRecord // the records a fetch can return, in offset order
	all   []*LogRecord // every record appended, compacted ones too
	end   int64        // the log end offset: the next offset to assign
}

// Topic is a Kafka topic of Partitions partitions, in simulated time:
//
//   - A keyed record goes to the partition Kafka's default partitioner
//     picks (PartitionOf), so a key's records are in one partition, in the
//     order they were appended.
//   - Offsets rise by one per record; an offset can hold no record (Skip: a
//     transaction marker, an aborted write; Compact: a record compacted
//     away), and a fetch passes over it.
//   - Compaction keeps each key's latest record; a compacted topic
//     refuses a record without a key (ErrNullKeyOnCompactedTopic).
//   - It refuses a record over its max.message.bytes (ErrRecordTooLarge).
//   - It can grow (Grow), as Kafka lets a topic's partitions be added, and
//     a key's partition then changes; a producer whose metadata is stale
//     partitions over the count it knows (ProduceOver).
type Topic struct {
	Name      string
	compacted bool
	maxBytes  int
	now       func() time.Time
	parts     []*Partition
	// unkeyed counts the records produced without a key: they go to each
	// partition in turn.
	unkeyed int
	// seq numbers the records appended; byKey holds each key's records in
	// that order.
	seq   int64
	byKey map[string][]*LogRecord
}

// TopicConfig configures a Topic. Name and Partitions are required.
type TopicConfig struct {
	// Name is the topic's: 1 to 249 of Kafka's legal characters, ASCII
	// letters, digits, '.', '_' and '-'.
	Name string
	// Partitions is how many partitions the topic has, at least 1.
	Partitions int
	// Compacted: the topic's cleanup.policy is compact, and Produce
	// refuses a record without a key. Default false: delete.
	Compacted bool
	// MaxMessageBytes is the topic's max.message.bytes: Produce refuses a
	// larger record (RecordBytes). Default 0: DefaultMaxMessageBytes,
	// Kafka's. It must not be negative.
	MaxMessageBytes int
	// Now is the topic's clock, the records' timestamps (nil: time.Now);
	// the world gives it its simulated clock's.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c TopicConfig) Validate() error {
	switch {
	case c.Name == "" || len(c.Name) > 249 || strings.IndexFunc(c.Name, illegalInTopic) >= 0:
		return fmt.Errorf("%w: Name %q is not a Kafka topic's (1 to 249 of [a-zA-Z0-9._-])", ErrInvalidConfig, c.Name)
	case c.Partitions < 1:
		return fmt.Errorf("%w: Partitions %d is below 1", ErrInvalidConfig, c.Partitions)
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("%w: MaxMessageBytes %d is negative", ErrInvalidConfig, c.MaxMessageBytes)
	}
	return nil
}

// illegalInTopic reports a rune Kafka refuses in a topic name.
func illegalInTopic(r rune) bool {
	legal := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
	return !legal
}

// NewTopic returns an empty topic, or an error wrapping ErrInvalidConfig.
func NewTopic(cfg TopicConfig) (*Topic, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	t := &Topic{Name: cfg.Name, compacted: cfg.Compacted, maxBytes: cfg.MaxMessageBytes, now: cfg.Now, byKey: map[string][]*LogRecord{}}
	t.add(cfg.Partitions)
	return t, nil
}

// add appends n empty partitions.
func (t *Topic) add(n int) {
	for range n {
		t.parts = append(t.parts, &Partition{t: t, topic: t.Name, n: len(t.parts), now: t.now})
	}
}

// Grow adds partitions until the topic has partitions of them, as
// kafka-topics --alter --partitions does; Kafka cannot take partitions
// away, so a count that is not larger is refused.
func (t *Topic) Grow(partitions int) error {
	if partitions <= len(t.parts) {
		return fmt.Errorf("grow %s to %d partitions: it has %d, and partitions can only be added", t.Name, partitions, len(t.parts))
	}
	t.add(partitions - len(t.parts))
	return nil
}

// RecordBytes is a record's size as the simulation holds it to a topic's
// max.message.bytes: its key, value, and headers' keys and values. Kafka
// counts the record batch as written, a few dozen bytes more.
func RecordBytes(key, value []byte, headers []kafka.Header) int {
	n := len(key) + len(value)
	for _, h := range headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// KeyRecords returns the records of key, in the order they were
// appended, in whatever partition; none for a nil or empty key.
func (t *Topic) KeyRecords(key []byte) []*LogRecord {
	if len(key) == 0 {
		return nil
	}
	return t.byKey[string(key)]
}

// Murmur2 is Kafka's hash of a record key (its clients' Utils.murmur2).
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h) //nolint:gosec // Kafka's hash is a Java int: the bits are the point
}

// PartitionOf is the partition of a record with key: Kafka's default
// partitioner's, murmur2 of the key with the sign bit cleared, modulo the
// partition count.
func (t *Topic) PartitionOf(key []byte) int { return partitionOver(key, len(t.parts)) }

func partitionOver(key []byte, count int) int { return int(Murmur2(key)&0x7fffffff) % count }

// Produce appends a record to its key's partition; a record without a key
// goes to the next partition in turn (Kafka's default spreads them; which
// partition does not matter, only that the choice replays), or, on a
// compacted topic, is refused (ErrNullKeyOnCompactedTopic).
func (t *Topic) Produce(key, value []byte, headers ...kafka.Header) (*LogRecord, error) {
	return t.ProduceOver(len(t.parts), key, value, headers...)
}

// ProduceOver is Produce by a producer that knows the topic to have count
// partitions, from 1 to the topic's count: it partitions over them (a
// producer whose metadata predates partitions added since).
func (t *Topic) ProduceOver(count int, key, value []byte, headers ...kafka.Header) (*LogRecord, error) {
	switch {
	case count < 1 || count > len(t.parts):
		return nil, fmt.Errorf("produce to %s over %d partitions: it has %d", t.Name, count, len(t.parts))
	case key == nil && t.compacted:
		return nil, fmt.Errorf("produce to %s: %w", t.Name, ErrNullKeyOnCompactedTopic)
	case key == nil:
		t.unkeyed++
		return t.ProduceTo((t.unkeyed-1)%count, key, value, headers...)
	}
	return t.ProduceTo(partitionOver(key, count), key, value, headers...)
}

// ProduceTo appends a record to partition n, whatever its key: what a
// producer does that names the partition (the quarantine's redrive sends
// a copy to its hold's partition). A compacted topic refuses a record
// without a key.
func (t *Topic) ProduceTo(n int, key, value []byte, headers ...kafka.Header) (*LogRecord, error) {
	switch {
	case key == nil && t.compacted:
		return nil, fmt.Errorf("produce to %s-%d: %w", t.Name, n, ErrNullKeyOnCompactedTopic)
	case n < 0 || n >= len(t.parts):
		return nil, fmt.Errorf("produce to %s-%d: the topic has %d partitions (UNKNOWN_TOPIC_OR_PARTITION)", t.Name, n, len(t.parts))
	case RecordBytes(key, value, headers) > t.maxBytes:
		return nil, fmt.Errorf("produce to %s-%d: %d bytes, max.message.bytes %d: %w", t.Name, n, RecordBytes(key, value, headers), t.maxBytes, ErrRecordTooLarge)
	}
	r := t.parts[n].Append(key, value)
	r.Headers = headers
	return r, nil
}

// Partitions is the topic's partition count.
func (t *Topic) Partitions() int { return len(t.parts) }

// Partition returns partition n.
func (t *Topic) Partition(n int) *Partition { return t.parts[n] }

// Append adds a record at the log end offset.
func (p *Partition) Append(key, value []byte) *LogRecord {
	now := p.now()
	p.t.seq++
	r := &LogRecord{Topic: p.topic, Partition: p.n, Offset: p.end, Key: key, Value: value, Time: now, Arrived: now, Seq: p.t.seq}
	p.end++
	p.recs = append(p.recs, r)
	p.all = append(p.all, r)
	if len(key) > 0 {
		p.t.byKey[string(key)] = append(p.t.byKey[string(key)], r)
	}
	return r
}

// Abort hides r, a record of p, from every later fetch: its transaction
// was aborted. Its offset stays taken.
func (p *Partition) Abort(r *LogRecord) {
	r.Aborted = true
	p.recs = slices.DeleteFunc(p.recs, func(x *LogRecord) bool { return x == r })
}

// Skip leaves the next n offsets without a record a fetch returns.
func (p *Partition) Skip(n int) { p.end += int64(max(n, 0)) }

// End is the log end offset: one past the last offset assigned.
func (p *Partition) End() int64 { return p.end }

// Fetch returns up to limit records from offset from on, in offset order.
func (p *Partition) Fetch(from int64, limit int) []*LogRecord {
	i, _ := slices.BinarySearchFunc(p.recs, from, byOffset)
	return slices.Clone(p.recs[i:min(len(p.recs), i+max(limit, 0))])
}

func byOffset(r *LogRecord, off int64) int { return cmp.Compare(r.Offset, off) }

// next returns the first record a fetch from offset from returns, nil if
// none.
func (p *Partition) next(from int64) *LogRecord {
	if i, _ := slices.BinarySearchFunc(p.recs, from, byOffset); i < len(p.recs) {
		return p.recs[i]
	}
	return nil
}

// Visible is how many records a fetch from offset from on can return.
func (p *Partition) Visible(from int64) int64 {
	i, _ := slices.BinarySearchFunc(p.recs, from, byOffset)
	return int64(len(p.recs) - i)
}

// At returns the record at offset off, nil if the offset holds none (any
// more).
func (p *Partition) At(off int64) *LogRecord {
	if i, ok := slices.BinarySearchFunc(p.recs, off, byOffset); ok {
		return p.recs[i]
	}
	return nil
}

// Appended returns the record appended at offset off, nil if none was:
// compacted and aborted records too.
func (p *Partition) Appended(off int64) *LogRecord {
	if i, ok := slices.BinarySearchFunc(p.all, off, byOffset); ok {
		return p.all[i]
	}
	return nil
}

// All returns every record appended, compacted ones included, in offset
// order.
func (p *Partition) All() []*LogRecord { return p.all }

// Compact removes each record below offset before that has a later record
// of its key in the partition, and returns them in offset order. A record
// without a key has no key to be superseded by, and stays: a compacted
// topic holds none (Produce refuses them), and one appended to the
// partition directly is not taken for a record of one shared key.
func (p *Partition) Compact(before int64) []*LogRecord {
	latest := map[string]int64{}
	for _, r := range p.recs {
		latest[string(r.Key)] = r.Offset
	}
	var removed []*LogRecord
	p.recs = slices.DeleteFunc(p.recs, func(r *LogRecord) bool {
		if r.Key == nil || r.Offset >= before || latest[string(r.Key)] == r.Offset {
			return false
		}
		r.Compacted = true
		removed = append(removed, r)
		return true
	})
	return removed
}

// Group is a consumer group on a topic: each partition owned by one
// member at an epoch, and a committed offset per partition (the next
// offset to read).
type Group struct {
	Name      string
	topic     *Topic
	consumers []string
	owner     []int   // partition → its member's index in consumers
	epoch     []int   // partition → the epoch of its current ownership
	committed []int64 // partition → the committed offset
	epochs    int     // the group's generation: the last epoch given out
	// unfenced: commits of a stale epoch land too (BreakCommitFence).
	unfenced bool
}

// GroupConfig configures a Group. Every field is required.
type GroupConfig struct {
	// Name is the group's id.
	Name string
	// Topic is what the group consumes.
	Topic *Topic
	// Consumers is how many members the group has, at least 1 (Lambda's
	// pollers).
	Consumers int
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c GroupConfig) Validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: Name is empty", ErrInvalidConfig)
	case c.Topic == nil:
		return fmt.Errorf("%w: Topic is nil", ErrInvalidConfig)
	case c.Consumers < 1:
		return fmt.Errorf("%w: Consumers %d is below 1", ErrInvalidConfig, c.Consumers)
	}
	return nil
}

// NewGroup returns a group with nothing committed (every partition from
// offset 0), its partitions spread over its members, or an error wrapping
// ErrInvalidConfig.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Topic.Partitions()
	g := &Group{Name: cfg.Name, topic: cfg.Topic, owner: make([]int, n), epoch: make([]int, n), committed: make([]int64, n), epochs: 1}
	for i := range cfg.Consumers {
		g.consumers = append(g.consumers, fmt.Sprintf("%s-poller-%d", cfg.Name, i+1))
	}
	for p := range n {
		g.owner[p], g.epoch[p] = p%cfg.Consumers, g.epochs
	}
	return g, nil
}

// Owner returns partition p's member and the epoch of its ownership.
func (g *Group) Owner(p int) (string, int) { return g.consumers[g.owner[p]], g.epoch[p] }

// Committed is partition p's committed offset.
func (g *Group) Committed(p int) int64 { return g.committed[p] }

// Commit commits offset for partition p on behalf of the ownership of
// epoch, or refuses it with ErrIllegalGeneration if that ownership has
// ended.
func (g *Group) Commit(p, epoch int, offset int64) error {
	if epoch != g.epoch[p] && !g.unfenced {
		return fmt.Errorf("%w: group %s, %s-%d at epoch %d, the commit's %d", ErrIllegalGeneration, g.Name, g.topic.Name, p, g.epoch[p], epoch)
	}
	g.committed[p] = offset
	return nil
}

// Grow gives the group the partitions its topic gained since (Topic.Grow),
// as a group's members are assigned new partitions when their metadata
// shows them: each to a member in turn, at a new epoch, with nothing
// committed.
func (g *Group) Grow() {
	for p := len(g.owner); p < g.topic.Partitions(); p++ {
		g.epochs++
		g.owner = append(g.owner, p%len(g.consumers))
		g.epoch = append(g.epoch, g.epochs)
		g.committed = append(g.committed, 0)
	}
}

// Move is a rebalance that gives partition p to the next member, under a
// new epoch; it returns the new owner.
func (g *Group) Move(p int) string {
	g.epochs++
	g.owner[p] = (g.owner[p] + 1) % len(g.consumers)
	g.epoch[p] = g.epochs
	return g.consumers[g.owner[p]]
}

// Lag is the group's lag: over every partition, the records a fetch from
// the committed offset returns. An offset that holds no record (a
// transaction marker, a compacted or aborted record) is no lag: counted as
// the log end offset minus the committed offset, a partition whose last
// offset is a marker would lag forever behind a consumer that commits one
// past the last record it completed, as Lambda's does.
func (g *Group) Lag() int64 {
	var lag int64
	for p := range g.committed {
		lag += g.LagOf(p)
	}
	return lag
}

// LagOf is partition p's lag.
func (g *Group) LagOf(p int) int64 { return g.topic.Partition(p).Visible(g.committed[p]) }
