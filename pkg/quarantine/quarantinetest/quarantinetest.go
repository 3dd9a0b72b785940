package quarantinetest

import (
	"context"
	"crypto/md5" //nolint:gosec // the MD5 of a body, as SQS computes MD5OfBody
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// NewStore returns a store for one test. Stores returned to different
// tests may share a table: each test uses a queue name of its own.
type NewStore func(t *testing.T) quarantine.Store

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore)
		})
	}
}

var suite = []struct {
	name string
	run  func(t *testing.T, newStore NewStore)
}{
	{"ParkHoldsTheGroupAndCountsItsMessages", testParkHolds},
	{"ParkIsIdempotentUnderEveryStatus", testParkIdempotent},
	{"ParkWithoutHoldKeepsAHeldOrDrainingState", testParkWithoutHold},
	{"ParkWithHoldHoldsWhateverTheState", testParkWithHold},
	{"EpochCarriesOverARelease", testEpochCarriesOver},
	{"FromAndThroughSpanWhatWasParked", testRange},
	{"DoneOnlyWhileDrainingAtTheEpochOnAParkedMessage", testDone},
	{"NextIsTheOldestParkedMessage", testNext},
	{"ReleaseExactlyWhenTheLastParkedMessageGoes", testRelease},
	{"BeginRedriveRaisesTheEpoch", testBeginRedrive},
	{"DiscardUnderAnyStateAndEpoch", testDiscard},
	{"MessagesOrderFilterAfterAndLimit", testMessages},
	{"MessagesReadPastAPage", testMessagesPages},
	{"HoldsListsHoldsNotReleasedOldestFirst", testHolds},
	{"ReadReturnsHoldsAndMessagesUnderAnyStatus", testRead},
	{"ReadManyKeys", testReadMany},
	{"AttributesAndBodiesRoundTrip", testRoundTrip},
	{"ParkRejectsInvalidArguments", testParkInvalid},
	{"CancelledContextWritesNothing", testCancelled},
	{"QueuesAndGroupsAreIndependent", testIsolation},
	{"ConcurrentParksCountEachMessageOnce", testConcurrentParks},
	{"ConcurrentUnparksReleaseOnce", testConcurrentUnparks},
}

// Start is the time of a test's first write.
var Start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// bundle is what a test works with.
type bundle struct {
	store quarantine.Store
	ctx   context.Context
	queue string
	now   time.Time
}

func setup(t *testing.T, newStore NewStore) *bundle {
	t.Helper()
	return &bundle{store: newStore(t), ctx: t.Context(), queue: "orders-" + randomHex(t) + ".fifo", now: Start}
}

