package quarantinetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

func testMessages(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	// 4 done (parked first, and redriven alone), 8 discarded.
	b.park(t, "g", true, "boom", 4)
	b.redrive(t, "g")
	b.done(t, "g", 4, 1)
	b.park(t, "g", true, "boom", 2, 6, 8, 10)
	b.discard(t, "g", 8)
	list := func(status quarantine.Status, after string, limit int) []string {
		t.Helper()
		ms, err := b.store.Messages(b.ctx, b.queue, "g", status, after, limit)
		require.NoError(t, err)
		for _, m := range ms {
			require.Equal(t, b.queue, m.Queue)
			require.Equal(t, "g", m.Group)
			if status != "" {
				require.Equal(t, status, m.Status)
			}
		}
		return sequences(ms)
	}
	require.Equal(t, []string{"2", "4", "6", "8", "10"}, list("", "", 0))
	require.Equal(t, []string{"2", "4", "6", "8", "10"}, list("", "", -1), "a negative limit lists every message")
	require.Equal(t, []string{"2", "6", "10"}, list(quarantine.StatusParked, "", 0))
	require.Equal(t, []string{"4"}, list(quarantine.StatusDone, "", 0))
	require.Equal(t, []string{"8"}, list(quarantine.StatusDiscarded, "", 0))
	require.Equal(t, []string{"6", "8", "10"}, list("", seq(4), 0))
	require.Equal(t, []string{"6", "8", "10"}, list("", seq(5), 0), "after need not name a message")
	require.Empty(t, list("", seq(10), 0))
	require.Equal(t, []string{"2", "4"}, list("", "", 2))
	require.Equal(t, []string{"2", "6"}, list(quarantine.StatusParked, "", 2), "the limit counts the messages of the status")
	require.Equal(t, []string{"6"}, list(quarantine.StatusParked, seq(2), 1))
	require.Equal(t, []string{"10"}, list(quarantine.StatusParked, seq(6), 5))

	// Parked out of order across calls: listed in sequence order.
	b.park(t, "h", true, "boom", 30)
	b.park(t, "h", false, "", 7)
	b.park(t, "h", false, "", 200)
	require.Equal(t, []string{"7", "30", "200"}, sequences(b.messages(t, "h", "")))

	require.Empty(t, b.messages(t, "nobody", ""))
	ms, err := b.store.Messages(b.ctx, "other-"+b.queue, "g", "", "", 0)
	require.NoError(t, err)
	require.Empty(t, ms)
}

// testMessagesPages parks more than DynamoDB returns in one page (1 MB).
func testMessagesPages(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	pad := strings.Repeat("x", 12<<10)
	var all []string
	for batch := range 3 {
		var in []quarantine.Parked
		for i := range 40 {
			n := batch*40 + i + 1
			p := item(n)
			p.Body = pad + strconv.Itoa(n)
			in = append(in, p)
			all = append(all, strconv.Itoa(n))
		}
		h, err := b.store.Park(b.ctx, b.queue, "g", in, batch == 0, "boom", b.tick())
		require.NoError(t, err)
		require.Equal(t, int64(len(all)), h.Parked)
	}
	var parked []string
	for i := 1; i <= 120; i++ {
		if i <= 100 && i%2 == 0 {
			_, err := b.store.Discard(b.ctx, b.queue, "g", seq(i), b.tick())
			require.NoError(t, err)
			continue
		}
		parked = append(parked, strconv.Itoa(i))
	}
	got := b.messages(t, "g", "")
	require.Equal(t, all, sequences(got))
	require.Equal(t, pad+"120", got[119].Body)
	require.Equal(t, parked, sequences(b.messages(t, "g", quarantine.StatusParked)))
	ms, err := b.store.Messages(b.ctx, b.queue, "g", quarantine.StatusParked, "", 60)
	require.NoError(t, err)
	require.Equal(t, parked[:60], sequences(ms))
	ms, err = b.store.Messages(b.ctx, b.queue, "g", quarantine.StatusParked, seq(99), 0)
	require.NoError(t, err)
	require.Equal(t, parked[50:], sequences(ms))
	b.requireCounted(t, "g")
}

