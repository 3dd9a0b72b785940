package sim

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// raisedMaxMessageBytes is the max.message.bytes of the topics of one
// seed in four: raised, as a topic's may be, far enough for a record to
// make an event over MaxRequestSize alone.
const raisedMaxMessageBytes = 8 << 20

// headerBomb has a producer replay a record the relay published into its
// partition, with a hundred to five hundred headers after its own (the
// relay's stamp stays the only partition count header, which the
// processor finds by reading back over them), each of 50 to 450 bytes
// that the event writes as negative numbers. The replay keeps the
// record's timestamp, so it is old in a younger part of the partition: a
// MaximumRecordAge gives up only the leading run of expired records. It
// runs as any duplicate (the job has moved past it; the event is older
// than the view), and is not held to the order of the relay's records
// across partitions: it is not one.
func (w *World) headerBomb() {
	k := w.kafka
	if len(k.relayed) == 0 {
		return
	}
	r := k.relayed[w.rng.IntN(len(k.relayed))]
	n := 100 + w.rng.IntN(400)
	hs := append(make([]kafka.Header, 0, len(r.Headers)+n), r.Headers...)
	for i := range n {
		hs = append(hs, kafka.Header{Key: fmt.Sprintf("bomb-%04d", i), Value: bytes.Repeat([]byte{byte(128 + i%128)}, 50+w.rng.IntN(400))})
	}
	c, err := k.topicOf(r.Topic == commandsTopic).ProduceTo(r.Partition, r.Key, r.Value, hs...)
	if err != nil {
		w.refusedBig(err)
		return
	}
	c.Time = r.Time
	k.replay[c] = true
	w.stats.HeaderBombs++
	w.logf("hostile: a header bomb (%d headers, %d bytes) replays %s-%d offset %d as offset %d", n, RecordBytes(c.Key, c.Value, c.Headers), r.Topic, r.Partition, r.Offset, c.Offset)
}

// bigRecords has a producer send a burst of one to four records with
// large values (zeros: no command or event, so the consumers refuse them
// for good and the operator discards them) under a job's key, or none:
// over the topic's max.message.bytes (refused); from 256 KiB to 1 MiB,
// under Kafka's default limit (several close a batch before its event
// crosses MaxRequestSize); or, on a topic whose limit is raised, 5 MiB or
// more, whose event alone is over MaxRequestSize.
func (w *World) bigRecords() {
	t := w.kafka.topicOf(w.rng.IntN(2) == 0)
	var key []byte
	if j := w.pick(); j != nil && w.rng.IntN(2) == 0 {
		key = []byte(j.ID)
	}
	w.stats.Hostile++
	for range 1 + w.rng.IntN(4) {
		r, err := t.Produce(key, make([]byte, w.bigSize(t)))
		if err != nil {
			w.refusedBig(err)
			continue
		}
		w.kafka.hostile[r] = true
		w.logf("hostile: a record of %d bytes under key %q → %s-%d offset %d", len(r.Value), key, r.Topic, r.Partition, r.Offset)
	}
}

// bigSize draws the size of a big record's value for topic t.
func (w *World) bigSize(t *Topic) int {
	switch w.rng.IntN(3) {
	case 0:
		return t.maxBytes + 1 + w.rng.IntN(64<<10)
	case 1:
		if t.maxBytes >= raisedMaxMessageBytes {
			return 5<<20 + w.rng.IntN(t.maxBytes-5<<20-64<<10)
		}
	}
	return 32<<10 + w.rng.IntN(128<<10)
}

// refusedBig counts a producer's refusal: the record over the topic's
// max.message.bytes, or one without a key on a compacted topic.
func (w *World) refusedBig(err error) {
	if errors.Is(err, ErrRecordTooLarge) {
		w.stats.RefusedTooLarge++
	} else {
		w.stats.RefusedNullKeys++
	}
	w.logf("  → refused: %v", err)
}