func randomHex(t testing.TB) string {
	var b [4]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// tick moves the test's clock on by a second and returns it.
func (b *bundle) tick() time.Time {
	b.now = b.now.Add(time.Second)
	return b.now
}

// seq is the sequence key of sequence number n.
func seq(n int) string {
	k, err := quarantine.SeqKey(strconv.Itoa(n))
	if err != nil {
		panic(err)
	}
	return k
}

// item is message n as the quarantine parks it: every field a caller sets.
func item(n int) quarantine.Parked {
	body := fmt.Sprintf(`{"order":%d}`, n)
	sum := md5.Sum([]byte(body)) //nolint:gosec // see the import
	return quarantine.Parked{
		Sequence:        seq(n),
		MessageID:       fmt.Sprintf("0c5b7f3e-%04d", n),
		Body:            body,
		BodyMD5:         hex.EncodeToString(sum[:]),
		BodySize:        int64(len(body)),
		Attributes:      map[string]quarantine.MessageAttribute{"trace": {DataType: "String", StringValue: "t-" + strconv.Itoa(n)}},
		DeduplicationID: "dedup-" + strconv.Itoa(n),
		ReceiveCount:    n%4 + 1,
		Cause:           "cause of " + strconv.Itoa(n),
	}
}

func items(ns ...int) []quarantine.Parked {
	out := make([]quarantine.Parked, len(ns))
	for i, n := range ns {
		out[i] = item(n)
	}
	return out
}

// stored is item n as a store keeps it after parking it at now.
func (b *bundle) stored(group string, n int, at time.Time) quarantine.Parked {
	p := item(n)
	p.Queue, p.Group, p.Status, p.ParkedAt, p.UpdatedAt = b.queue, group, quarantine.StatusParked, at, at
	return p
}

func (b *bundle) park(t *testing.T, group string, hold bool, cause string, ns ...int) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Park(b.ctx, b.queue, group, items(ns...), hold, cause, b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

func (b *bundle) redrive(t *testing.T, group string) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.BeginRedrive(b.ctx, b.queue, group, b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

func (b *bundle) done(t *testing.T, group string, n int, epoch int64) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Done(b.ctx, b.queue, group, seq(n), epoch, b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

func (b *bundle) discard(t *testing.T, group string, n int) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Discard(b.ctx, b.queue, group, seq(n), b.tick())
	require.NoError(t, err)
	b.requireHold(t, h)
	b.requireCounted(t, group)
	return h
}

func (b *bundle) hold(t *testing.T, group string) quarantine.HoldRecord {
	t.Helper()
	h, err := b.store.Hold(b.ctx, b.queue, group)
	require.NoError(t, err)
	return h
}

// requireHold fails unless a write's returned hold is what the store keeps.
func (b *bundle) requireHold(t *testing.T, h quarantine.HoldRecord) {
	t.Helper()
	require.Equal(t, h, b.hold(t, h.Group), "the hold a write returned is not the hold it stored")
}

func (b *bundle) messages(t *testing.T, group string, status quarantine.Status) []quarantine.Parked {
	t.Helper()
	ms, err := b.store.Messages(b.ctx, b.queue, group, status, "", 0)
	require.NoError(t, err)
	return ms
}

// message returns group's message n, under any status.
func (b *bundle) message(t *testing.T, group string, n int) quarantine.Parked {
	t.Helper()
	k := quarantine.ItemKey{Group: group, Sequence: seq(n)}
	_, got, err := b.store.Read(b.ctx, b.queue, nil, []quarantine.ItemKey{k})
	require.NoError(t, err)
	p, ok := got[k]
	require.True(t, ok, "group %s has no message %d", group, n)
	return p
}

// requireCounted checks the count invariant of group's hold: it counts
// exactly the messages with StatusParked, none when released, and at
// least one while draining; and its Next is the oldest of them.
func (b *bundle) requireCounted(t *testing.T, group string) {
	t.Helper()
	parked := b.messages(t, group, quarantine.StatusParked)
	h, err := b.store.Hold(b.ctx, b.queue, group)
	if errors.Is(err, quarantine.ErrNoHold) {
		require.Empty(t, parked, "messages parked without a hold")
		return
	}
	require.NoError(t, err)
	require.Equal(t, int64(len(parked)), h.Parked, "the hold of %s does not count its parked messages", group)
	oldest := ""
	if len(parked) > 0 {
		oldest = parked[0].Sequence
	}
	require.Equal(t, oldest, h.Next, "the hold of %s does not name its oldest parked message next", group)
	switch h.State {
	case quarantine.StateReleased:
		require.Zero(t, h.Parked, "a released hold counts parked messages")
	case quarantine.StateDraining:
		require.Positive(t, h.Parked, "a hold left draining with nothing parked")
	case quarantine.StateHeld:
	default:
		t.Fatalf("hold of %s in unknown state %q", group, h.State)
	}
}

// snapshot is the holds and messages of some groups.
type snapshot struct {
	Holds    map[string]quarantine.HoldRecord
	Messages map[string][]quarantine.Parked
}

func (b *bundle) snapshot(t *testing.T, groups ...string) snapshot {
	t.Helper()
	s := snapshot{Holds: map[string]quarantine.HoldRecord{}, Messages: map[string][]quarantine.Parked{}}
	for _, g := range groups {
		h, err := b.store.Hold(b.ctx, b.queue, g)
		if !errors.Is(err, quarantine.ErrNoHold) {
			require.NoError(t, err)
			s.Holds[g] = h
		}
		s.Messages[g] = b.messages(t, g, "")
	}
	return s
}

// refused checks that err is want and that the groups are as before.
func (b *bundle) refused(t *testing.T, err, want error, before snapshot, groups ...string) {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.Equal(t, before, b.snapshot(t, groups...), "a refused write changed something")
}

func sequences(ps []quarantine.Parked) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = quarantine.SeqNumber(p.Sequence)
	}
	return out
}

func statuses(ps []quarantine.Parked) map[string]quarantine.Status {
	out := make(map[string]quarantine.Status, len(ps))
	for _, p := range ps {
		out[quarantine.SeqNumber(p.Sequence)] = p.Status
	}
	return out
}

func testParkHolds(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	in := items(3, 5, 12)
	// Whatever an item says of its queue, status and times, the store sets
	// them; an item without a group takes the call's.
	in[1].Status, in[1].ParkedAt, in[1].Queue = quarantine.StatusDone, Start.Add(-time.Hour), "elsewhere"
	in[2].Group = "g"
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "g", in, true, "handler: permanent: bad order", now)
	require.NoError(t, err)
	want := quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 0, Parked: 3,
		Cause: "handler: permanent: bad order", From: seq(3), Through: seq(12), Next: seq(3), HeldAt: now, UpdatedAt: now,
	}
	require.Equal(t, want, h)
	require.Equal(t, want, b.hold(t, "g"))
	require.Equal(t, []quarantine.Parked{b.stored("g", 3, now), b.stored("g", 5, now), b.stored("g", 12, now)}, b.messages(t, "g", ""))
	b.requireCounted(t, "g")

	// A group without a record has no hold.
	_, err = b.store.Hold(b.ctx, b.queue, "other")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	require.Empty(t, b.messages(t, "other", ""))
}

