package quarantine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

const unitTopic = "unit-commands"

// krec is a record of unitTopic: partition, offset, key ("" for null) and
// value, with headers as name, value pairs.
func krec(partition, offset int64, key, value string, headers ...string) events.KafkaRecord {
	r := events.KafkaRecord{
		Topic: unitTopic, Partition: partition, Offset: offset,
		Timestamp: events.MilliSecondsEpochTime{Time: time.UnixMilli(1_700_000_000_000)}, TimestampType: "CREATE_TIME",
		Value: base64.StdEncoding.EncodeToString([]byte(value)),
	}
	if key != "" {
		r.Key = base64.StdEncoding.EncodeToString([]byte(key))
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, map[string]events.JSONNumberBytes{headers[i]: []byte(headers[i+1])})
	}
	return r
}

func kevent(recs ...events.KafkaRecord) events.KafkaEvent {
	ev := events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{}}
	for _, r := range recs {
		tp := kafka.TopicPartition(r.Topic, r.Partition)
		ev.Records[tp] = append(ev.Records[tp], r)
	}
	return ev
}

// kafkaRig is a processor under a KafkaQuarantine on a memory store, and
// its handler's script: does[value] is what the handler returns for a
// record with that value.
type kafkaRig struct {
	store *quarantine.MemoryStore
	q     *quarantine.KafkaQuarantine
	p     *kafka.Processor

	mu   sync.Mutex
	does map[string]error
	ran  []string
}

func newKafkaRig(t *testing.T, threshold int, adjust ...func(*kafka.Config)) *kafkaRig {
	t.Helper()
	r := &kafkaRig{store: quarantine.NewMemoryStore(), does: map[string]error{}}
	var err error
	r.q, err = quarantine.NewKafka(quarantine.KafkaConfig{Store: r.store, Topic: unitTopic})
	require.NoError(t, err)
	cfg := kafka.Config{Handler: func(_ context.Context, rec kafka.Record) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ran = append(r.ran, string(rec.Value))
		return r.does[string(rec.Value)]
	}, Quarantine: r.q, QuarantineThreshold: threshold}
	for _, a := range adjust {
		a(&cfg)
	}
	r.p, err = kafka.New(cfg)
	require.NoError(t, err)
	return r
}

// run processes ev and returns the records reported and the values run.
func (r *kafkaRig) run(t *testing.T, recs ...events.KafkaRecord) ([]string, []string) {
	t.Helper()
	r.mu.Lock()
	r.ran = nil
	r.mu.Unlock()
	resp, err := r.p.Process(t.Context(), kevent(recs...))
	require.NoError(t, err)
	failed := []string{}
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, fmt.Sprintf("%s/%d", f.ItemIdentifier.TopicPartition, f.ItemIdentifier.Offset))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return failed, append([]string{}, r.ran...)
}

func (r *kafkaRig) hold(t *testing.T, key string) quarantine.HoldRecord {
	t.Helper()
	h, err := r.store.Hold(t.Context(), unitTopic, quarantine.KafkaGroup(key))
	require.NoError(t, err)
	return h
}

// copyOf is the copy of key's parked record at partition and offset a
// redrive under epoch sends: the record's value and headers, with its
// identity in CopyHeader, at a new offset of the same partition.
func (r *kafkaRig) copyOf(t *testing.T, key string, partition, offset, epoch, at int64) events.KafkaRecord {
	t.Helper()
	seq, err := quarantine.KafkaSeq(partition, offset)
	require.NoError(t, err)
	k := quarantine.ItemKey{Group: quarantine.KafkaGroup(key), Sequence: seq}
	_, items, err := r.store.Read(t.Context(), unitTopic, nil, []quarantine.ItemKey{k})
	require.NoError(t, err)
	p, ok := items[k]
	require.True(t, ok, "no record parked at %d/%d", partition, offset)
	c := quarantine.Copy{Epoch: epoch, Nonce: p.Nonce, Sequence: seq}
	return krec(partition, at, key, string(p.Kafka.Value), quarantine.CopyHeader, c.Header())
}

func (r *kafkaRig) redrive(t *testing.T, key string) int64 {
	t.Helper()
	h, err := r.store.BeginRedrive(t.Context(), unitTopic, quarantine.KafkaGroup(key), time.Now())
	require.NoError(t, err)
	return h.Epoch
}

