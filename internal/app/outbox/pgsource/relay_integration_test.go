//go:build integration

package pgsource_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Twenty jobs of ten rows, through passes of 7 jobs and 3 rows of each:
// every message once, each job in version order, the table left empty.
func TestDrainPublishesEachJobInVersionOrder(t *testing.T) {
	t.Parallel()
	b, ids := setupJobs(t, 20, 9)
	rep, err := b.relay(t, pgsource.Config{Jobs: 7, RowsPerJob: 3}).Drain(t.Context())
	require.NoError(t, err)
	requireExactly(t, b.sink, want(ids, 9))
	require.Equal(t, 200, rep.Rows)
	require.Equal(t, 200, rep.Messages)
	require.Equal(t, pgsource.StopEmpty, rep.Stop)
	require.Zero(t, b.rows(t))
	// Groups of 7, 7 and 6 jobs, each in 4 passes of 3, 3, 3 and 1 rows
	// per job, each pass one round per row.
	require.Equal(t, 12, rep.Passes)
	require.Equal(t, 3*(3+3+3+1), b.sink.rounds)
}

// A nudge's row is two messages, its command then its event of the same
// version; the row is deleted only when both were acknowledged.
func TestANudgesRowGoesOutAsItsCommandThenItsEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.create(t, "job-1", 0)
	j, err := b.store.Nudge(ctx, jobs.NudgeRequest{JobID: "job-1", Reason: "stuck"})
	require.NoError(t, err)
	require.EqualValues(t, 1, j.Version)
	b.sink.refuse = func(m outbox.Message) error {
		if m.Kind == outbox.KindEvent {
			return errors.New("events queue down")
		}
		return nil
	}
	rep, err := b.relay(t, pgsource.Config{}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, pgsource.StopEmpty, rep.Stop)
	require.Equal(t, 1, rep.Rows, "v0 published; v1's event refused, so v1 stays")
	require.Equal(t, 1, b.rows(t))
	b.sink.refuse = nil
	_, err = b.relay(t, pgsource.Config{}).Drain(bounded(t))
	require.NoError(t, err)
	var kinds []string
	for _, m := range b.sink.acked {
		kinds = append(kinds, m.OutboxID+" "+m.Type)
	}
	require.Equal(t, []string{"job-1/v0 job.run", "job-1/v1 job.run", "job-1/v1 job.run", "job-1/v1 job.requeued"}, kinds,
		"v1's command again with its event: its row was not deleted")
	require.Zero(t, b.rows(t))
}