func testParkIdempotent(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	first := b.park(t, "g", true, "boom", 1, 2, 3)
	parkedAt := first.HeldAt
	before := b.messages(t, "g", "")

	// The same park again, later, with other contents: nothing is counted
	// twice, and no message is overwritten.
	changed := items(1, 2, 3)
	for i := range changed {
		changed[i].Body, changed[i].MessageID, changed[i].Cause = "other body", "other id", "other cause"
	}
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "g", changed, true, "boom again", now)
	require.NoError(t, err)
	b.requireHold(t, h)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 3, Cause: "boom again",
		From: seq(1), Through: seq(3), Next: seq(1), HeldAt: now, UpdatedAt: now,
	}, h)
	require.Equal(t, before, b.messages(t, "g", ""))
	b.requireCounted(t, "g")

	// An overlapping park counts only what is new.
	h = b.park(t, "g", false, "parked while held", 3, 4)
	require.Equal(t, int64(4), h.Parked)
	require.Equal(t, seq(4), h.Through)
	require.Equal(t, parkedAt, b.message(t, "g", 3).ParkedAt, "a retried park rewrote a message")
	require.Equal(t, b.now, b.message(t, "g", 4).ParkedAt)

	// Under every status: done and discarded messages are not parked again.
	b.redrive(t, "g")
	b.done(t, "g", 1, 1)
	b.discard(t, "g", 2)
	before = b.messages(t, "g", "")
	require.Equal(t, map[string]quarantine.Status{"1": quarantine.StatusDone, "2": quarantine.StatusDiscarded, "3": quarantine.StatusParked, "4": quarantine.StatusParked}, statuses(before))
	h = b.park(t, "g", false, "parked while draining", 1, 2, 3, 4)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Epoch)
	h = b.park(t, "g", true, "copy failed", 1, 2, 3, 4)
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StateHeld, h.State)
	for i, p := range b.messages(t, "g", "") {
		want := before[i]
		require.Equal(t, want, p, "a retried park changed message %s", quarantine.SeqNumber(p.Sequence))
	}

	// Even on a released hold: nothing new, so no hold is created, nothing
	// is counted, and the released hold comes back as it was.
	b.discard(t, "g", 3)
	released := b.discard(t, "g", 4)
	require.Equal(t, quarantine.StateReleased, released.State)
	now = b.tick()
	h, err = b.store.Park(b.ctx, b.queue, "g", items(1, 2, 3, 4), true, "redelivered", now)
	require.NoError(t, err)
	require.Equal(t, released, h)
	b.requireCounted(t, "g")
}

