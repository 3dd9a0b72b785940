package localesm

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeKafka is a Kafka cluster in memory, as much of one as a mapping
// sees, held to kafkacontract_test.go's contract as franz-go on kfake is:
// a partition's records in offset order, offsets that may skip (compaction,
// transaction markers); consumer groups whose members share the partitions
// round-robin, a partition handed over cooperatively (revoked from its
// owner before it is assigned to the next); callbacks delivered from Poll
// and AllowRebalance, never between a Poll that returned records and
// AllowRebalance; commits taken from any member, as a broker takes them.
// Time is the clock of the test's synctest bubble, or the wall clock
// outside one.
type fakeKafka struct {
	topic      string
	partitions int32

	mu      sync.Mutex
	logs    map[kafkaTP][]*kgo.Record
	next    map[kafkaTP]int64 // the offset the next record gets
	groups  map[string]*fakeGroup
	changed chan struct{} // closed and replaced when a Poll may have something new
	// failCommits fails that many Commit calls, the next ones.
	failCommits int
	// beforeCommit, when set, is called at the start of every Commit.
	beforeCommit func(offsets map[kafkaTP]int64)
}

type fakeGroup struct {
	committed map[kafkaTP]int64
	commits   []map[kafkaTP]int64 // every commit taken, in order
	members   []*fakeConsumer     // in join order
}

func newFakeKafka(topic string, partitions int32) *fakeKafka {
	return &fakeKafka{topic: topic, partitions: partitions, logs: map[kafkaTP][]*kgo.Record{},
		next: map[kafkaTP]int64{}, groups: map[string]*fakeGroup{}, changed: make(chan struct{})}
}

// notify wakes the polls. k.mu is held.
func (k *fakeKafka) notify() {
	close(k.changed)
	k.changed = make(chan struct{})
}

// produce appends a record to a partition at the current time and returns
// its offset.
func (k *fakeKafka) produce(partition int32, key, value []byte, headers ...kgo.RecordHeader) int64 {
	return k.produceAt(partition, time.Now(), key, value, headers...)
}

func (k *fakeKafka) produceAt(partition int32, ts time.Time, key, value []byte, headers ...kgo.RecordHeader) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	tp := kafkaTP{k.topic, partition}
	off := k.next[tp]
	k.next[tp] = off + 1
	k.logs[tp] = append(k.logs[tp], &kgo.Record{Topic: k.topic, Partition: partition, Offset: off, Key: key, Value: value,
		Headers: headers, Timestamp: ts.Truncate(time.Millisecond), LeaderEpoch: 0})
	k.notify()
	return off
}

// skip leaves n offsets of a partition without a record, as a compaction
// or a transaction's markers and aborted records do.
func (k *fakeKafka) skip(partition int32, n int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next[kafkaTP{k.topic, partition}] += n
}

func (k *fakeKafka) group(name string) *fakeGroup {
	g := k.groups[name]
	if g == nil {
		g = &fakeGroup{committed: map[kafkaTP]int64{}}
		k.groups[name] = g
	}
	return g
}

// committed returns a group's committed offsets.
func (k *fakeKafka) committed(group string) map[kafkaTP]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.group(group).committed)
}

// commits returns every commit a group took, in order.
func (k *fakeKafka) commits(group string) []map[kafkaTP]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.group(group).commits)
}

// newConsumer is a KafkaMapping's newConsumer: it joins the group.
func (k *fakeKafka) newConsumer(cfg kafkaConsumerConfig) (kafkaConsumer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := &fakeConsumer{k: k, cfg: cfg, g: k.group(cfg.group), owned: map[kafkaTP]bool{}, pos: map[kafkaTP]int64{}, paused: map[kafkaTP]bool{}}
	c.g.members = append(c.g.members, c)
	k.rebalance(c.g)
	return c, nil
}

// rebalance moves the group toward a round-robin assignment over its
// members: a partition whose owner must give it up is revoked first, and
// assigned to its next owner only once no member holds it. k.mu is held.
func (k *fakeKafka) rebalance(g *fakeGroup) {
	if len(g.members) == 0 {
		return
	}
	held := map[kafkaTP]bool{}
	for _, m := range g.members {
		for tp := range m.owned {
			held[tp] = true
		}
		for _, ev := range m.pending {
			for _, tp := range ev.tps {
				held[tp] = held[tp] || ev.assign
			}
		}
	}
	for p := range k.partitions {
		tp := kafkaTP{k.topic, p}
		target := g.members[int(p)%len(g.members)]
		for _, m := range g.members {
			if m != target && m.owned[tp] && !m.revoking(tp) {
				m.pending = append(m.pending, fakeEvent{tps: []kafkaTP{tp}})
			}
		}
		if !held[tp] {
			target.pending = append(target.pending, fakeEvent{assign: true, tps: []kafkaTP{tp}})
		}
	}
	k.notify()
}