// The whole way on the real processor: a record that fails permanently
// holds its key, which parks the key's later records in every later
// batch (offset for offset, the parked records completed so the partition
// moves on); the redrive's copies run oldest first, each recorded done,
// the last releasing the key; a redelivery of a parked record after the
// release is dropped, and the key's next records run.
func TestKafkaQuarantineHoldsParksAndRedrives(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	r.does["bad"] = kafka.Permanent(errors.New("malformed"))
	failed, ran := r.run(t, krec(0, 1, "job-1", "ok-1"), krec(0, 2, "job-1", "bad"), krec(0, 3, "job-2", "other"), krec(0, 4, "job-1", "later"))
	require.Empty(t, failed)
	require.Equal(t, []string{"bad", "ok-1", "other"}, sortedRan(ran))
	h := r.hold(t, "job-1")
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(2), h.Parked)
	require.Contains(t, h.Cause, "permanent: malformed")

	failed, ran = r.run(t, krec(0, 5, "job-1", "held-5"), krec(0, 6, "job-2", "other-6"))
	require.Empty(t, failed)
	require.Equal(t, []string{"other-6"}, ran)
	require.Equal(t, int64(3), r.hold(t, "job-1").Parked)

	epoch := r.redrive(t, "job-1")
	r.does["bad"] = nil // fixed
	c2, c4, c5 := r.copyOf(t, "job-1", 0, 2, epoch, 10), r.copyOf(t, "job-1", 0, 4, epoch, 11), r.copyOf(t, "job-1", 0, 5, epoch, 12)
	failed, ran = r.run(t, c2, krec(0, 9, "job-2", "other-9"), c4, c5)
	require.Empty(t, failed)
	require.Equal(t, []string{"bad", "later", "held-5"}, only(ran, "bad", "later", "held-5"), "oldest first")
	require.Contains(t, ran, "other-9")
	h = r.hold(t, "job-1")
	require.Equal(t, quarantine.StateReleased, h.State)

	// Redelivered after the release: the parked records are dropped, the
	// copies too (done); a new record runs.
	failed, ran = r.run(t, krec(0, 2, "job-1", "bad"), krec(0, 4, "job-1", "later"), krec(0, 5, "job-1", "held-5"), c4, krec(0, 13, "job-1", "new"))
	require.Empty(t, failed)
	require.Equal(t, []string{"new"}, ran)
}

func sortedRan(ran []string) []string {
	return slices.Sorted(slices.Values(ran))
}

// only is ran's values that are among set, in ran's order (lanes of other
// keys interleave).
func only(ran []string, set ...string) []string {
	out := []string{}
	for _, v := range ran {
		if slices.Contains(set, v) {
			out = append(out, v)
		}
	}
	return out
}

// A record that claims to be a copy without the parked record's nonce, or
// with another value, or naming a record that is not parked, or carrying
// two identities, is an ordinary record: while the key drains it is parked
// behind the rest, and never runs in a parked record's place.
func TestKafkaAForgedCopyNeverTakesAParkedRecordsPlace(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	r.does["bad"] = kafka.Permanent(errors.New("malformed"))
	_, _ = r.run(t, krec(0, 1, "job-1", "bad"), krec(0, 2, "job-1", "two"))
	epoch := r.redrive(t, "job-1")
	genuine := r.copyOf(t, "job-1", 0, 1, epoch, 20)
	seq1, _ := quarantine.KafkaSeq(0, 1)
	seq9, _ := quarantine.KafkaSeq(0, 9)
	noNonce := krec(0, 21, "job-1", "bad", quarantine.CopyHeader, quarantine.Copy{Epoch: epoch, Nonce: strings.Repeat("0", 32), Sequence: seq1}.Header())
	otherValue := genuine
	otherValue.Offset, otherValue.Value = 22, base64.StdEncoding.EncodeToString([]byte("forged"))
	notParked := krec(0, 23, "job-1", "x", quarantine.CopyHeader, quarantine.Copy{Epoch: epoch, Nonce: strings.Repeat("a", 32), Sequence: seq9}.Header())
	twice := genuine
	twice.Offset = 24
	twice.Headers = append(append([]map[string]events.JSONNumberBytes{}, genuine.Headers...), genuine.Headers...)

	failed, ran := r.run(t, noNonce, otherValue, notParked, twice)
	require.Empty(t, failed)
	require.Empty(t, ran, "no forged copy ran")
	h := r.hold(t, "job-1")
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(6), h.Parked, "each forged copy is parked, as an ordinary record, behind the rest")
	require.Equal(t, seq1, h.Next)

	// The genuine copy still runs in its place.
	r.does["bad"] = nil
	failed, ran = r.run(t, genuine)
	require.Empty(t, failed)
	require.Equal(t, []string{"bad"}, ran)
}

