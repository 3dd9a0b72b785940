package quarantinetest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The Kafka cases: parked records (binary keys, values and headers), a
// hold's partition, and the failed attempts a key's hold counts.

// kseq is the sequence key of the Kafka record at partition and offset.
func kseq(partition, offset int64) string {
	s, err := quarantine.KafkaSeq(partition, offset)
	if err != nil {
		panic(err)
	}
	return s
}

// record is the Kafka record at partition and offset as the quarantine
// parks it: key, value and headers byte for byte, none of them UTF-8.
func record(partition, offset int64) quarantine.Parked {
	value := []byte{'{', 0xff, 0xfe, 0, byte(offset), '}'}
	return quarantine.Parked{
		Sequence: kseq(partition, offset),
		BodyMD5:  "d41d8cd98f00b204e9800998ecf8427e",
		BodySize: int64(len(value)),
		Nonce:    "0123456789abcdef0123456789abcdef",
		Cause:    "cause of " + kseq(partition, offset),
		Kafka: &quarantine.KafkaRecord{
			Key:   []byte{'j', 0xc3, 0x28, byte(offset)},
			Value: value,
			Headers: []quarantine.KafkaHeader{
				{Key: "outbox-id", Value: []byte("job-1/v3")},
				{Key: "outbox-id", Value: []byte("a repeated key")},
				{Key: "bin\xff", Value: []byte{0, 0xff}},
				{Key: "empty"},
			},
		},
	}
}

func records(partition int64, offsets ...int64) []quarantine.Parked {
	out := make([]quarantine.Parked, len(offsets))
	for i, o := range offsets {
		out[i] = record(partition, o)
	}
	return out
}

func (b *bundle) parkKafka(t *testing.T, group string, hold bool, partition int64, offsets ...int64) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Park(b.ctx, b.queue, group, records(partition, offsets...), hold, "boom", b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

// failed records a failed attempt of the record at partition and offset,
// having read the hold first, as a processor's Check does.
func (b *bundle) failed(t *testing.T, group string, partition, offset int64, cause string) quarantine.Attempts {
	t.Helper()
	f := quarantine.Failure{Sequence: kseq(partition, offset), Cause: cause}
	if h, err := b.store.Hold(b.ctx, b.queue, group); err == nil {
		f.Seen, f.SeenHeld = h.Attempts, h.State != quarantine.StateReleased
	}
	a, err := b.store.Failed(b.ctx, b.queue, group, f, b.tick())
	require.NoError(t, err)
	require.Equal(t, a, b.hold(t, group).Attempts, "the attempts Failed returned are not the hold's")
	return a
}

// testKafkaRoundTrip parks Kafka records and reads them back, byte for
// byte: keys, values and header names and values that are not UTF-8, a
// header repeated, an empty header value, and a record with nothing.
func testKafkaRoundTrip(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	in := records(3, 7, 8)
	bare := record(3, 9)
	bare.Kafka, bare.Cause = &quarantine.KafkaRecord{}, ""
	large := record(3, 10)
	large.Kafka.Value, large.BodyKey, large.BodySize = nil, quarantine.BodyKey(b.queue, "g", kseq(3, 10)), 250_000
	in = append(in, bare, large)
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "g", in, true, "boom", now)
	require.NoError(t, err)
	require.Equal(t, kseq(3, 7), h.From)
	// The store keeps its own copy.
	in[0].Kafka.Key[0], in[0].Kafka.Value[0], in[0].Kafka.Headers[0].Value[0] = 'x', 'x', 'x'

	want := []quarantine.Parked{record(3, 7), record(3, 8), bare, large}
	for i := range want {
		want[i].Queue, want[i].Group, want[i].Status, want[i].ParkedAt, want[i].UpdatedAt = b.queue, "g", quarantine.StatusParked, now, now
	}
	want[2].Kafka = &quarantine.KafkaRecord{}
	got := b.messages(t, "g", "")
	require.Equal(t, want, got)
	got[0].Kafka.Value[1] = 'x'
	require.Equal(t, want, b.messages(t, "g", ""), "changing what a read returned changes nothing stored")

	k := quarantine.ItemKey{Group: "g", Sequence: kseq(3, 8)}
	_, read, err := b.store.Read(b.ctx, b.queue, nil, []quarantine.ItemKey{k})
	require.NoError(t, err)
	require.Equal(t, want[1], read[k])
	p, o, ok := quarantine.KafkaPosition(read[k].Sequence)
	require.True(t, ok)
	require.Equal(t, [2]int64{3, 8}, [2]int64{p, o})
}

