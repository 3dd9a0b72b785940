package quarantine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// KafkaQuarantine is the kafka.Quarantine of one topic, on a Store, with
// the rules the SQS Quarantine follows (holds, epochs, nonce-proof copies,
// tombstones): a held key of the topic is a group of the store, the topic
// its queue. Give it to that topic's processor as kafka.Config's
// Quarantine.
type KafkaQuarantine struct {
	store     Store
	topic     string
	bodies    BodyStore
	maxInline int
	now       func() time.Time
}

var _ kafka.Quarantine = (*KafkaQuarantine)(nil)

// KafkaConfig configures a KafkaQuarantine.
type KafkaConfig struct {
	// Store keeps the holds and the parked records. Required.
	Store Store
	// Topic is the topic the quarantine serves: its records' Topic.
	// Required; a Kafka topic name (letters, digits, '.', '_', '-').
	Topic string
	// Bodies keeps the values too large for a parked item (see
	// MaxInlineBody). Default (nil): none; parking a larger record then
	// fails, and it is delivered again until the mapping gives it up.
	Bodies BodyStore
	// MaxInlineBody is the largest record, in bytes (key, value and
	// headers), whose value is kept in the store's item. Default (zero):
	// DefaultMaxInlineBody; a negative one is invalid.
	MaxInlineBody int
	// Now is the clock the records' times are read from. Default (nil):
	// time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c KafkaConfig) Validate() error {
	switch {
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrInvalidConfig)
	case c.MaxInlineBody < 0:
		return fmt.Errorf("%w: MaxInlineBody %d is negative", ErrInvalidConfig, c.MaxInlineBody)
	case !kafkaTopicName(c.Topic):
		return fmt.Errorf("%w: Topic %q is not a Kafka topic name", ErrInvalidConfig, c.Topic)
	}
	return nil
}

// kafkaTopicName reports whether t is a legal Kafka topic name: 1 to 249
// of letters, digits, '.', '_' and '-', and neither "." nor "..". (Its
// lack of '#' is what keeps the store's partition keys unambiguous.)
func kafkaTopicName(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	return strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
}

// NewKafka returns the quarantine of the topic cfg.Topic, or an error
// wrapping ErrInvalidConfig.
func NewKafka(cfg KafkaConfig) (*KafkaQuarantine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	q := &KafkaQuarantine{store: cfg.Store, topic: cfg.Topic, bodies: cfg.Bodies,
		maxInline: cmp.Or(cfg.MaxInlineBody, DefaultMaxInlineBody), now: cfg.Now}
	if q.now == nil {
		q.now = time.Now
	}
	return q, nil
}

// maxKafkaGroup is the longest lane key kept as its own group: DynamoDB's
// partition keys hold 2048 bytes, the topic and '#' included.
const maxKafkaGroup = 1024

// kafkaGroupPrefix starts the group of a lane key KafkaGroup hashes.
const kafkaGroupPrefix = "sha256:"

// KafkaGroup is the store's group of a lane key: the key itself, or, for
// one that a DynamoDB string cannot hold (not UTF-8, longer than 1024
// bytes, empty) or that starts with "sha256:", "sha256:" and its hash in
// hex. Two keys never share a group (but for a SHA-256 collision), so a
// hostile key can hold nothing but itself. The parked record keeps the key
// itself, which its copy carries.
func KafkaGroup(key string) string {
	if key != "" && len(key) <= maxKafkaGroup && utf8.ValidString(key) && !strings.HasPrefix(key, kafkaGroupPrefix) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return kafkaGroupPrefix + hex.EncodeToString(sum[:])
}

// CopyHeader is the header a redriven copy of a parked Kafka record
// carries its identity in: the epoch, the parked record's nonce and its
// sequence key, "<epoch>.<nonce>.<sequence key>" (Copy.Header).
const CopyHeader = "fifoworker-redrive"

// Header is copy c's CopyHeader value.
func (c Copy) Header() string {
	return strings.TrimPrefix(c.DeduplicationID(), copyPrefix)
}

// ParseKafkaCopy reads a redriven copy's identity from rec's CopyHeader: a
// record with exactly one, well formed. Check still verifies it against
// the parked record before trusting it.
func ParseKafkaCopy(rec *kafka.Record) (Copy, bool) {
	var found []byte
	n := 0
	for _, h := range rec.Headers {
		if h.Key == CopyHeader {
			found, n = h.Value, n+1
		}
	}
	if n != 1 {
		return Copy{}, false
	}
	return parseCopy(string(found))
}

