//go:build integration

package jobs_test

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// statements counts the statements a pool sends (the driver's Trace):
// the round trips of a store's call, each statement being one.
type statements struct{ n atomic.Int64 }

func (c *statements) trace(context.Context, string) { c.n.Add(1) }

// take returns the count since the last take.
func (c *statements) take() int64 { return c.n.Swap(0) }

// pgBundle is a store on a new database at the job store's schema, with a
// clock, and a counter of the statements the store's pool sends.
type pgBundle struct {
	db    *sql.DB // the store's pool, counted
	raw   *sql.DB // the test's own, not counted
	store *jobs.PostgresStore
	clock *jobstest.Clock
	count *statements
}

func setupPostgres(t testing.TB) *pgBundle {
	t.Helper()
	b := &pgBundle{clock: jobstest.NewClock(jobstest.Start), count: &statements{}}
	cfg := pgtest.Config(t)
	cfg.Trace = b.count.trace
	b.db = sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = b.db.Close() })
	b.db.SetMaxOpenConns(4)
	cfg.Trace = nil
	b.raw = sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = b.raw.Close() })
	b.raw.SetMaxOpenConns(4)
	require.NoError(t, jobs.MigratePostgres(t.Context(), b.db))
	b.store = newPostgresStore(t, b.db, jobs.Config{Now: b.clock.Now})
	b.count.take()
	return b
}

// running creates job id and claims it for attempt-a.
func (b *pgBundle) running(t *testing.T, id string) jobs.Job {
	t.Helper()
	_, err := b.store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)
	j, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	return j
}

func (b *pgBundle) accept(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	return b.store.Accept(ctx, jobs.AcceptRequest{JobID: j.ID, AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
		Result:   jobs.Result{Key: "candidates/" + j.ID + "/g0000000001/attempt-a.json", SHA256: strings.Repeat("ab", 32), Size: 7},
		Progress: 3})
}

// outboxRow is one row of job_outbox, decoded.
type outboxRow struct {
	version   int64
	image     jobs.Job
	prev      *jobs.Job // nil: NULL
	createdAt int64     // epoch ms
}

func (b *pgBundle) outbox(t *testing.T, id string) []outboxRow {
	t.Helper()
	rows, err := b.raw.QueryContext(t.Context(), `SELECT version, image, prev_image, created_at FROM job_outbox WHERE job_id = $1 ORDER BY version`, id)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		var img, prev []byte
		require.NoError(t, rows.Scan(&r.version, &img, &prev, &r.createdAt))
		r.image, err = jobitem.FromPostgresImage(img)
		require.NoError(t, err)
		if prev != nil {
			p, err := jobitem.FromPostgresImage(prev)
			require.NoError(t, err)
			r.prev = &p
		}
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// competitor is transaction A: on a connection of its own, it bumps the
// job's version as a competing transition would, and holds the row's lock
// until it commits or rolls back.
type competitor struct {
	tx  *sql.Tx
	pid int
}

func compete(t *testing.T, db *sql.DB, id string) *competitor {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	c := &competitor{tx: tx}
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&c.pid))
	res, err := tx.ExecContext(t.Context(), `UPDATE jobs SET version = version + 1 WHERE job_id = $1`, id)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	return c
}