// testKafkaPartitions holds a key's records in one partition: a park of
// another partition's records is refused while the key is held or
// draining, and nothing changes; once released, the other partition's
// records start a hold of their own, and the old partition's tombstones
// never pass for them, offset for offset.
func testKafkaPartitions(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.parkKafka(t, "g", true, 1, 5, 6)
	for _, hold := range []bool{true, false} {
		before := b.snapshot(t, "g")
		_, err := b.store.Park(b.ctx, b.queue, "g", records(2, 7), hold, "moved", b.tick())
		b.refused(t, err, quarantine.ErrOtherPartition, before, "g")
	}
	epoch := b.redrive(t, "g").Epoch
	before := b.snapshot(t, "g")
	_, err := b.store.Park(b.ctx, b.queue, "g", records(2, 7), false, "", b.tick())
	b.refused(t, err, quarantine.ErrOtherPartition, before, "g")
	b.doneSeq(t, "g", kseq(1, 5), epoch)
	h := b.doneSeq(t, "g", kseq(1, 6), epoch)
	require.Equal(t, quarantine.StateReleased, h.State)

	// Partition 2's offsets 5 and 6, those of partition 1's tombstones.
	h = b.parkKafka(t, "g", true, 2, 5, 6)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, [3]string{kseq(2, 5), kseq(2, 6), kseq(2, 5)}, [3]string{h.From, h.Through, h.Next})
	require.Equal(t, map[string]quarantine.Status{
		quarantine.SeqNumber(kseq(1, 5)): quarantine.StatusDone, quarantine.SeqNumber(kseq(1, 6)): quarantine.StatusDone,
		quarantine.SeqNumber(kseq(2, 5)): quarantine.StatusParked, quarantine.SeqNumber(kseq(2, 6)): quarantine.StatusParked,
	}, statuses(b.messages(t, "g", "")))
	before = b.snapshot(t, "g")
	_, err = b.store.Park(b.ctx, b.queue, "g", records(1, 7), false, "", b.tick())
	b.refused(t, err, quarantine.ErrOtherPartition, before, "g")
}

// testKafkaParkInvalid refuses a park that mixes partitions, or Kafka
// records and SQS messages, or whose Kafka sequence is no KafkaSeq's.
func testKafkaParkInvalid(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	notKafka := record(0, 1)
	notKafka.Sequence = strings.Repeat("9", 40) // an offset over an int64
	cases := map[string][]quarantine.Parked{
		"two partitions":             {record(0, 1), record(1, 2)},
		"a message after a record":   {record(0, 1), item(2)},
		"a record after a message":   {item(1), record(0, 2)},
		"not a Kafka sequence":       {notKafka},
		"out of order in the offset": {record(0, 2), record(0, 1)},
	}
	for name, items := range cases {
		_, err := b.store.Park(b.ctx, b.queue, "g", items, true, "boom", b.tick())
		require.Error(t, err, name)
		require.NotErrorIs(t, err, quarantine.ErrOtherPartition, name)
		_, err = b.store.Hold(b.ctx, b.queue, "g")
		require.ErrorIs(t, err, quarantine.ErrNoHold, "%s: an invalid park wrote a hold", name)
		require.Empty(t, b.messages(t, "g", ""), name)
	}
}

// testFailedCounts counts the failed attempts of one record: a group
// without a record gets a released one that only counts (no operator
// lists it); the same record's failures add up, another record's start
// again at one, the same offset in another partition is another record.
func testFailedCounts(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	now := b.now.Add(1e9)
	a := b.failed(t, "g", 0, 5, "busy")
	require.Equal(t, quarantine.Attempts{Sequence: kseq(0, 5), Failed: 1, Cause: "busy"}, a)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateReleased, HeldAt: now, UpdatedAt: now, Attempts: a,
	}, b.hold(t, "g"))
	holds, err := b.store.Holds(b.ctx, b.queue)
	require.NoError(t, err)
	require.Empty(t, holds, "a key that only counts is not held")
	_, err = b.store.BeginRedrive(b.ctx, b.queue, "g", b.tick())
	require.ErrorIs(t, err, quarantine.ErrNoHold)

	require.Equal(t, int64(2), b.failed(t, "g", 0, 5, "busy again").Failed)
	require.Equal(t, int64(3), b.failed(t, "g", 0, 5, "and again").Failed)
	require.Equal(t, "and again", b.hold(t, "g").Attempts.Cause)
	require.Equal(t, int64(1), b.failed(t, "g", 0, 6, "the next record").Failed)
	require.Equal(t, int64(1), b.failed(t, "g", 1, 6, "another partition").Failed)
	require.Equal(t, int64(1), b.failed(t, "other", 1, 6, "another key").Failed)
	require.Equal(t, int64(1), b.hold(t, "g").Attempts.Failed)

	long := strings.Repeat("é", 600) // 1200 bytes: clipped to 1024
	require.Equal(t, strings.Repeat("é", 512), b.failed(t, "g", 1, 6, long).Cause)
	require.Equal(t, "", b.failed(t, "g", 1, 6, "").Cause)
	require.Equal(t, int64(3), b.hold(t, "g").Attempts.Failed)
}