// Check implements kafka.Quarantine: one Store.Read for the batch's keys
// and the parked records its copies name.
func (q *KafkaQuarantine) Check(ctx context.Context, recs []kafka.KeyedRecord) (kafka.QuarantineView, error) {
	var groups []string
	keyOf := map[string]string{} // group -> lane key
	copies := map[kafka.ItemIdentifier]ItemKey{}
	var keys []ItemKey
	for _, kr := range recs {
		rec := kr.Record
		if rec.Topic != q.topic || kr.Key.Topic != q.topic {
			return kafka.QuarantineView{}, fmt.Errorf("quarantine: record %s offset %d comes from topic %q, but this quarantine is %q's: check the function's configuration", rec.TopicPartition(), rec.Offset, rec.Topic, q.topic)
		}
		g := KafkaGroup(kr.Key.Key)
		if _, seen := keyOf[g]; !seen {
			keyOf[g] = kr.Key.Key
			groups = append(groups, g)
		}
		if c, ok := ParseKafkaCopy(rec); ok {
			k := ItemKey{Group: g, Sequence: c.Sequence}
			copies[rec.ID()] = k
			keys = append(keys, k)
		}
	}
	holds, items, err := q.store.Read(ctx, q.topic, groups, keys)
	if err != nil {
		return kafka.QuarantineView{}, err
	}
	view := kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{}, Records: map[kafka.ItemIdentifier]kafka.Disposition{}}
	for g, h := range holds {
		view.Holds[kafka.TopicKey{Topic: q.topic, Key: keyOf[g]}] = kafkaHold(h)
	}
	for _, kr := range recs {
		if d, ok := kafkaDisposition(kr.Record, KafkaGroup(kr.Key.Key), copies, items, holds); ok {
			view.Records[kr.Record.ID()] = d
		}
	}
	return view, nil
}

// kafkaDisposition says what to do with rec, of group, if it is a genuine
// copy of a parked record or a redelivery of a record a released hold
// parked; ok is false for an ordinary record. A record that claims to be a
// copy but matches no parked Kafka record (another nonce or value, or
// nothing parked there) is an ordinary record: it is parked or run at its
// own offset, and never takes a parked record's place.
func kafkaDisposition(rec *kafka.Record, group string, copies map[kafka.ItemIdentifier]ItemKey, items map[ItemKey]Parked, holds map[string]HoldRecord) (kafka.Disposition, bool) {
	if k, isCopy := copies[rec.ID()]; isCopy {
		p, ok := items[k]
		c, _ := ParseKafkaCopy(rec)
		if ok && p.Kafka != nil && p.Nonce != "" && p.Nonce == c.Nonce && p.BodyMD5 == bodyMD5(string(rec.Value)) {
			switch p.Status {
			case StatusParked:
				_, of, _ := KafkaPosition(c.Sequence)
				return kafka.Disposition{Copy: true, Epoch: c.Epoch, Of: of}, true
			case StatusDone:
				return kafka.Disposition{Drop: true, Reason: "a copy of a parked record already processed"}, true
			case StatusDiscarded:
				return kafka.Disposition{Drop: true, Reason: "a copy of a parked record an operator discarded"}, true
			}
		}
	}
	h, ok := holds[group]
	if !ok || h.State != StateReleased || h.From == "" {
		return kafka.Disposition{}, false
	}
	// The sequence key holds the partition: a record of another partition
	// than the released hold's never falls in its range.
	seq, err := KafkaSeq(rec.Partition, rec.Offset)
	if err == nil && h.From <= seq && seq <= h.Through {
		return kafka.Disposition{Drop: true, Reason: "a redelivery of a record parked before its key's hold was released"}, true
	}
	return kafka.Disposition{}, false
}

// kafkaHold is h as the processor needs it.
func kafkaHold(h HoldRecord) kafka.Hold {
	var out kafka.Hold
	switch h.State {
	case StateHeld:
		out.State = kafka.Held
	case StateDraining:
		out.State = kafka.Draining
	}
	if out.State != kafka.NotHeld {
		out.Epoch = h.Epoch
		out.Partition, _, _ = KafkaPosition(h.From)
		_, out.Next, _ = KafkaPosition(h.Next)
	}
	if p, o, ok := KafkaPosition(h.Attempts.Sequence); ok && h.Attempts.Failed > 0 {
		out.Attempts = kafka.Attempts{Partition: p, Offset: o, Failed: int(h.Attempts.Failed), Cause: h.Attempts.Cause}
	}
	return out
}

// maxParkBytes bounds the items of one Store.Park: DynamoDB's
// transactions hold 4 MB.
const maxParkBytes = 3 << 20

// Park implements kafka.Quarantine. A lane of more records than one
// Store.Park may carry (MaxParkMessages, or 3 MB of items) is parked in
// several, in order: the first holds the key, the others join it.
func (q *KafkaQuarantine) Park(ctx context.Context, key kafka.TopicKey, recs []*kafka.Record, cause error, hold bool) (kafka.Hold, error) {
	group := KafkaGroup(key.Key)
	why := "parked while the key was held"
	if cause != nil {
		why = clip(cause.Error(), maxCause)
	}
	items := make([]Parked, 0, len(recs))
	for i, rec := range recs {
		p, err := q.parked(ctx, group, rec)
		if err != nil {
			return kafka.Hold{}, err
		}
		p.Cause = why
		if i > 0 && hold {
			p.Cause = "an earlier record of its key was parked"
		}
		items = append(items, p)
	}
	var h HoldRecord
	for first := true; first || len(items) > 0; first = false {
		n := parkChunk(items)
		var err error
		if h, err = q.store.Park(ctx, q.topic, group, items[:n], hold && first, why, q.now()); err != nil {
			return kafka.Hold{}, err
		}
		items = items[n:]
	}
	return kafkaHold(h), nil
}