// waitBlockedBehind returns once a backend waits on a lock that pid holds
// (pg_blocking_pids) and pg_stat_activity says it waits on a Lock: the
// store's statement, blocked on the row A updated. pg_stat_activity's
// rows are a snapshot taken before pg_blocking_pids runs, so a backend
// that already waits may show no wait yet (NULL) or its earlier one: such
// a row is asked again, not taken for the answer.
func waitBlockedBehind(t *testing.T, db *sql.DB, pid int, done <-chan struct{}) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		var waitType sql.NullString
		err := db.QueryRowContext(t.Context(), `SELECT wait_event_type FROM pg_stat_activity
			WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waitType)
		if err == nil && waitType.String == "Lock" {
			return
		}
		if err != nil {
			require.ErrorIs(t, err, sql.ErrNoRows)
		}
		select {
		case <-done:
			t.Fatal("the store's write returned before it was seen blocked behind transaction A")
		case <-t.Context().Done():
			t.Fatal("no backend blocked behind transaction A")
		case <-tick.C:
		}
	}
}

type outcome struct {
	job jobs.Job
	err error
}

// acceptBehind starts the store's accept of j in a goroutine and returns
// once it is blocked behind c.
func (b *pgBundle) acceptBehind(t *testing.T, c *competitor, j jobs.Job) <-chan outcome {
	t.Helper()
	res := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		got, err := b.accept(t.Context(), j)
		res <- outcome{got, err}
	}()
	waitBlockedBehind(t, b.raw, c.pid, done)
	return res
}

// TestPostgresReadCommittedRechecksTheBlockedWrite is the fence on
// PostgreSQL: an UPDATE that waited for a competing write re-evaluates its
// WHERE on the row that write committed. Transaction A bumps the job's
// version and holds the row; the store's accept of the version A replaced
// is seen blocked behind it; A commits; the accept is refused as stale,
// and wrote nothing: the row is A's, and no outbox row joined.
func TestPostgresReadCommittedRechecksTheBlockedWrite(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	j := b.running(t, "job-42")
	a := compete(t, b.raw, j.ID)
	b.count.take()
	res := b.acceptBehind(t, a, j)
	require.NoError(t, a.tx.Commit())
	got := <-res
	// The first statement's UPDATE refused A's row; its snapshot, taken
	// before A committed, still showed the row the guard expects: a second
	// statement saw A's row and decide called the accept stale.
	require.Equal(t, int64(2), b.count.take(), "statements of the accept")
	var stale *jobs.StaleError
	require.ErrorAs(t, got.err, &stale)
	require.Equal(t, &jobs.StaleError{Generation: 1, Version: j.Version + 1, Status: jobs.StatusRunning}, stale)
	after, err := b.store.Get(t.Context(), j.ID)
	require.NoError(t, err)
	want := j
	want.Version++
	require.Equal(t, want, after, "A's row, and nothing of the accept")
	rows := b.outbox(t, j.ID)
	require.Len(t, rows, 2, "the create's and the claim's rows only")
	require.Equal(t, []int64{0, 1}, []int64{rows[0].version, rows[1].version})
}

// TestPostgresBlockedWriteLandsWhenTheCompetitorRollsBack: the same, but A
// rolls back: the row A held is the one the accept expected, and the
// accept lands, with its outbox row.
func TestPostgresBlockedWriteLandsWhenTheCompetitorRollsBack(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	j := b.running(t, "job-42")
	a := compete(t, b.raw, j.ID)
	b.count.take()
	res := b.acceptBehind(t, a, j)
	require.NoError(t, a.tx.Rollback())
	got := <-res
	require.NoError(t, got.err)
	require.Equal(t, int64(1), b.count.take(), "statements of the accept")
	require.Equal(t, jobs.StatusCompleted, got.job.Status)
	require.Equal(t, j.Version+1, got.job.Version)
	rows := b.outbox(t, j.ID)
	require.Len(t, rows, 3)
	require.Equal(t, j.Version+1, rows[2].version)
	require.Equal(t, got.job, rows[2].image)
	require.Equal(t, &j, rows[2].prev)
}

// TestPostgresEachTransitionWritesOneOutboxRow: every transition that
// lands writes exactly one job_outbox row, of its version, whose image is
// the job the call returned and whose prev_image is the job before it
// (NULL for the creation); a refused or recognised write adds none. It
// also counts the statements (round trips) of each call.
func TestPostgresEachTransitionWritesOneOutboxRow(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	ctx := t.Context()
	var trail []jobs.Job // the job after each landed transition
	step := func(what string, wantStatements int64, call func() (jobs.Job, error)) jobs.Job {
		t.Helper()
		j, err := call()
		require.NoError(t, err, what)
		require.Equal(t, wantStatements, b.count.take(), "%s: statements", what)
		trail = append(trail, j)
		return j
	}
	created := step("create", 1, func() (jobs.Job, error) {
		res, err := b.store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "intent-7", Tenant: "t-1",
			Spec: map[string]string{"source": "articles"}})
		return res.Job, err
	})
	claimed := step("claim from pending", 1, func() (jobs.Job, error) {
		return b.store.Claim(ctx, jobs.ClaimRequest{JobID: created.ID, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	})
	b.clock.Advance(time.Second)
	renewed := step("renew", 1, func() (jobs.Job, error) {
		return b.store.Renew(ctx, jobs.RenewRequest{JobID: claimed.ID, AttemptID: "attempt-a", Generation: 1, Version: claimed.Version,
			LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 2})
	})
	b.clock.Advance(2 * time.Minute)
	nudged := step("nudge", 1, func() (jobs.Job, error) {
		return b.store.Nudge(ctx, jobs.NudgeRequest{JobID: renewed.ID, Generation: 1, Version: renewed.Version, Reason: "stuck"})
	})
	taken := step("takeover", 2, func() (jobs.Job, error) {
		return b.store.Claim(ctx, jobs.ClaimRequest{JobID: nudged.ID, AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	})
	require.Equal(t, int64(2), taken.Generation)
	step("cancel of a running job", 2, func() (jobs.Job, error) {
		return b.store.Cancel(ctx, jobs.CancelRequest{JobID: taken.ID, Reason: "no longer wanted"})
	})

	// Refused and recognised writes: no row.
	_, err := b.store.Renew(ctx, jobs.RenewRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: 2, Version: taken.Version,
		LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration, "the cancel fenced generation 2")
	require.Equal(t, int64(1), b.count.take(), "a refusal: one statement")
	again, err := b.store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "intent-7", Tenant: "t-1",
		Spec: map[string]string{"source": "articles"}})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, int64(2), b.count.take(), "an intent's retry: the write and the read")
	_, err = b.store.Cancel(ctx, jobs.CancelRequest{JobID: "job-42"})
	require.NoError(t, err, "a cancelled job's cancel is success")

	rows := b.outbox(t, "job-42")
	require.Len(t, rows, len(trail))
	for v, r := range rows {
		require.Equal(t, int64(v), r.version)
		require.Equal(t, trail[v], r.image, "v%d: the image is the job the call returned", v)
		require.Equal(t, int64(v), r.image.Outbox.Version)
		// The relay takes the oldest jobs first by it: the store's clock at
		// the transition, never the database server's.
		require.Equal(t, trail[v].UpdatedAt.UnixMilli(), r.createdAt, "v%d: created_at is the store's now", v)
		if v == 0 {
			require.Nil(t, r.prev, "a creation has no prev_image")
			continue
		}
		require.NotNil(t, r.prev)
		require.Equal(t, trail[v-1], *r.prev, "v%d: prev_image is the job before", v)
	}
	// The form built in Go is the form the statement builds (to_jsonb of
	// the row), but for the NULL columns it leaves out and the generated
	// finished_key.
	for v, j := range trail {
		built, err := jobitem.EncodePostgresImage(j)
		require.NoError(t, err)
		var same bool
		require.NoError(t, b.raw.QueryRowContext(ctx, `SELECT jsonb_strip_nulls(image) - 'finished_key' = $1::text::jsonb
			FROM job_outbox WHERE job_id = 'job-42' AND version = $2`, string(built), v).Scan(&same))
		require.True(t, same, "v%d: EncodePostgresImage is the statement's image: %s", v, built)
	}
}

// TestPostgresAFencedWriteOfAnotherGenerationIsStale: the generation is in
// the WHERE as well as the version. A caller that names the current
// version and owner but another generation (a mix-up no honest holder
// makes: each version has one generation) is refused as stale, and
// nothing is written; with the generation left out of the condition its
// renewal would set the job's generation back.
func TestPostgresAFencedWriteOfAnotherGenerationIsStale(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	j := b.running(t, "job-42")
	b.clock.Advance(2 * time.Minute)
	j, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: j.ID, AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, int64(2), j.Generation, "the holder's own claim after its lease ended is a takeover")
	for _, g := range []int64{j.Generation - 1, j.Generation + 1} {
		_, err := b.store.Renew(t.Context(), jobs.RenewRequest{JobID: j.ID, AttemptID: "attempt-a", Generation: g, Version: j.Version,
			LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 1})
		require.ErrorIs(t, err, jobs.ErrStaleGeneration, "g%d", g)
		got, err := b.store.Get(t.Context(), j.ID)
		require.NoError(t, err)
		require.Equal(t, j, got, "g%d: nothing written", g)
	}
	require.Len(t, b.outbox(t, j.ID), int(j.Version)+1)
}