// testFailedWithAStaleRead: what the caller read (Failure.Seen,
// SeenHeld) may be out of date, or wrong; the count never depends on it.
func testFailedWithAStaleRead(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.failed(t, "g", 0, 5, "busy")
	b.failed(t, "g", 0, 5, "busy")
	stale := []quarantine.Failure{
		{Seen: quarantine.Attempts{}},                                                // read before any failure
		{Seen: quarantine.Attempts{Sequence: kseq(0, 5), Failed: 1}},                 // one behind
		{Seen: quarantine.Attempts{Sequence: kseq(0, 5), Failed: 9}},                 // ahead
		{Seen: quarantine.Attempts{Sequence: kseq(0, 4), Failed: 2}},                 // another record
		{Seen: quarantine.Attempts{Sequence: kseq(0, 5), Failed: 2}, SeenHeld: true}, // held, it is not
	}
	for i, f := range stale {
		f.Sequence, f.Cause = kseq(0, 5), "busy"
		a, err := b.store.Failed(b.ctx, b.queue, "g", f, b.tick())
		require.NoError(t, err, "case %d", i)
		require.Equal(t, int64(3+i), a.Failed, "case %d", i)
	}
	// Held since the read: the hold stays held.
	b.parkKafka(t, "g", true, 0, 5)
	a, err := b.store.Failed(b.ctx, b.queue, "g", quarantine.Failure{Sequence: kseq(0, 5), Cause: "copy failed", Seen: quarantine.Attempts{Sequence: kseq(0, 5), Failed: 7}}, b.tick())
	require.NoError(t, err)
	require.Equal(t, int64(8), a.Failed)
	require.Equal(t, quarantine.StateHeld, b.hold(t, "g").State)
	b.requireCounted(t, "g")
}

// testFailedKeepsTheHold: a count changes nothing else of a hold, held,
// draining or released (its range stays, for late redeliveries), and
// every other write keeps the count, a new hold included.
func testFailedKeepsTheHold(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	held := b.parkKafka(t, "g", true, 0, 5, 6)
	a := b.failed(t, "g", 0, 9, "busy")
	want := held
	want.Attempts = a
	require.Equal(t, want, b.hold(t, "g"), "only the attempts changed")

	drain := b.redrive(t, "g")
	require.Equal(t, a, drain.Attempts)
	a = b.failed(t, "g", 0, 9, "busy again")
	want = drain
	want.Attempts = a
	require.Equal(t, want, b.hold(t, "g"))
	require.Equal(t, a, b.doneSeq(t, "g", kseq(0, 5), drain.Epoch).Attempts)
	require.Equal(t, a, b.parkKafka(t, "g", false, 0, 7).Attempts)
	require.Equal(t, a, b.discardSeq(t, "g", kseq(0, 6)).Attempts)
	h := b.parkKafka(t, "g", true, 0, 8)
	require.Equal(t, a, h.Attempts, "a re-hold keeps them")
	for _, o := range []int64{7, 8} {
		h = b.discardSeq(t, "g", kseq(0, o))
	}
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, a, h.Attempts)

	released := b.hold(t, "g")
	a = b.failed(t, "g", 0, 9, "after the release")
	want = released
	want.Attempts = a
	require.Equal(t, want, b.hold(t, "g"), "a released hold keeps its range")
	h = b.parkKafka(t, "g", true, 0, 10)
	require.Equal(t, a, h.Attempts, "a new hold keeps them")
	require.Equal(t, kseq(0, 10), h.From)
}

// testFailedRefusals refuses a count without a queue, a group or a
// sequence key, and a cancelled one, writing nothing.
func testFailedRefusals(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	cases := map[string]struct {
		queue, group string
		f            quarantine.Failure
	}{
		"no queue":          {"", "g", quarantine.Failure{Sequence: kseq(0, 1)}},
		"no group":          {b.queue, "", quarantine.Failure{Sequence: kseq(0, 1)}},
		"no sequence":       {b.queue, "g", quarantine.Failure{}},
		"a sequence number": {b.queue, "g", quarantine.Failure{Sequence: "1"}},
	}
	for name, c := range cases {
		_, err := b.store.Failed(b.ctx, c.queue, c.group, c.f, b.tick())
		require.Error(t, err, name)
	}
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	_, err := b.store.Failed(ctx, b.queue, "g", quarantine.Failure{Sequence: kseq(0, 1)}, b.tick())
	require.ErrorIs(t, err, context.Canceled)
	_, err = b.store.Hold(b.ctx, b.queue, "g")
	require.ErrorIs(t, err, quarantine.ErrNoHold, "a refused count wrote a hold")
}

// testConcurrentFailures counts failures of one record written at once,
// each with the same (stale) read: every one is counted, once.
func testConcurrentFailures(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	now := b.tick()
	const n = 6
	var wg sync.WaitGroup
	got := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			var a quarantine.Attempts
			a, errs[i] = b.store.Failed(b.ctx, b.queue, "g", quarantine.Failure{Sequence: kseq(0, 1), Cause: "busy"}, now)
			got[i] = a.Failed
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}
	require.ElementsMatch(t, []int64{1, 2, 3, 4, 5, 6}, got)
	require.Equal(t, int64(n), b.hold(t, "g").Attempts.Failed)
}

func (b *bundle) doneSeq(t *testing.T, group, s string, epoch int64) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Done(b.ctx, b.queue, group, s, epoch, b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

func (b *bundle) discardSeq(t *testing.T, group, s string) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Discard(b.ctx, b.queue, group, s, b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}