func testHolds(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	list := func() []quarantine.HoldRecord {
		t.Helper()
		hs, err := b.store.Holds(b.ctx, b.queue)
		require.NoError(t, err)
		return hs
	}
	require.Empty(t, list())

	t1 := b.tick()
	park := func(group string, at time.Time, n int) quarantine.HoldRecord {
		t.Helper()
		h, err := b.store.Park(b.ctx, b.queue, group, items(n), true, "boom", at)
		require.NoError(t, err)
		return h
	}
	c := park("c", t1, 1)
	a := park("a", t1, 1) // the same time as c: by group
	t2 := b.tick()
	bb := park("b", t2, 1)
	park("d", b.tick(), 1)
	d := b.redrive(t, "d") // draining: listed
	park("e", b.tick(), 1)
	b.discard(t, "e", 1) // released: not listed
	_, err := b.store.Park(b.ctx, "other-"+b.queue, "f", items(1), true, "boom", Start)
	require.NoError(t, err)
	require.Equal(t, []quarantine.HoldRecord{a, c, bb, d}, list())

	// Held again: its new time held moves it.
	a = b.park(t, "a", true, "again", 2)
	require.Equal(t, []quarantine.HoldRecord{c, bb, d, a}, list())
	// Parked without hold: it stays.
	c = b.park(t, "c", false, "", 2)
	require.Equal(t, []quarantine.HoldRecord{c, bb, d, a}, list())
	// Released: gone; held anew: back, at its new time.
	b.discard(t, "c", 1)
	b.discard(t, "c", 2)
	require.Equal(t, []quarantine.HoldRecord{bb, d, a}, list())
	c = b.park(t, "c", false, "", 3)
	require.Equal(t, []quarantine.HoldRecord{bb, d, a, c}, list())

	others, err := b.store.Holds(b.ctx, "other-"+b.queue)
	require.NoError(t, err)
	require.Len(t, others, 1)
	require.Equal(t, "f", others[0].Group)
}

func testRead(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2)
	b.park(t, "r", true, "boom", 1, 2)
	b.redrive(t, "r")
	b.done(t, "r", 1, 1)
	b.discard(t, "r", 2)
	g, r := b.hold(t, "g"), b.hold(t, "r")
	require.Equal(t, quarantine.StateReleased, r.State)
	k := func(group string, n int) quarantine.ItemKey {
		return quarantine.ItemKey{Group: group, Sequence: seq(n)}
	}

	holds, got, err := b.store.Read(b.ctx, b.queue,
		[]string{"g", "r", "nobody", "g"},
		[]quarantine.ItemKey{k("g", 1), k("r", 1), k("r", 2), k("g", 99), k("nobody", 1), k("g", 1)})
	require.NoError(t, err)
	require.Equal(t, map[string]quarantine.HoldRecord{"g": g, "r": r}, holds)
	require.Equal(t, map[quarantine.ItemKey]quarantine.Parked{
		k("g", 1): b.message(t, "g", 1), k("r", 1): b.message(t, "r", 1), k("r", 2): b.message(t, "r", 2),
	}, got)
	require.Equal(t, quarantine.StatusParked, got[k("g", 1)].Status)
	require.Equal(t, quarantine.StatusDone, got[k("r", 1)].Status)
	require.Equal(t, quarantine.StatusDiscarded, got[k("r", 2)].Status)
	require.Equal(t, b.stored("g", 1, g.HeldAt), got[k("g", 1)])

	// Messages are found whether or not their groups are asked for.
	holds, got, err = b.store.Read(b.ctx, b.queue, nil, []quarantine.ItemKey{k("g", 2)})
	require.NoError(t, err)
	require.Empty(t, holds)
	require.Equal(t, []quarantine.ItemKey{k("g", 2)}, keysOf(got))

	holds, got, err = b.store.Read(b.ctx, b.queue, nil, nil)
	require.NoError(t, err)
	require.Empty(t, holds)
	require.Empty(t, got)

	holds, got, err = b.store.Read(b.ctx, "other-"+b.queue, []string{"g"}, []quarantine.ItemKey{k("g", 1)})
	require.NoError(t, err)
	require.Empty(t, holds)
	require.Empty(t, got)
}

func keysOf(m map[quarantine.ItemKey]quarantine.Parked) []quarantine.ItemKey {
	var out []quarantine.ItemKey
	for k := range m {
		out = append(out, k)
	}
	return out
}