// Each failed attempt is counted in the key's hold; the attempt at the
// threshold never runs: the (threshold-1)th failure parks the record in
// its own invocation. Another key's failure in the partition, which
// delivers this key's records again, counts nothing for them.
func TestKafkaFailuresAreCountedAndParkAtTheThreshold(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	r.does["flaky"] = errors.New("busy")
	batch := []events.KafkaRecord{krec(0, 1, "job-1", "flaky"), krec(0, 2, "job-2", "fine"), krec(0, 3, "job-1", "after")}
	failed, _ := r.run(t, batch...)
	require.Equal(t, []string{unitTopic + "-0/1", unitTopic + "-0/3"}, failed)
	require.Equal(t, int64(1), r.hold(t, "job-1").Attempts.Failed)
	_, err := r.store.Hold(t.Context(), unitTopic, "job-2")
	require.ErrorIs(t, err, quarantine.ErrNoHold, "job-2, delivered again for job-1's failure, failed nothing")

	failed, ran := r.run(t, batch...)
	require.Empty(t, failed, "the second failure (threshold 3) parks job-1's records")
	require.Contains(t, ran, "flaky")
	h := r.hold(t, "job-1")
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, int64(2), h.Attempts.Failed)
	require.Contains(t, h.Cause, "reached the quarantine threshold of attempts (2 failed, attempt 3 is the threshold): busy")
	_, err = r.store.Hold(t.Context(), unitTopic, "job-2")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
}

// A held key's record read from another partition than the hold's is
// refused; the hold's own partition goes on parking.
func TestKafkaARecordOfAHeldKeyFromAnotherPartitionIsRefused(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	r.does["bad"] = kafka.Permanent(errors.New("malformed"))
	_, _ = r.run(t, krec(1, 5, "job-1", "bad"))
	failed, ran := r.run(t, krec(2, 5, "job-1", "moved"), krec(1, 6, "job-1", "stays"))
	require.Equal(t, []string{unitTopic + "-2/5"}, failed)
	require.Empty(t, ran)
	require.Equal(t, int64(2), r.hold(t, "job-1").Parked)
}

// A record that carries another partition count than the topic's holds
// its key on the partition it arrived on; the count is checked against
// exactly the configured one.
func TestKafkaAnotherPartitionCountHoldsTheKey(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3, func(c *kafka.Config) { c.PartitionCount = 6 })
	failed, ran := r.run(t, krec(3, 1, "job-1", "new", kafka.PartitionCountHeader, "8"), krec(4, 1, "job-2", "same", kafka.PartitionCountHeader, "6"))
	require.Empty(t, failed)
	require.Equal(t, []string{"same"}, ran)
	h := r.hold(t, "job-1")
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Contains(t, h.Cause, "partitioned over 8, the topic has 6")
	p, _, _ := quarantine.KafkaPosition(h.From)
	require.Equal(t, int64(3), p)
}

// Check refuses a batch of another topic than the quarantine's: a
// misconfigured function parks nothing under the wrong topic.
func TestKafkaCheckRefusesAnotherTopic(t *testing.T) {
	t.Parallel()
	r := newKafkaRig(t, 3)
	rec := krec(0, 1, "job-1", "v")
	rec.Topic = "elsewhere"
	resp, err := r.p.Process(t.Context(), kevent(rec))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
}

// A lane key a DynamoDB string cannot hold, or that starts like a hash,
// gets a group of its hash: never another key's group.
func TestKafkaGroupOfEveryKeyIsItsOwn(t *testing.T) {
	t.Parallel()
	keys := []string{"job-1", "", "\xff\xfe", strings.Repeat("k", 1024), strings.Repeat("k", 1025), "sha256:abc", "日本"}
	seen := map[string]string{}
	for _, k := range keys {
		g := quarantine.KafkaGroup(k)
		require.NotEmpty(t, g)
		require.LessOrEqual(t, len(g), 1024)
		if prev, dup := seen[g]; dup {
			t.Fatalf("keys %q and %q share group %q", prev, k, g)
		}
		seen[g] = k
	}
	require.Equal(t, "job-1", quarantine.KafkaGroup("job-1"))
	require.Equal(t, strings.Repeat("k", 1024), quarantine.KafkaGroup(strings.Repeat("k", 1024)), "1024 bytes is kept")
	require.True(t, strings.HasPrefix(quarantine.KafkaGroup(strings.Repeat("k", 1025)), "sha256:"), "1025 is hashed")
	require.NotEqual(t, "sha256:abc", quarantine.KafkaGroup("sha256:abc"), "a key that looks like a hash is hashed")
}