func testParkWithoutHold(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// A missing hold is created held.
	now := b.tick()
	h, err := b.store.Park(b.ctx, b.queue, "new", items(1), false, "parked while held", now)
	require.NoError(t, err)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "new", State: quarantine.StateHeld, Parked: 1, Cause: "parked while held",
		From: seq(1), Through: seq(1), Next: seq(1), HeldAt: now, UpdatedAt: now,
	}, h)
	b.requireHold(t, h)

	// A held hold keeps its state, cause and time held.
	held := b.park(t, "g", true, "boom", 1)
	h = b.park(t, "g", false, "later", 2)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 2, Cause: "boom",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: held.HeldAt, UpdatedAt: b.now,
	}, h)

	// A draining one keeps draining under its epoch.
	drain := b.redrive(t, "g")
	h = b.park(t, "g", false, "later still", 3)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateDraining, Epoch: drain.Epoch, Parked: 3, Cause: "boom",
		From: seq(1), Through: seq(3), Next: seq(1), HeldAt: held.HeldAt, UpdatedAt: b.now,
	}, h)

	// A released one is held anew: new cause, time and range.
	b.discard(t, "g", 1)
	b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateReleased, b.discard(t, "g", 3).State)
	h = b.park(t, "g", false, "again", 4)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: drain.Epoch, Parked: 1, Cause: "again",
		From: seq(4), Through: seq(4), Next: seq(4), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// A hold without a cause takes the first one given.
	h = b.park(t, "quiet", true, "", 1)
	require.Empty(t, h.Cause)
	h = b.park(t, "quiet", false, "parked while held", 2)
	require.Equal(t, "parked while held", h.Cause)
	h = b.park(t, "quiet", false, "another", 3)
	require.Equal(t, "parked while held", h.Cause)
}

func testParkWithHold(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)

	// Held again: a new cause and time held, the range extended.
	b.park(t, "g", true, "first", 1)
	h := b.park(t, "g", true, "second", 2)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Parked: 2, Cause: "second",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Draining, held again by a copy that failed (nothing parked): the
	// epoch and the count stay.
	drain := b.redrive(t, "g")
	require.Equal(t, int64(1), drain.Epoch)
	h = b.park(t, "g", true, "copy failed again")
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 1, Parked: 2, Cause: "copy failed again",
		From: seq(1), Through: seq(2), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)
	// Draining, held again with messages parked.
	b.redrive(t, "g")
	h = b.park(t, "g", true, "threshold", 5, 6)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 2, Parked: 4, Cause: "threshold",
		From: seq(1), Through: seq(6), Next: seq(1), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Released, held anew: a new range; the epoch goes on.
	for _, n := range []int{1, 2, 5, 6} {
		b.discard(t, "g", n)
	}
	h = b.park(t, "g", true, "third", 7, 8)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateHeld, Epoch: 2, Parked: 2, Cause: "third",
		From: seq(7), Through: seq(8), Next: seq(7), HeldAt: b.now, UpdatedAt: b.now,
	}, h)

	// Released, a park with nothing new: no hold is created (it would hold
	// the group with nothing to redrive); the released hold comes back as
	// it was, and nothing is written.
	b.park(t, "empty", true, "boom", 1)
	released := b.discard(t, "empty", 1)
	require.Equal(t, quarantine.StateReleased, released.State)
	before := b.snapshot(t, "empty", "never")
	h, err := b.store.Park(b.ctx, b.queue, "empty", nil, true, "copy failed after the release", b.tick())
	require.NoError(t, err)
	require.Equal(t, released, h)
	h, err = b.store.Park(b.ctx, b.queue, "never", nil, true, "nothing to park", b.tick())
	require.NoError(t, err)
	require.Equal(t, quarantine.HoldRecord{}, h)
	require.Equal(t, before, b.snapshot(t, "empty", "never"))
	holds, err := b.store.Holds(b.ctx, b.queue)
	require.NoError(t, err)
	for _, x := range holds {
		require.NotEqual(t, "empty", x.Group)
		require.NotEqual(t, "never", x.Group)
	}
}

func testEpochCarriesOver(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1)
	require.Equal(t, int64(1), b.redrive(t, "g").Epoch)
	h := b.done(t, "g", 1, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(1), h.Epoch, "a release keeps the epoch")

	h = b.park(t, "g", true, "boom again", 2)
	require.Equal(t, int64(1), h.Epoch, "a new hold goes on from the released hold's epoch")
	require.Equal(t, int64(2), b.redrive(t, "g").Epoch)
	before := b.snapshot(t, "g")
	_, err := b.store.Done(b.ctx, b.queue, "g", seq(2), 3, b.tick())
	b.refused(t, err, quarantine.ErrConflict, before, "g")
	h = b.done(t, "g", 2, 2)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(2), h.Epoch)

	// Without a hold=true park: the same.
	h = b.park(t, "g", false, "parked", 3)
	require.Equal(t, int64(2), h.Epoch)
	require.Equal(t, quarantine.StateHeld, h.State)
}