// testReadMany reads more keys than one DynamoDB batch takes (100).
func testReadMany(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"a", "b", "c"}
	var keys []quarantine.ItemKey
	for _, g := range groups {
		ns := make([]int, 40)
		for i := range ns {
			ns[i] = i + 1
		}
		b.park(t, g, true, "boom", ns...)
		for _, n := range ns {
			keys = append(keys, quarantine.ItemKey{Group: g, Sequence: seq(n)})
		}
		for n := 41; n <= 50; n++ {
			keys = append(keys, quarantine.ItemKey{Group: g, Sequence: seq(n)}) // absent
		}
	}
	holds, got, err := b.store.Read(b.ctx, b.queue, append(groups, "nobody"), keys)
	require.NoError(t, err)
	require.Len(t, holds, 3)
	for _, g := range groups {
		require.Equal(t, b.hold(t, g), holds[g])
	}
	require.Len(t, got, 120)
	for _, k := range keys {
		p, ok := got[k]
		if n, _ := strconv.Atoi(quarantine.SeqNumber(k.Sequence)); n > 40 {
			require.False(t, ok, "%v", k)
			continue
		}
		require.True(t, ok, "%v", k)
		require.Equal(t, k.Group, p.Group)
		require.Equal(t, k.Sequence, p.Sequence)
		require.Equal(t, "dedup-"+quarantine.SeqNumber(k.Sequence), p.DeduplicationID)
	}
}

func testRoundTrip(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	rich := item(1)
	rich.Body = "héllo ✓ \u2028 \"quoted\" \t tab"
	rich.BodySize = int64(len(rich.Body))
	rich.Attributes = map[string]quarantine.MessageAttribute{
		"s":        {DataType: "String", StringValue: "value"},
		"n":        {DataType: "Number", StringValue: "-42.5e3"},
		"b":        {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xfe, 0xff, 0}},
		"custom":   {DataType: "String.order-id", StringValue: "ord-1"},
		"bin.gz":   {DataType: "Binary.gzip", BinaryValue: []byte("\x1f\x8b\x08")},
		"unicode.": {DataType: "String", StringValue: "日本語"},
	}
	rich.ReceiveCount = 7
	rich.Cause = strings.Repeat("é", 512) // 1024 bytes
	large := item(2)
	large.Body, large.BodyKey, large.BodySize = "", quarantine.BodyKey(b.queue, "g", seq(2)), 300_000
	bare := item(3)
	bare.Attributes, bare.DeduplicationID, bare.Cause, bare.ReceiveCount, bare.MessageID = nil, "", "", 0, ""
	in := []quarantine.Parked{rich, large, bare}
	now := b.tick()
	_, err := b.store.Park(b.ctx, b.queue, "g", in, true, rich.Cause, now)
	require.NoError(t, err)
	// The store keeps its own copy.
	in[0].Attributes["b"].BinaryValue[0] = 9
	in[0].Attributes["s"] = quarantine.MessageAttribute{DataType: "String", StringValue: "changed"}

	want := func(p quarantine.Parked) quarantine.Parked {
		p.Queue, p.Group, p.Status, p.ParkedAt, p.UpdatedAt = b.queue, "g", quarantine.StatusParked, now, now
		return p
	}
	rich = item(1)
	rich.Body = "héllo ✓ \u2028 \"quoted\" \t tab"
	rich.BodySize = int64(len(rich.Body))
	rich.Attributes = map[string]quarantine.MessageAttribute{
		"s":        {DataType: "String", StringValue: "value"},
		"n":        {DataType: "Number", StringValue: "-42.5e3"},
		"b":        {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xfe, 0xff, 0}},
		"custom":   {DataType: "String.order-id", StringValue: "ord-1"},
		"bin.gz":   {DataType: "Binary.gzip", BinaryValue: []byte("\x1f\x8b\x08")},
		"unicode.": {DataType: "String", StringValue: "日本語"},
	}
	rich.ReceiveCount = 7
	rich.Cause = strings.Repeat("é", 512)
	wantAll := []quarantine.Parked{want(rich), want(large), want(bare)}
	got := b.messages(t, "g", "")
	require.Equal(t, wantAll, got)
	require.Nil(t, got[2].Attributes)
	require.Equal(t, rich.Cause, b.hold(t, "g").Cause)

	// Changing what a read returned changes nothing stored.
	got[0].Attributes["b"].BinaryValue[1] = 9
	require.Equal(t, wantAll, b.messages(t, "g", ""))

	k := quarantine.ItemKey{Group: "g", Sequence: seq(1)}
	_, read, err := b.store.Read(b.ctx, b.queue, nil, []quarantine.ItemKey{k})
	require.NoError(t, err)
	require.Equal(t, wantAll[0], read[k])
}
