package quarantinetest

import (
	"context"
	"crypto/md5" //nolint:gosec // the MD5 of a body, as SQS computes MD5OfBody
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
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
	{"ConcurrentParksAndDonesKeepTheOrder", testConcurrentParksAndDonesKeepTheOrder},
	{"KafkaRecordsRoundTrip", testKafkaRoundTrip},
	{"KafkaHoldKeepsItsPartition", testKafkaPartitions},
	{"KafkaParkRejectsInvalidArguments", testKafkaParkInvalid},
	{"FailedCountsTheAttemptsOfOneRecord", testFailedCounts},
	{"FailedNeverDependsOnAStaleRead", testFailedWithAStaleRead},
	{"FailedKeepsTheHoldAndEveryWriteKeepsTheCount", testFailedKeepsTheHold},
	{"FailedRejectsInvalidArgumentsAndCancellation", testFailedRefusals},
	{"ConcurrentFailuresCountEachOnce", testConcurrentFailures},
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