func testRange(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	h := b.park(t, "g", true, "boom", 5, 7)
	require.Equal(t, [2]string{seq(5), seq(7)}, [2]string{h.From, h.Through})
	h = b.park(t, "g", false, "", 3)
	require.Equal(t, [2]string{seq(3), seq(7)}, [2]string{h.From, h.Through}, "a message below the range extends it down")
	h = b.park(t, "g", false, "", 9)
	require.Equal(t, [2]string{seq(3), seq(9)}, [2]string{h.From, h.Through})
	h = b.park(t, "g", false, "", 4, 6)
	require.Equal(t, [2]string{seq(3), seq(9)}, [2]string{h.From, h.Through})
	require.Equal(t, int64(6), h.Parked)

	// Sequence keys sort as the numbers do.
	h = b.park(t, "g", false, "", 10, 100)
	require.Equal(t, [2]string{seq(3), seq(100)}, [2]string{h.From, h.Through})

	// A released hold keeps its range (late redeliveries are recognised by
	// it); a new hold starts a new one, which messages parked before do
	// not extend.
	b.park(t, "r", true, "boom", 1, 2)
	b.redrive(t, "r")
	b.done(t, "r", 1, 1)
	h = b.done(t, "r", 2, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, [2]string{seq(1), seq(2)}, [2]string{h.From, h.Through})
	h = b.park(t, "r", true, "again", 5)
	require.Equal(t, [2]string{seq(5), seq(5)}, [2]string{h.From, h.Through})
	h = b.park(t, "r", false, "", 1, 9)
	require.Equal(t, [2]string{seq(5), seq(9)}, [2]string{h.From, h.Through})
	require.Equal(t, int64(2), h.Parked)
	require.Equal(t, quarantine.StatusDone, b.message(t, "r", 1).Status)
}