// KafkaSeq keeps each partition's offsets apart and in order, up to the
// largest partition and offset, and refuses negative ones.
func TestKafkaSeqAndPosition(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]int64{{0, 0}, {0, 1}, {1, 0}, {math.MaxInt32, math.MaxInt64}, {5, 999}} {
		s, err := quarantine.KafkaSeq(c[0], c[1])
		require.NoError(t, err)
		require.Len(t, s, 40)
		p, o, ok := quarantine.KafkaPosition(s)
		require.True(t, ok)
		require.Equal(t, c, [2]int64{p, o})
	}
	a, _ := quarantine.KafkaSeq(0, math.MaxInt64)
	b, _ := quarantine.KafkaSeq(1, 0)
	require.Less(t, a, b, "partitions never interleave")
	c, _ := quarantine.KafkaSeq(1, 9)
	d, _ := quarantine.KafkaSeq(1, 10)
	require.Less(t, c, d)
	for _, bad := range [][2]int64{{-1, 0}, {0, -1}} {
		_, err := quarantine.KafkaSeq(bad[0], bad[1])
		require.Error(t, err)
	}
	for _, bad := range []string{"", "1", strings.Repeat("9", 40), strings.Repeat("0", 39) + "x"} {
		_, _, ok := quarantine.KafkaPosition(bad)
		require.False(t, ok, bad)
	}
}

// A record over the inline budget keeps its value in the BodyStore (and
// fails to park without one); a lane longer than one store write holds is
// parked in several, in order, the key held once.
func TestKafkaParkLargeValuesAndLongLanes(t *testing.T) {
	t.Parallel()
	store := &parkCounter{MemoryStore: quarantine.NewMemoryStore()}
	bodies := memBodies{}
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: unitTopic, Bodies: bodies, MaxInlineBody: 100})
	require.NoError(t, err)
	var recs []*kafka.Record
	for o := range int64(250) {
		v := []byte(fmt.Sprintf("v%d", o))
		if o == 7 {
			v = []byte(strings.Repeat("x", 101))
		}
		recs = append(recs, &kafka.Record{Topic: unitTopic, Partition: 2, Offset: 1000 + o, Key: []byte("job-1"), Value: v})
	}
	h, err := q.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "job-1"}, recs, errors.New("boom"), true)
	require.NoError(t, err)
	require.Equal(t, kafka.Held, h.State)
	require.Equal(t, int64(2), h.Partition)
	require.Equal(t, []int{99, 99, 52}, store.sizes)
	require.Equal(t, []bool{true, false, false}, store.holds)
	ms, err := store.Messages(t.Context(), unitTopic, "job-1", quarantine.StatusParked, "", 0)
	require.NoError(t, err)
	require.Len(t, ms, 250)
	require.Nil(t, ms[7].Kafka.Value)
	require.Equal(t, strings.Repeat("x", 101), bodies[ms[7].BodyKey])
	require.True(t, strings.HasPrefix(ms[7].BodyKey, "quarantine/"+unitTopic+"/"))

	noBodies, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: quarantine.NewMemoryStore(), Topic: unitTopic, MaxInlineBody: 100})
	require.NoError(t, err)
	_, err = noBodies.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "job-1"}, recs[7:8], errors.New("boom"), true)
	require.ErrorContains(t, err, "no body store is configured")
	atBudget := &kafka.Record{Topic: unitTopic, Partition: 2, Offset: 1, Key: []byte("job-1"), Value: []byte(strings.Repeat("x", 95))}
	_, err = noBodies.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "job-1"}, []*kafka.Record{atBudget}, errors.New("boom"), true)
	require.NoError(t, err, "exactly at the budget, it stays inline")
}

type parkCounter struct {
	*quarantine.MemoryStore
	sizes []int
	holds []bool
}

func (p *parkCounter) Park(ctx context.Context, queue, group string, items []quarantine.Parked, hold bool, cause string, now time.Time) (quarantine.HoldRecord, error) {
	p.sizes, p.holds = append(p.sizes, len(items)), append(p.holds, hold)
	return p.MemoryStore.Park(ctx, queue, group, items, hold, cause, now)
}

