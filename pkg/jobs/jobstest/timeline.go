package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// entry is the History entry a transition at now writes.
func entry(v int64, s jobs.Status, g int64, at time.Time, event string) jobs.Transition {
	return jobs.Transition{Version: v, Status: s, Generation: g, At: ms(at), Event: event}
}

// testHistoryOfAFullLife: create, claim, renew, a takeover after the lease
// ran out, accept; each write adds exactly its entry, and Describe reads
// them as what they were.
func testHistoryOfAFullLife(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	created := b.create(t, "job-42")
	id := created.ID
	want := []jobs.Transition{entry(0, jobs.StatusPending, 0, b.clock.Now(), jobs.MessageRun)}
	require.Equal(t, want, created.History, "creation writes version 0")

	b.clock.Advance(time.Second)
	c := b.claim(t, id, "attempt-a", time.Minute)
	want = append(want, entry(1, jobs.StatusRunning, 1, b.clock.Now(), jobs.EventStarted))
	require.Equal(t, want, c.History)

	b.clock.Advance(30 * time.Second)
	r, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: c.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 10})
	require.NoError(t, err)
	want = append(want, entry(2, jobs.StatusRunning, 1, b.clock.Now(), jobs.EventProgress))
	require.Equal(t, want, r.History)

	b.clock.Advance(2 * time.Minute) // the renewed lease runs out
	tk := b.claim(t, id, "attempt-b", time.Minute)
	want = append(want, entry(3, jobs.StatusRunning, 2, b.clock.Now(), jobs.EventStarted))
	require.Equal(t, want, tk.History)

	b.clock.Advance(time.Second)
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-b", Generation: 2, Version: tk.Version,
		Result: result(id, "attempt-b", 2), Progress: 20})
	require.NoError(t, err)
	want = append(want, entry(4, jobs.StatusCompleted, 2, b.clock.Now(), jobs.EventCompleted))
	require.Equal(t, want, done.History)
	require.Equal(t, want, b.get(t, id).History, "as read back")

	var said []string
	for _, s := range jobs.Describe(done.History) {
		said = append(said, s.String())
	}
	require.Equal(t, []string{"created", "claimed", "renewed", "lease ran out → taken over", "completed"}, said)
}

// testHistoryKeepsTheLastMaxHistory: the history holds every entry up to
// MaxHistory of them, creation included; the next transition drops the
// oldest, and the entries stay in order.
func testHistoryKeepsTheLastMaxHistory(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	j := b.create(t, "job-42")
	id := j.ID
	want := j.History
	b.clock.Advance(time.Second)
	j = b.claim(t, id, "attempt-a", 10*time.Minute)
	want = append(want, entry(1, jobs.StatusRunning, 1, b.clock.Now(), jobs.EventStarted))
	renew := func() {
		t.Helper()
		b.clock.Advance(time.Second)
		var err error
		j, err = b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: j.Version,
			LeaseUntil: b.clock.Now().Add(10 * time.Minute), Progress: j.Version})
		require.NoError(t, err)
		want = append(want, entry(j.Version, jobs.StatusRunning, 1, b.clock.Now(), jobs.EventProgress))
	}
	for j.Version < jobs.MaxHistory-1 {
		renew()
	}
	require.Len(t, want, jobs.MaxHistory)
	require.Equal(t, want, j.History, "MaxHistory entries: all of them, creation first")
	require.Equal(t, want, b.get(t, id).History)

	renew() // version MaxHistory: the first entry goes
	require.Equal(t, want[1:], j.History, "one more: the last MaxHistory")
	require.Equal(t, want[1:], b.get(t, id).History)

	renew()
	require.Equal(t, want[2:], j.History, "and the next")
	require.Equal(t, int64(2), j.History[0].Version)
	require.Equal(t, j.Version, j.History[len(j.History)-1].Version)
}

// testRefusedWritesAddNoEntry: a fenced write refused (a stale version,
// another attempt) and a claim refused by a live lease change nothing,
// the history included.
func testRefusedWritesAddNoEntry(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	id := b.create(t, "job-42").ID
	c := b.claim(t, id, "attempt-a", time.Minute)
	_, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: c.Version + 1,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-x", Generation: 1, Version: c.Version,
		Result: result(id, "attempt-x", 1)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	_, err = b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)
	require.Len(t, c.History, 2)
	b.requireUnchanged(t, c)
}

// LegacyJob is a pending job as an item written before the history
// existed holds it: no History. A store's own test writes it by hand
// (no store writes such an item), then calls RequireHistoryFromNextTransition.
func LegacyJob(id, tenant string, at time.Time) jobs.Job {
	return jobs.Job{ID: id, IntentID: "intent-" + id, Tenant: tenant, Status: jobs.StatusPending, Version: 3,
		Outbox:    jobs.Message{ID: jobs.OutboxID(id, 3), Type: jobs.MessageRun, Version: 3},
		CreatedAt: ms(at), UpdatedAt: ms(at)}
}

// RequireHistoryFromNextTransition checks that legacy (LegacyJob, written
// by hand into store's table) reads without a history, and gets one from
// its next transition on: a claim, then a renewal.
func RequireHistoryFromNextTransition(t *testing.T, store jobs.Store, clock *Clock, legacy jobs.Job) {
	t.Helper()
	ctx := t.Context()
	got, err := store.Get(ctx, legacy.ID)
	require.NoError(t, err)
	require.Empty(t, got.History, "an item without history reads without one")
	c, err := store.Claim(ctx, jobs.ClaimRequest{JobID: legacy.ID, AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	want := []jobs.Transition{entry(legacy.Version+1, jobs.StatusRunning, 1, clock.Now(), jobs.EventStarted)}
	require.Equal(t, want, c.History, "the claim writes the first entry")
	clock.Advance(time.Second)
	r, err := store.Renew(ctx, jobs.RenewRequest{JobID: legacy.ID, AttemptID: "attempt-a", Generation: 1, Version: c.Version,
		LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	want = append(want, entry(legacy.Version+2, jobs.StatusRunning, 1, clock.Now(), jobs.EventProgress))
	require.Equal(t, want, r.History)
	got, err = store.Get(ctx, legacy.ID)
	require.NoError(t, err)
	require.Equal(t, want, got.History, "as read back")
}