// A relay that dies between publishing and deleting (here its context is
// cancelled after a round the sink acknowledged, so the delete and the
// commit fail) deletes nothing: the next Drain publishes the same
// messages again from each job's first row, never a later version first.
func TestACrashBetweenPublishAndDeleteRepublishesInOrder(t *testing.T) {
	t.Parallel()
	b, ids := setupJobs(t, 5, 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b.sink.after = func(context.Context, []outbox.Message) {
		if b.sink.rounds == 3 {
			cancel()
		}
	}
	_, err := b.relay(t, pgsource.Config{}).Drain(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 25, b.rows(t), "nothing deleted")
	require.Equal(t, 15, len(b.sink.acked), "three rounds of five jobs published")
	b.sink.after = nil
	b.awaitLocksReleased(t)
	rep, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	require.Equal(t, 25, rep.Rows)
	requireInOrder(t, b.sink, want(ids, 4))
	require.Equal(t, 40, len(b.sink.acked), "the 15 again, then the rest")
}

// The same with the relay's connection killed by the server after a round
// (as when a relay's host dies): its transaction is rolled back, its
// locks are released, and the next relay publishes from the first row.
func TestARelayWhoseConnectionDiesLosesNothing(t *testing.T) {
	t.Parallel()
	b, ids := setupJobs(t, 3, 3)
	b.sink.after = func(ctx context.Context, _ []outbox.Message) {
		if b.sink.rounds != 2 {
			return
		}
		_, err := b.db.ExecContext(context.WithoutCancel(ctx), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()`)
		require.NoError(t, err)
	}
	_, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.Error(t, err)
	require.Equal(t, 12, b.rows(t))
	b.sink.after = nil
	b.awaitLocksReleased(t)
	_, err = b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	requireInOrder(t, b.sink, want(ids, 3))
	require.Zero(t, b.rows(t))
}

// A sink that refuses one job's messages stops that job's lane, at the
// refused version, and no other job's: the others are published and
// deleted, the refused job's earlier rows too, and the Drain ends rather
// than retrying it. The next Drain goes on from the refused version.
func TestASinkFailureStopsOnlyItsJob(t *testing.T) {
	t.Parallel()
	b, ids := setupJobs(t, 4, 5)
	b.sink.refuse = func(m outbox.Message) error {
		if m.JobID == "job-002" && m.Version >= 3 {
			return errors.New("throttled")
		}
		return nil
	}
	rep, err := b.relay(t, pgsource.Config{RowsPerJob: 2}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, pgsource.StopEmpty, rep.Stop)
	require.Equal(t, 1, rep.Failed)
	require.Equal(t, 3*6+3, rep.Rows)
	require.Equal(t, 3, b.rows(t), "job-002's v3 to v5 wait")
	got := b.sink.byJob()
	require.Equal(t, []string{"job-002/v0", "job-002/v1", "job-002/v2"}, got["job-002"])
	b.sink.refuse = nil
	_, err = b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	requireExactly(t, b.sink, want(ids, 5))
}

// A job's v1 committed while a relay holds the job for its v0 (here, from
// inside the sink's round) is not deleted with v0 and goes out after it.
func TestARowCommittedWhileItsJobIsHeldGoesOutAfterTheHeldOnes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 0)
	var advanced error
	b.sink.after = func(ctx context.Context, msgs []outbox.Message) {
		if msgs[0].Version == 0 {
			advanced = b.tryAdvance(ctx, "job-1", 1) // not blocked: writers take no relay lock
		}
	}
	rep, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	require.NoError(t, advanced)
	require.Equal(t, 2, rep.Passes, "v1 in a pass of its own")
	requireExactly(t, b.sink, want([]string{"job-1"}, 1))
	require.Zero(t, b.rows(t))
}

// While relay A holds job-1 (its sink is in the middle of v0's round), a
// writer commits job-1's v1 and relay B drains: B must publish nothing of
// job-1, neither v0 nor the new, unlocked v1 (row-level SKIP LOCKED would
// hand it v1, before v0 was acknowledged), but does publish the other
// jobs. Then A goes on and publishes v1 after v0.
func TestASecondRelaySkipsAHeldJobAndItsNewRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 0)
	inRound, release := make(chan struct{}), make(chan struct{})
	var a recorder
	a.after = func(_ context.Context, msgs []outbox.Message) {
		if msgs[0].Version == 0 {
			close(inRound)
			<-release
		}
	}
	relayA := b.relay(t, pgsource.Config{Sink: &a})
	done := make(chan error)
	go func() {
		_, err := relayA.Drain(t.Context())
		done <- err
	}()
	<-inRound
	b.advance(t, "job-1", 1)
	b.create(t, "job-2", 0)
	rep, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	require.Positive(t, rep.Held)
	requireExactly(t, b.sink, want([]string{"job-2"}, 0))
	close(release)
	require.NoError(t, <-done)
	requireExactly(t, &a, want([]string{"job-1"}, 1))
	require.Zero(t, b.rows(t))
}

// A row whose transaction commits after later rows of other jobs were
// published (its writer was slow) is still published: the relay keeps no
// cursor, and a cursor on a sequence or on created_at would be past it.
func TestARowThatCommitsLateIsPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.create(t, "job-late", 0)
	// Take job-late's row out and write it again in a transaction held
	// open: an insert drawn first that commits last.
	var image []byte
	var created int64
	require.NoError(t, b.db.QueryRowContext(ctx, `DELETE FROM job_outbox WHERE job_id = 'job-late' RETURNING image, created_at`).Scan(&image, &created))
	slow, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = slow.Rollback() }()
	_, err = slow.ExecContext(ctx, `INSERT INTO job_outbox (job_id, version, image, created_at) VALUES ('job-late', 0, $1, $2)`, string(image), created)
	require.NoError(t, err)
	b.create(t, "job-early", 2)
	_, err = b.relay(t, pgsource.Config{}).Drain(ctx)
	require.NoError(t, err)
	require.NoError(t, slow.Commit())
	_, err = b.relay(t, pgsource.Config{}).Drain(ctx)
	require.NoError(t, err)
	requireExactly(t, b.sink, map[string][]string{"job-early": want([]string{"job-early"}, 2)["job-early"], "job-late": {"job-late/v0"}})
}

// An outbox row that cannot be decoded stops its job at that row (the
// rows before it are published) and no other job; it stays, and so do
// the job's later rows.
func TestAnUndecodableRowStopsOnlyItsJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 3)
	b.create(t, "job-2", 1)
	b.drainBroken(t, `UPDATE job_outbox SET image = '{"job_id": 7}' WHERE job_id = 'job-1' AND version = 2`)
	require.Equal(t, map[string][]string{"job-1": {"job-1/v0", "job-1/v1"}, "job-2": {"job-2/v0", "job-2/v1"}}, b.sink.byJob())
	require.Equal(t, 2, b.rows(t))
}

// A row whose image is another version's is refused, not published in the
// row's place.
func TestARowHoldingAnotherVersionsImageIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 2)
	b.drainBroken(t, `UPDATE job_outbox SET image = (SELECT image FROM job_outbox WHERE job_id = 'job-1' AND version = 2)
		WHERE job_id = 'job-1' AND version = 1`)
	require.Equal(t, map[string][]string{"job-1": {"job-1/v0"}}, b.sink.byJob())
}

// MaxRows bounds a Drain at exactly its value, even within a pass: 5 of 6
// rows leaves one, 6 leaves none.
func TestMaxRowsBoundsADrainExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ max, left int }{{5, 1}, {6, 0}, {7, 0}} {
		b, _ := setupJobs(t, 3, 1)
		// One row per job per pass: the bound falls in the second pass.
		rep, err := b.relay(t, pgsource.Config{MaxRows: tc.max, RowsPerJob: 1}).Drain(t.Context())
		require.NoError(t, err)
		require.Equal(t, 6-tc.left, rep.Rows, "MaxRows %d", tc.max)
		require.Equal(t, tc.left, b.rows(t), "MaxRows %d", tc.max)
		wantStop := pgsource.StopBound
		if tc.max > 6 {
			wantStop = pgsource.StopEmpty
		}
		require.Equal(t, wantStop, rep.Stop, "MaxRows %d", tc.max)
	}
}

// Drain starts no pass at or after its context's deadline minus Margin,
// and does start one just before.
func TestDrainStopsAtTheDeadlineMinusMargin(t *testing.T) {
	t.Parallel()
	now := time.Now().Add(time.Hour) // the relay's clock; the context's deadline is real
	const margin = 2 * time.Second
	for _, tc := range []struct {
		deadline time.Time
		rows     int
		stop     pgsource.Stop
	}{
		{now.Add(margin), 0, pgsource.StopDeadline},
		{now.Add(margin + time.Millisecond), 2, pgsource.StopEmpty},
	} {
		b := setup(t)
		b.create(t, "job-1", 1)
		ctx, cancel := context.WithDeadline(t.Context(), tc.deadline)
		rep, err := b.relay(t, pgsource.Config{Margin: margin, Now: func() time.Time { return now }}).Drain(ctx)
		cancel()
		require.NoError(t, err)
		require.Equal(t, tc.rows, rep.Rows)
		require.Equal(t, tc.stop, rep.Stop)
	}
}

// drainBroken changes the outbox with stmt, which breaks one job's rows,
// then drains under bounded: the Drain must fail that one job only and
// stop with StopEmpty (no job left that it could publish: the broken
// job's rows stay), not retry it until the deadline.
func (b *bundle) drainBroken(t *testing.T, stmt string) {
	t.Helper()
	_, err := b.db.ExecContext(t.Context(), stmt)
	require.NoError(t, err)
	rep, err := b.relay(t, pgsource.Config{}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, pgsource.StopEmpty, rep.Stop)
	require.Equal(t, 1, rep.Failed)
}

// bounded is a context whose deadline stops a Drain that would keep
// retrying a failed job within its run (it then stops at the deadline
// minus Margin, not on an empty outbox, and the test says so).
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), pgsource.DefaultMargin+10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A job's rows deleted by something that does not take the job's lock
// while a pass publishes them: the pass's delete finds fewer rows than it
// published, so it fails with ErrNotHeld and rolls back, and the row it
// still held (v1) is published again by the next Drain rather than
// silently dropped.
func TestAPassWhoseRowsAnotherDeletedFailsWithErrNotHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 1)
	b.sink.after = func(ctx context.Context, msgs []outbox.Message) {
		if msgs[0].Version == 0 {
			_, err := b.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM job_outbox WHERE job_id = 'job-1' AND version = 0`)
			require.NoError(t, err)
		}
	}
	_, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.ErrorIs(t, err, pgsource.ErrNotHeld)
	require.Equal(t, 1, b.rows(t), "v1 not deleted: the pass rolled back")
	b.sink.after = nil
	_, err = b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	require.Zero(t, b.rows(t))
	require.Equal(t, []string{"job-1/v0", "job-1/v1", "job-1/v1"}, b.sink.byJob()["job-1"])
}