type fakeEvent struct {
	assign bool
	tps    []kafkaTP
}

// fakeConsumer is a member of a fakeKafka group.
type fakeConsumer struct {
	k   *fakeKafka
	cfg kafkaConsumerConfig
	g   *fakeGroup
	// Guarded by k.mu.
	owned   map[kafkaTP]bool
	pos     map[kafkaTP]int64 // the next offset Poll returns from
	paused  map[kafkaTP]bool
	pending []fakeEvent // callbacks not delivered yet
	holding bool        // Poll returned records and AllowRebalance has not been called
	closed  bool
}

var _ kafkaConsumer = (*fakeConsumer)(nil)

func (c *fakeConsumer) revoking(tp kafkaTP) bool {
	for _, ev := range c.pending {
		if !ev.assign && slices.Contains(ev.tps, tp) {
			return true
		}
	}
	return false
}

// deliver runs the pending callbacks, unless the consumer holds polled
// records. k.mu is held, and released while a callback runs.
func (c *fakeConsumer) deliver() {
	for !c.holding && len(c.pending) > 0 {
		ev := c.pending[0]
		c.pending = c.pending[1:]
		for _, tp := range ev.tps {
			if ev.assign {
				c.owned[tp] = true
				c.pos[tp] = c.start(tp)
			} else {
				delete(c.owned, tp)
			}
		}
		fn := c.cfg.revoked
		if ev.assign {
			fn = c.cfg.assigned
		}
		c.k.mu.Unlock()
		fn(ev.tps)
		c.k.mu.Lock()
		if !ev.assign {
			c.k.rebalance(c.g) // the revoked partitions can go to their next owner
		}
	}
}

// start is where an assigned partition is read from: the group's commit,
// else the starting position. k.mu is held.
func (c *fakeConsumer) start(tp kafkaTP) int64 {
	if off, ok := c.g.committed[tp]; ok {
		return off
	}
	switch c.cfg.start {
	case Latest:
		return c.k.next[tp]
	case AtTimestamp:
		for _, r := range c.k.logs[tp] {
			if !r.Timestamp.Before(c.cfg.startAt.Truncate(time.Millisecond)) {
				return r.Offset
			}
		}
		return c.k.next[tp]
	}
	return 0
}

func (c *fakeConsumer) Poll(ctx context.Context) ([]*kgo.Record, error) {
	c.k.mu.Lock()
	for {
		if c.closed {
			c.k.mu.Unlock()
			return nil, errors.New("fake kafka: consumer closed")
		}
		c.deliver()
		var out []*kgo.Record
		for tp := range c.owned {
			if c.paused[tp] {
				continue
			}
			for _, r := range c.k.logs[tp] {
				if r.Offset >= c.pos[tp] {
					cp := *r
					out = append(out, &cp)
					c.pos[tp] = r.Offset + 1
				}
			}
		}
		if len(out) > 0 {
			c.holding = true
			c.k.mu.Unlock()
			return out, nil
		}
		changed := c.k.changed
		c.k.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		}
		c.k.mu.Lock()
	}
}

func (c *fakeConsumer) AllowRebalance() {
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	c.holding = false
	c.deliver()
}

func (c *fakeConsumer) Pause(tps ...kafkaTP) {
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	for _, tp := range tps {
		c.paused[tp] = true
	}
}

func (c *fakeConsumer) Resume(tps ...kafkaTP) {
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	for _, tp := range tps {
		delete(c.paused, tp)
	}
	c.k.notify()
}

func (c *fakeConsumer) Commit(ctx context.Context, offsets map[kafkaTP]int64) error {
	c.k.mu.Lock()
	hook := c.k.beforeCommit
	c.k.mu.Unlock()
	if hook != nil {
		hook(maps.Clone(offsets))
	}
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.k.failCommits > 0 {
		c.k.failCommits--
		return errors.New("fake kafka: commit failed")
	}
	maps.Copy(c.g.committed, offsets)
	c.g.commits = append(c.g.commits, maps.Clone(offsets))
	return nil
}

// Close revokes what the member holds and leaves the group.
func (c *fakeConsumer) Close() {
	c.k.mu.Lock()
	if c.closed {
		c.k.mu.Unlock()
		return
	}
	c.closed = true
	var held []kafkaTP
	for tp := range c.owned {
		held = append(held, tp)
	}
	c.owned, c.pending = map[kafkaTP]bool{}, nil
	c.g.members = slices.DeleteFunc(c.g.members, func(m *fakeConsumer) bool { return m == c })
	c.k.mu.Unlock()
	if len(held) > 0 {
		c.cfg.revoked(held)
	}
	c.k.mu.Lock()
	defer c.k.mu.Unlock()
	c.k.rebalance(c.g)
}
