package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// partitionChange is a seed's change of the topics' partition count,
// carried out by the procedure docs/KAFKA.md gives ("A key that moves
// partition"): the topics grow from from to to partitions; the consumers
// keep checking from until every record stamped with it is consumed, and
// only then is to deployed to them and the relay; the held keys and the
// on-failure destinations are dealt with after that. The relay partitions
// over the count it stamps. With relayChecks it is kafkaout's relay: it
// asks the brokers for the count before each round and produces nothing
// while they show another than its own, until to is deployed. Without, it
// is a relay without that check (kafkaout's before it, or another
// producer stamping the count): it learns to from the brokers' metadata
// at a later step, and its records stamped with to then hold their keys
// under the consumers' old count.
type partitionChange struct {
	from, to    int // to is 0 when the seed changes nothing
	relayChecks bool
	grown       bool
	relay       int // the count the relay partitions over and stamps
	deployed    bool
}

func (c partitionChange) String() string {
	switch {
	case c.to == 0:
		return "no partition count change"
	case c.relayChecks:
		return fmt.Sprintf("to grow to %d, the relay checking its count with the brokers", c.to)
	}
	return fmt.Sprintf("to grow to %d, the relay learning it from its metadata", c.to)
}

// drawPartitionChange draws the change of a seed whose topics have n
// partitions: one seed in three grows them, by one to n partitions.
func (w *World) drawPartitionChange(n int) partitionChange {
	c := partitionChange{from: n, relay: n}
	if w.rng.IntN(3) == 0 {
		c.to = n + 1 + w.rng.IntN(n)
		c.relayChecks = w.rng.IntN(2) == 0
	}
	return c
}

// relayRefuses reports whether the relay produces nothing now: it checks
// its count, and the topics have another.
func (c partitionChange) relayRefuses() bool { return c.relayChecks && c.grown && !c.deployed }

// redrivesWait reports whether the operator redrives nothing now, neither
// a held key nor an on-failure destination: the topics grew and the new
// count is not deployed yet. The procedure deals with both last, after
// the deploy. A redriven copy is not checked for its count, so a copy of
// a record stamped with the new count (parked behind a key held for any
// cause on its new partition) would run under the old count, before older
// records of its key in their old partition; and a record stamped with
// the old count, re-published to its key's new partition while the key
// is held in the old one, would be refused and given up again and again,
// so that the old count would never be consumed.
func (c partitionChange) redrivesWait() bool { return c.grown && !c.deployed }

// changePartitions takes the next step of the seed's partition count
// change, and reports whether there was one to take: the topics grow
// (only while the faults are on: settling, no change starts), the relay
// learns the new count, or, once every record stamped with the old count
// is consumed, the new count is deployed to the consumers and the relay.
func (w *World) changePartitions(settling bool) bool {
	c := &w.kafka.change
	switch {
	case c.to == 0 || c.deployed || (settling && !c.grown):
		return false
	case !c.grown:
		w.growTopics()
	case !c.relayChecks && c.relay != c.to:
		c.relay = c.to
		w.logf("kafka: the relay learns from the brokers that the topics have %d partitions: it partitions over them and stamps %d", c.to, c.to)
	case w.oldCountConsumed():
		w.deployCount()
	default:
		return false
	}
	return true
}

// growTopics adds partitions to both topics, and their groups and
// mappings take them.
func (w *World) growTopics() {
	c := &w.kafka.change
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		if err := m.topic.Grow(c.to); err != nil {
			w.fail(err)
			return
		}
		m.group.Grow()
		for len(m.failures) < c.to {
			m.failures, m.retryAt = append(m.failures, 0), append(m.retryAt, time.Time{})
		}
	}
	c.grown = true
	w.stats.PartitionChanges++
	w.logf("kafka: the topics grow from %d to %d partitions; the consumers still check %d", c.from, c.to, c.from)
}

// oldCountConsumed reports whether no record stamped with the old count
// is left at or after a committed offset (in flight, or waiting), and the
// relay stamps it no more.
func (w *World) oldCountConsumed() bool {
	c := w.kafka.change
	if c.relay == c.from && !c.relayChecks {
		return false
	}
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		for p := range m.topic.Partitions() {
			from := m.group.Committed(p)
			for _, r := range m.topic.Partition(p).Fetch(from, int(m.topic.Partition(p).Visible(from))) {
				if stampOf(r) == c.from {
					return false
				}
			}
		}
	}
	return true
}

// deployCount deploys the new count: each mapping's processor checks it
// from now on (an invocation running keeps the one it started with), and
// the relay partitions over it.
func (w *World) deployCount() {
	c := &w.kafka.change
	for _, m := range []*mapping{w.kafka.worker, w.kafka.projector} {
		proc, err := m.newProc(c.to)
		if err != nil {
			w.fail(err)
			return
		}
		m.proc, m.partitions = proc, c.to
	}
	c.deployed, c.relay = true, c.to
	w.logf("kafka: every record stamped %d is consumed: %d is deployed to the consumers and the relay", c.from, c.to)
}

// stampOf is the partition count r's last PartitionCountHeader carries,
// the one pkg/kafka reads; 0 for none, or one that is not a number.
func stampOf(r *LogRecord) int {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == kafka.PartitionCountHeader {
			n, _ := strconv.Atoi(string(r.Headers[i].Value))
			return n
		}
	}
	return 0
}

// metricRecord is the record of m a metrics hook's record names.
func (w *World) metricRecord(m *mapping, rm kafka.RecordMetrics) *LogRecord {
	i := strings.LastIndexByte(rm.TopicPartition, '-')
	p, err := strconv.Atoi(rm.TopicPartition[i+1:])
	if i < 0 || err != nil || p < 0 || p >= m.topic.Partitions() {
		return nil
	}
	return m.topic.Partition(p).Appended(rm.Offset)
}

// heldElsewhere reports whether r's key is held (or draining) in another
// partition than r's.
func (w *World) heldElsewhere(m *mapping, r *LogRecord) bool {
	h, err := w.qmem.Hold(context.Background(), m.topic.Name, quarantine.KafkaGroup(string(r.Key)))
	if err != nil || (h.State != quarantine.StateHeld && h.State != quarantine.StateDraining) {
		return false
	}
	p, _, ok := quarantine.KafkaPosition(h.From)
	return ok && p != int64(r.Partition)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