func testDone(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	b.park(t, "g", true, "boom", 1, 2, 3)

	try := func(group string, n int, epoch int64, want error) {
		t.Helper()
		before := b.snapshot(t, groups...)
		_, err := b.store.Done(b.ctx, b.queue, group, seq(n), epoch, b.tick())
		b.refused(t, err, want, before, groups...)
	}
	try("nobody", 1, 0, quarantine.ErrNoHold)
	try("g", 1, 0, quarantine.ErrConflict) // held, not draining
	try("g", 1, 1, quarantine.ErrConflict)
	try("g", 99, 0, quarantine.ErrConflict) // the hold is checked first

	drain := b.redrive(t, "g")
	try("g", 1, 0, quarantine.ErrConflict) // no copy has epoch 0
	try("g", 1, 2, quarantine.ErrConflict) // an epoch not begun
	// Only the oldest parked message's copy is done: a later one would pass
	// it (its copy lost on the way), and a message not parked is never the
	// oldest parked.
	try("g", 2, 1, quarantine.ErrConflict)
	try("g", 3, 1, quarantine.ErrConflict)
	try("g", 99, 1, quarantine.ErrConflict)

	before := b.message(t, "g", 1)
	h := b.done(t, "g", 1, 1)
	require.Equal(t, quarantine.HoldRecord{
		Queue: b.queue, Group: "g", State: quarantine.StateDraining, Epoch: 1, Parked: 2, Cause: "boom",
		From: seq(1), Through: seq(3), Next: seq(2), HeldAt: drain.HeldAt, UpdatedAt: b.now,
	}, h)
	after := before
	after.Status, after.UpdatedAt = quarantine.StatusDone, b.now
	require.Equal(t, after, b.message(t, "g", 1))
	try("g", 1, 1, quarantine.ErrConflict) // done already: 2 is the oldest parked now

	b.discard(t, "g", 2)
	try("g", 2, 1, quarantine.ErrConflict) // discarded: 3 is

	// Held again: no Done while held, though the message is parked.
	b.park(t, "g", true, "copy failed")
	try("g", 3, 1, quarantine.ErrConflict)
	// A redrive (epoch 2) begun while a copy of epoch 1 ran: the copy ran
	// in its place all the same, and its Done lands, so the epoch-2 copy
	// will be dropped as done rather than run the message a second time.
	h = b.redrive(t, "g")
	require.Equal(t, int64(2), h.Epoch)
	try("g", 3, 3, quarantine.ErrConflict)
	h = b.done(t, "g", 3, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	try("g", 3, 2, quarantine.ErrNoHold) // released
}

// testNext follows a hold's Next, the only message whose copy may be
// done, through parks (one older than Next among them), discards of it
// and of others, a re-hold and dones, past more done and discarded
// messages than one read of the store's may bring.
func testNext(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	next := func(h quarantine.HoldRecord) string { t.Helper(); return quarantine.SeqNumber(h.Next) }
	require.Equal(t, "5", next(b.park(t, "g", true, "boom", 5, 7, 9)))
	require.Equal(t, "5", next(b.park(t, "g", false, "", 11)), "a later message leaves Next")
	require.Equal(t, "3", next(b.park(t, "g", false, "", 3)), "an older one, parked late (a redelivery), is next")
	require.Equal(t, "3", next(b.discard(t, "g", 9)), "a discard of another leaves Next")
	require.Equal(t, "5", next(b.discard(t, "g", 3)), "a discard of Next moves it on")

	epoch := b.redrive(t, "g").Epoch
	before := b.snapshot(t, "g")
	_, err := b.store.Done(b.ctx, b.queue, "g", seq(7), epoch, b.tick())
	b.refused(t, err, quarantine.ErrConflict, before, "g")
	require.Equal(t, "7", next(b.done(t, "g", 5, epoch)))
	require.Equal(t, "7", next(b.park(t, "g", true, "copy failed again")), "a re-hold leaves Next")
	epoch = b.redrive(t, "g").Epoch
	require.Equal(t, "11", next(b.done(t, "g", 7, epoch)), "past the discarded 9")
	require.Equal(t, "11", next(b.park(t, "g", false, "", 13)))
	require.Equal(t, "13", next(b.done(t, "g", 11, epoch)))
	h := b.done(t, "g", 13, epoch)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Empty(t, h.Next, "a released hold names nothing next")
	require.Equal(t, "20", next(b.park(t, "g", true, "again", 20, 21)), "a new hold starts afresh")

	// Many messages done or discarded between Next and the next one parked.
	b.park(t, "many", true, "boom", 1)
	for n := 2; n <= 12; n++ {
		b.park(t, "many", false, "", n)
	}
	for n := 2; n <= 11; n++ {
		b.discard(t, "many", n)
	}
	epoch = b.redrive(t, "many").Epoch
	require.Equal(t, "12", next(b.done(t, "many", 1, epoch)))
}

func testRelease(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2, 3)
	h := b.discard(t, "g", 1)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(2), h.Parked)
	b.redrive(t, "g")
	h = b.done(t, "g", 2, 1)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(1), h.Parked)
	h = b.done(t, "g", 3, 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
	require.Equal(t, b.now, h.UpdatedAt)
	require.Equal(t, map[string]quarantine.Status{"1": quarantine.StatusDiscarded, "2": quarantine.StatusDone, "3": quarantine.StatusDone},
		statuses(b.messages(t, "g", "")))

	// From held, by discards alone.
	b.park(t, "h", true, "boom", 1, 2)
	h = b.discard(t, "h", 2)
	require.Equal(t, quarantine.StateHeld, h.State)
	h = b.discard(t, "h", 1)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)

	holds, err := b.store.Holds(b.ctx, b.queue)
	require.NoError(t, err)
	require.Empty(t, holds)
}

func testBeginRedrive(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	before := b.snapshot(t, groups...)
	_, err := b.store.BeginRedrive(b.ctx, b.queue, "nobody", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)

	held := b.park(t, "g", true, "boom", 1, 2)
	h := b.redrive(t, "g")
	want := held
	want.State, want.Epoch, want.UpdatedAt = quarantine.StateDraining, 1, b.now
	require.Equal(t, want, h)

	// Draining: a new epoch again.
	h = b.redrive(t, "g")
	want.Epoch, want.UpdatedAt = 2, b.now
	require.Equal(t, want, h)

	b.discard(t, "g", 1)
	released := b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateReleased, released.State)
	before = b.snapshot(t, groups...)
	_, err = b.store.BeginRedrive(b.ctx, b.queue, "g", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)

	// A park of nothing new after the release holds nothing: still no
	// hold to redrive.
	_, err = b.store.Park(b.ctx, b.queue, "g", nil, true, "copy failed after the release", b.tick())
	require.NoError(t, err)
	_, err = b.store.BeginRedrive(b.ctx, b.queue, "g", b.tick())
	b.refused(t, err, quarantine.ErrNoHold, before, groups...)
}