// parkChunk is how many of items, from the first, one Store.Park takes.
func parkChunk(items []Parked) int {
	size := 0
	for i, p := range items {
		size += kafkaItemSize(p)
		if i == MaxParkMessages || (i > 0 && size > maxParkBytes) {
			return i
		}
	}
	return len(items)
}

// kafkaItemSize is about what a parked record's item weighs: its key,
// value and headers, and a kilobyte for the rest.
func kafkaItemSize(p Parked) int {
	n := 1024
	if p.Kafka != nil {
		n += len(p.Kafka.Key) + len(p.Kafka.Value) + kafkaHeadersSize(p.Kafka.Headers)
	}
	return n
}

func kafkaHeadersSize(hs []KafkaHeader) int {
	n := 0
	for _, h := range hs {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// parked is rec as a parked item, its value put in the BodyStore when the
// record is too large for the item.
func (q *KafkaQuarantine) parked(ctx context.Context, group string, rec *kafka.Record) (Parked, error) {
	seq, err := KafkaSeq(rec.Partition, rec.Offset)
	if err != nil {
		return Parked{}, err
	}
	nonce, err := newNonce()
	if err != nil {
		return Parked{}, err
	}
	k := &KafkaRecord{Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		k.Headers = append(k.Headers, KafkaHeader{Key: h.Key, Value: h.Value})
	}
	p := Parked{
		Queue: q.topic, Group: group, Sequence: seq, Nonce: nonce, Kafka: k,
		BodyMD5: bodyMD5(string(rec.Value)), BodySize: int64(len(rec.Value)),
	}
	// The key and the headers stay in the item: the value leaves it when
	// the three together are over the inline budget. (template-kafka.yaml
	// caps the topics' records at 256 KiB, so an item stays well under
	// DynamoDB's 400 KB.)
	if size := len(rec.Key) + len(rec.Value) + kafkaHeadersSize(k.Headers); size > q.maxInline {
		if q.bodies == nil {
			return Parked{}, fmt.Errorf("quarantine: record %s offset %d: its %d bytes are more than %d and no body store is configured", rec.TopicPartition(), rec.Offset, size, q.maxInline)
		}
		p.BodyKey = BodyKey(q.topic, group, seq)
		if err := q.bodies.PutBody(ctx, p.BodyKey, string(rec.Value)); err != nil {
			return Parked{}, fmt.Errorf("quarantine: record %s offset %d: keep its value: %w", rec.TopicPartition(), rec.Offset, err)
		}
		k.Value = nil
	}
	return p, nil
}

// Done implements kafka.Quarantine.
func (q *KafkaQuarantine) Done(ctx context.Context, key kafka.TopicKey, rec *kafka.Record) (kafka.Hold, error) {
	c, ok := ParseKafkaCopy(rec)
	if !ok {
		return kafka.Hold{}, fmt.Errorf("quarantine: done: record %s offset %d is not a redriven copy", rec.TopicPartition(), rec.Offset)
	}
	h, err := q.store.Done(ctx, q.topic, KafkaGroup(key.Key), c.Sequence, c.Epoch, q.now())
	if err != nil {
		return kafka.Hold{}, err
	}
	return kafkaHold(h), nil
}

// Failed implements kafka.Quarantine: one Store.Failed, conditional on
// hold, the key's hold as the processor read it.
func (q *KafkaQuarantine) Failed(ctx context.Context, key kafka.TopicKey, hold kafka.Hold, rec *kafka.Record, cause error) (kafka.Attempts, error) {
	seq, err := KafkaSeq(rec.Partition, rec.Offset)
	if err != nil {
		return kafka.Attempts{}, err
	}
	f := Failure{Sequence: seq, Cause: "failed", SeenHeld: hold.State != kafka.NotHeld}
	if cause != nil {
		f.Cause = cause.Error()
	}
	if a := hold.Attempts; a.Failed > 0 {
		if s, err := KafkaSeq(a.Partition, a.Offset); err == nil {
			f.Seen = Attempts{Sequence: s, Failed: int64(a.Failed), Cause: a.Cause}
		}
	}
	got, err := q.store.Failed(ctx, q.topic, KafkaGroup(key.Key), f, q.now())
	if err != nil {
		return kafka.Attempts{}, err
	}
	return kafkaHold(HoldRecord{Attempts: got}).Attempts, nil
}