// A row whose previous image is not an earlier version of its job (here
// its own version's) is refused, not published as a transition from it.
func TestARowHoldingALaterPreviousImageIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 2)
	b.drainBroken(t, `UPDATE job_outbox SET prev_image = image WHERE job_id = 'job-1' AND version = 1`)
	require.Equal(t, map[string][]string{"job-1": {"job-1/v0"}}, b.sink.byJob())
	require.Equal(t, 2, b.rows(t))
}

// A job that a pass locked but did not read because the read's limit
// (what MaxRows leaves) was reached is not a job whose rows were gone: it
// stays in the run, which publishes up to MaxRows. Here job-000's
// messages are refused; the first pass reads its two rows and job-001's
// first, so job-002 is locked and not read; the run must still publish
// job-001's second row and job-002's first (3 rows, its bound), not stop
// with job-002's rows left until the next trigger.
func TestAJobLockedButNotReadUnderTheBoundStaysInTheRun(t *testing.T) {
	t.Parallel()
	b, _ := setupJobs(t, 3, 1)
	b.sink.refuse = func(m outbox.Message) error {
		if m.JobID == "job-000" {
			return errors.New("throttled")
		}
		return nil
	}
	rep, err := b.relay(t, pgsource.Config{Jobs: 3, RowsPerJob: 2, MaxRows: 3}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, 3, rep.Rows)
	require.Equal(t, pgsource.StopBound, rep.Stop)
	require.Equal(t, map[string][]string{"job-001": {"job-001/v0", "job-001/v1"}, "job-002": {"job-002/v0"}}, b.sink.byJob())
}

// A nudge standing for exactly one commit (the bound: at least one) is a
// trigger: the relay drains for it.
func TestHandleDrainsForANudgeOfOneCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 0)
	event, err := json.Marshal(nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Now(), Commits: 1})
	require.NoError(t, err)
	rep, err := b.relay(t, pgsource.Config{}).Handle(t.Context(), event)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Rows)
	require.Zero(t, b.rows(t))
}