func testDiscard(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	groups := []string{"g", "nobody"}
	b.park(t, "g", true, "boom", 1, 2, 3, 4)

	try := func(group string, n int, want error) {
		t.Helper()
		before := b.snapshot(t, groups...)
		_, err := b.store.Discard(b.ctx, b.queue, group, seq(n), b.tick())
		b.refused(t, err, want, before, groups...)
	}
	try("nobody", 1, quarantine.ErrNoHold)
	try("g", 99, quarantine.ErrNotParked)

	before := b.message(t, "g", 1)
	h := b.discard(t, "g", 1)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(3), h.Parked)
	require.Equal(t, b.now, h.UpdatedAt)
	after := before
	after.Status, after.UpdatedAt = quarantine.StatusDiscarded, b.now
	require.Equal(t, after, b.message(t, "g", 1))
	try("g", 1, quarantine.ErrNotParked)

	// Draining, under any epoch.
	b.redrive(t, "g")
	b.redrive(t, "g")
	h = b.discard(t, "g", 2)
	require.Equal(t, quarantine.StateDraining, h.State)
	require.Equal(t, int64(2), h.Epoch)
	b.done(t, "g", 3, 2)
	try("g", 3, quarantine.ErrNotParked) // done
	h = b.discard(t, "g", 4)
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Equal(t, int64(2), h.Epoch)
	try("g", 4, quarantine.ErrNoHold)
}

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

func testParkInvalid(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	bad := func(n int, sequence string) quarantine.Parked {
		p := item(n)
		p.Sequence = sequence
		return p
	}
	other := item(2)
	other.Group = "other"
	cases := map[string]struct {
		queue, group string
		items        []quarantine.Parked
	}{
		"no queue":                   {"", "g", items(1)},
		"no group":                   {b.queue, "", items(1)},
		"a sequence number":          {b.queue, "g", []quarantine.Parked{bad(1, "1")}},
		"an empty sequence":          {b.queue, "g", []quarantine.Parked{bad(1, "")}},
		"41 digits":                  {b.queue, "g", []quarantine.Parked{bad(1, "0"+seq(1))}},
		"not digits":                 {b.queue, "g", []quarantine.Parked{bad(1, seq(1)[:39]+"a")}},
		"out of order":               {b.queue, "g", items(2, 1)},
		"twice":                      {b.queue, "g", items(1, 1)},
		"a message of another group": {b.queue, "g", []quarantine.Parked{item(1), other}},
	}
	for name, c := range cases {
		_, err := b.store.Park(b.ctx, c.queue, c.group, c.items, true, "boom", b.tick())
		require.Error(t, err, name)
		for _, sentinel := range []error{quarantine.ErrConflict, quarantine.ErrNoHold, quarantine.ErrNotParked} {
			require.NotErrorIs(t, err, sentinel, name)
		}
		_, err = b.store.Hold(b.ctx, b.queue, "g")
		require.ErrorIs(t, err, quarantine.ErrNoHold, "%s: an invalid park wrote a hold", name)
		require.Empty(t, b.messages(t, "g", ""), name)
	}
	b.park(t, "g", true, "boom", 1)
}

func testCancelled(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2)
	b.redrive(t, "g")
	groups := []string{"g", "new"}
	before := b.snapshot(t, groups...)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	now := b.tick()
	calls := map[string]func() error{
		"Park": func() error {
			_, err := b.store.Park(ctx, b.queue, "new", items(1), true, "boom", now)
			return err
		},
		"ParkMore": func() error {
			_, err := b.store.Park(ctx, b.queue, "g", items(3), false, "", now)
			return err
		},
		"Done": func() error { _, err := b.store.Done(ctx, b.queue, "g", seq(1), 1, now); return err },
		"Discard": func() error {
			_, err := b.store.Discard(ctx, b.queue, "g", seq(2), now)
			return err
		},
		"BeginRedrive": func() error { _, err := b.store.BeginRedrive(ctx, b.queue, "g", now); return err },
		"Hold":         func() error { _, err := b.store.Hold(ctx, b.queue, "g"); return err },
		"Messages": func() error {
			_, err := b.store.Messages(ctx, b.queue, "g", "", "", 0)
			return err
		},
		"Holds": func() error { _, err := b.store.Holds(ctx, b.queue); return err },
		"Read": func() error {
			_, _, err := b.store.Read(ctx, b.queue, []string{"g"}, []quarantine.ItemKey{{Group: "g", Sequence: seq(1)}})
			return err
		},
	}
	for name, call := range calls {
		require.ErrorIs(t, call(), context.Canceled, name)
	}
	require.Equal(t, before, b.snapshot(t, groups...), "a cancelled call wrote")
}