// NewKafka refuses a configuration that cannot work, naming the field.
func TestNewKafkaRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	store := quarantine.NewMemoryStore()
	for name, c := range map[string]struct {
		cfg   quarantine.KafkaConfig
		field string
	}{
		"no store":        {quarantine.KafkaConfig{Topic: "t"}, "Store is nil"},
		"no topic":        {quarantine.KafkaConfig{Store: store}, `Topic "" is not`},
		"a '#' in it":     {quarantine.KafkaConfig{Store: store, Topic: "a#b"}, `Topic "a#b"`},
		"dot":             {quarantine.KafkaConfig{Store: store, Topic: "."}, `Topic "."`},
		"250 characters":  {quarantine.KafkaConfig{Store: store, Topic: strings.Repeat("t", 250)}, "Topic"},
		"negative inline": {quarantine.KafkaConfig{Store: store, Topic: "t", MaxInlineBody: -1}, "MaxInlineBody -1"},
	} {
		_, err := quarantine.NewKafka(c.cfg)
		require.ErrorIs(t, err, quarantine.ErrInvalidConfig, name)
		require.ErrorContains(t, err, c.field, name)
	}
	_, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: strings.Repeat("t", 249)})
	require.NoError(t, err, "249 characters is a topic name")
}

// A Kafka batch that parked or dropped records writes one EMF line under
// the topic's name, which the held-groups alarm's dimension uses too; one
// that did neither writes nothing.
func TestLoggedKafkaBatchMetricsCountsParkedAndDroppedRecords(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	hook := quarantine.LoggedKafkaBatchMetrics(slog.New(slog.NewJSONHandler(&buf, nil)), "fifoworker-commands")
	hook(kafka.BatchMetrics{Records: []kafka.RecordMetrics{{Outcome: kafka.Succeeded}, {Outcome: kafka.Failed}}})
	require.Empty(t, buf.String())
	hook(kafka.BatchMetrics{Records: []kafka.RecordMetrics{{Outcome: kafka.Parked}, {Outcome: kafka.Parked}, {Outcome: kafka.Dropped}}})
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), buf.String())
	require.Equal(t, "fifoworker-commands", doc["Queue"])
	require.EqualValues(t, 2, doc["MessagesParked"])
	require.EqualValues(t, 1, doc["MessagesDropped"])
}

// asRecord is what the topic delivers for a sent copy: a record of its
// partition at offset at.
func asRecord(c quarantine.KafkaCopy, at int64) events.KafkaRecord {
	r := events.KafkaRecord{
		Topic: c.Topic, Partition: c.Partition, Offset: at, TimestampType: "CREATE_TIME",
		Key: base64.StdEncoding.EncodeToString(c.Key), Value: base64.StdEncoding.EncodeToString(c.Value),
	}
	for _, h := range c.Headers {
		r.Headers = append(r.Headers, map[string]events.JSONNumberBytes{h.Key: h.Value})
	}
	return r
}

// A Kafka redrive re-publishes each parked record to its hold's partition,
// oldest first, with its key, its value (from the body store when it was
// kept there) and its headers, and its identity in CopyHeader (a forged
// one it carried is dropped); delivered, the copies run in that order and
// release the key.
func TestKafkaRedriveRepublishesEachParkedRecordInOrder(t *testing.T) {
	t.Parallel()
	store, bodies := quarantine.NewMemoryStore(), memBodies{}
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: unitTopic, Bodies: bodies, MaxInlineBody: 100})
	require.NoError(t, err)
	big := strings.Repeat("v", 200)
	forged := quarantine.Copy{Epoch: 1, Nonce: strings.Repeat("0", 32), Sequence: strings.Repeat("0", 40)}.Header()
	recs := []*kafka.Record{
		{Topic: unitTopic, Partition: 4, Offset: 10, Key: []byte("job-1"), Value: []byte("first"), Headers: []kafka.Header{{Key: "outbox-id", Value: []byte("job-1/v1")}}},
		{Topic: unitTopic, Partition: 4, Offset: 12, Key: []byte("job-1"), Value: []byte(big)},
		{Topic: unitTopic, Partition: 4, Offset: 15, Key: []byte("job-1"), Value: []byte("third"), Headers: []kafka.Header{{Key: quarantine.CopyHeader, Value: []byte(forged)}, {Key: "x", Value: []byte{0xff}}}},
	}
	_, err = q.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "job-1"}, recs, errors.New("boom"), true)
	require.NoError(t, err)

	sent := &quarantinetest.Records{}
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: unitTopic, Records: sent, Bodies: bodies})
	require.NoError(t, err)
	rep, err := op.Redrive(t.Context(), "job-1", false)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Sent)
	require.Len(t, sent.Sent, 3)
	wantValues := []string{"first", big, "third"}
	for i, c := range sent.Sent {
		require.Equal(t, unitTopic, c.Topic)
		require.Equal(t, int64(4), c.Partition, "to the hold's partition")
		require.Equal(t, []byte("job-1"), c.Key)
		require.Equal(t, wantValues[i], string(c.Value))
		id, ok := quarantine.ParseKafkaCopy(&kafka.Record{Headers: kheaders(c.Headers)})
		require.True(t, ok, "one identity")
		require.Equal(t, rep.Epoch, id.Epoch)
		seq, _ := quarantine.KafkaSeq(4, recs[i].Offset)
		require.Equal(t, seq, id.Sequence)
	}
	require.Equal(t, "outbox-id", sent.Sent[0].Headers[0].Key)
	require.Equal(t, []quarantine.KafkaHeader{{Key: "x", Value: []byte{0xff}}}, sent.Sent[2].Headers[:1], "the forged identity is gone, the rest kept")

	p, err := kafka.New(kafka.Config{Handler: func(context.Context, kafka.Record) error { return nil }, Quarantine: q, QuarantineThreshold: 3})
	require.NoError(t, err)
	resp, err := p.Process(t.Context(), kevent(asRecord(sent.Sent[0], 20), asRecord(sent.Sent[1], 21), asRecord(sent.Sent[2], 22)))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	h, err := store.Hold(t.Context(), unitTopic, "job-1")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
}