func testIsolation(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	other := &bundle{store: b.store, ctx: b.ctx, queue: "other-" + b.queue, now: b.now}
	// Groups whose names nest or hold separators.
	for _, g := range []string{"a", "a#b", "a/b", "ab"} {
		b.park(t, g, true, "boom "+g, 1)
	}
	b.park(t, "a", false, "", 2)
	require.Equal(t, []string{"1", "2"}, sequences(b.messages(t, "a", "")))
	require.Equal(t, []string{"1"}, sequences(b.messages(t, "a#b", "")))
	require.Equal(t, "boom a#b", b.hold(t, "a#b").Cause)

	// The same group in another queue is another group.
	_, err := other.store.Hold(b.ctx, other.queue, "a")
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	_, err = other.store.BeginRedrive(b.ctx, other.queue, "a", b.tick())
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	_, err = other.store.Discard(b.ctx, other.queue, "a", seq(1), b.tick())
	require.ErrorIs(t, err, quarantine.ErrNoHold)
	require.Empty(t, other.messages(t, "a", ""))
	h := other.park(t, "a", true, "elsewhere", 5)
	require.Equal(t, int64(1), h.Parked)
	require.Equal(t, int64(2), b.hold(t, "a").Parked)
	b.redrive(t, "a")
	require.Equal(t, int64(0), other.hold(t, "a").Epoch)
	require.Equal(t, quarantine.StateHeld, other.hold(t, "a").State)
	hs, err := b.store.Holds(b.ctx, other.queue)
	require.NoError(t, err)
	require.Equal(t, []quarantine.HoldRecord{other.hold(t, "a")}, hs)
}

// testConcurrentParks parks overlapping windows of one group at once:
// each message is counted once, whichever park wrote it.
func testConcurrentParks(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	now := b.tick()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for w := range 5 {
		wg.Go(func() {
			ns := make([]int, 10)
			for i := range ns {
				ns[i] = w*5 + i + 1 // 1-10, 6-15, ..., 21-30
			}
			_, errs[w] = b.store.Park(b.ctx, b.queue, "g", items(ns...), w == 0, "boom", now)
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "park %d", w)
	}
	h := b.hold(t, "g")
	require.Equal(t, int64(30), h.Parked)
	require.Equal(t, [2]string{seq(1), seq(30)}, [2]string{h.From, h.Through})
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Len(t, b.messages(t, "g", quarantine.StatusParked), 30)
	b.requireCounted(t, "g")
}

// testConcurrentUnparks finishes every parked message of a draining
// group at once (the oldest done, the others discarded): exactly one call
// releases the hold, and the hold's version condition keeps each write's
// Next from another's.
func testConcurrentUnparks(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	b.park(t, "g", true, "boom", 1, 2, 3, 4, 5, 6)
	epoch := b.redrive(t, "g").Epoch
	now := b.tick()
	var wg sync.WaitGroup
	got := make([]quarantine.HoldRecord, 6)
	errs := make([]error, 6)
	for i := range 6 {
		wg.Go(func() {
			if i == 0 {
				got[i], errs[i] = b.store.Done(b.ctx, b.queue, "g", seq(i+1), epoch, now)
			} else {
				got[i], errs[i] = b.store.Discard(b.ctx, b.queue, "g", seq(i+1), now)
			}
		})
	}
	wg.Wait()
	var released int
	var counts []int64
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
		if got[i].State == quarantine.StateReleased {
			released++
		}
		counts = append(counts, got[i].Parked)
		require.Equal(t, got[i].Parked > 0, got[i].Next != "", "call %d: %+v", i, got[i])
	}
	require.Equal(t, 1, released, "one call releases the hold")
	require.ElementsMatch(t, []int64{0, 1, 2, 3, 4, 5}, counts, "each call took one message off the count")
	h := b.hold(t, "g")
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
	require.Equal(t, map[string]quarantine.Status{
		"1": quarantine.StatusDone, "2": quarantine.StatusDiscarded, "3": quarantine.StatusDiscarded,
		"4": quarantine.StatusDiscarded, "5": quarantine.StatusDiscarded, "6": quarantine.StatusDiscarded,
	}, statuses(b.messages(t, "g", "")))
}