func kheaders(hs []quarantine.KafkaHeader) []kafka.Header {
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// A copy the brokers refuse is sent again before any later one, with a
// backoff, so the partition keeps the copies in order.
func TestKafkaRedriveRetriesACopyBeforeTheNext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := quarantine.NewMemoryStore()
		q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: unitTopic})
		require.NoError(t, err)
		recs := []*kafka.Record{
			{Topic: unitTopic, Partition: 0, Offset: 1, Key: []byte("k"), Value: []byte("one")},
			{Topic: unitTopic, Partition: 0, Offset: 2, Key: []byte("k"), Value: []byte("two")},
		}
		_, err = q.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "k"}, recs, errors.New("boom"), true)
		require.NoError(t, err)
		refusals := 2
		var tried []string
		sent := &quarantinetest.Records{Fail: func(c quarantine.KafkaCopy) error {
			tried = append(tried, string(c.Value))
			if string(c.Value) == "one" && refusals > 0 {
				refusals--
				return errors.New("NOT_LEADER_FOR_PARTITION")
			}
			return nil
		}}
		op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: unitTopic, Records: sent})
		require.NoError(t, err)
		start := time.Now()
		rep, err := op.Redrive(t.Context(), "k", false)
		require.NoError(t, err)
		require.Equal(t, 2, rep.Sent)
		require.Equal(t, []string{"one", "one", "one", "two"}, tried)
		require.Positive(t, time.Since(start), "it backed off between tries")
	})
}

// An operator is a queue's or a topic's; a Kafka record is not redriven
// without a RecordSender, and nothing is begun.
func TestKafkaOperatorRefusals(t *testing.T) {
	t.Parallel()
	store := quarantine.NewMemoryStore()
	_, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: unitTopic, Records: &quarantinetest.Records{},
		Sender: &quarantinetest.Sends{}, QueueURL: "http://127.0.0.1:1/q"})
	require.ErrorIs(t, err, quarantine.ErrInvalidConfig)
	require.ErrorContains(t, err, "Records and Sender")

	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: unitTopic})
	require.NoError(t, err)
	_, err = q.Park(t.Context(), kafka.TopicKey{Topic: unitTopic, Key: "k"}, []*kafka.Record{{Topic: unitTopic, Offset: 1, Key: []byte("k")}}, errors.New("boom"), true)
	require.NoError(t, err)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: unitTopic})
	require.NoError(t, err)
	_, err = op.Redrive(t.Context(), "k", false)
	require.ErrorContains(t, err, "Records for a Kafka topic")
	h, err := store.Hold(t.Context(), unitTopic, "k")
	require.NoError(t, err)
	require.Zero(t, h.Epoch, "no redrive was begun")

	sqsOp, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: unitTopic, Sender: &quarantinetest.Sends{}, QueueURL: "http://127.0.0.1:1/q"})
	require.NoError(t, err)
	_, err = sqsOp.Redrive(t.Context(), "k", false)
	require.ErrorContains(t, err, "no RecordSender")
}
