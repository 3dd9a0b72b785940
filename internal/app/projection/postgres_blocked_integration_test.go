//go:build integration

package projection_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// holder is transaction A: it writes the projection's rows by hand and
// keeps their locks until it commits.
type holder struct {
	tx  *sql.Tx
	pid int   // its backend
	xid int64 // its transaction id, once it has written
}

func begin(t *testing.T, db *sql.DB) *holder {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	h := &holder{tx: tx}
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&h.pid))
	return h
}

func (h *holder) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	res, err := h.tx.ExecContext(t.Context(), query, args...)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "%s", query)
	require.NoError(t, h.tx.QueryRowContext(t.Context(), `SELECT pg_current_xact_id()::text::bigint`).Scan(&h.xid))
}

// blockedBy waits until a backend whose statement starts with prefix
// waits for a lock that backend pid holds, and returns it.
func blockedBy(ctx context.Context, t *testing.T, db *sql.DB, pid int, prefix string) int {
	t.Helper()
	var blocked int
	waitFor(ctx, t, "a statement "+prefix+"... to wait for backend "+strconv.Itoa(pid), func() bool {
		err := db.QueryRowContext(ctx, `
			SELECT pid FROM pg_stat_activity
			WHERE $1 = ANY (pg_blocking_pids(pid)) AND wait_event_type = 'Lock' AND starts_with(query, $2)`,
			pid, prefix).Scan(&blocked)
		if errors.Is(err, sql.ErrNoRows) {
			return false
		}
		require.NoError(t, err)
		return true
	})
	return blocked
}

// waiting is what a blocked backend waits for and holds: the transaction
// whose end it waits for (a lock on its id, not granted), the tables of
// its tuple locks (the row an UPDATE waits for), and which of job-42's
// rows (view, cursor) are locked, by it or by A: a probe cannot lock them
// at once.
type waiting struct {
	xid    int64
	tuples string
	locked []string
}

func waitingOf(ctx context.Context, t *testing.T, db *sql.DB, pid int, tenant string) waiting {
	t.Helper()
	var w waiting
	require.NoError(t, db.QueryRowContext(ctx, `
		SELECT coalesce(string_agg(relation::regclass::text, ',') FILTER (WHERE granted AND locktype = 'tuple'), ''),
			coalesce(max(transactionid::text::bigint) FILTER (WHERE NOT granted AND locktype = 'transactionid'), 0)
		FROM pg_locks WHERE pid = $1`, pid).Scan(&w.tuples, &w.xid))
	for name, probe := range map[string]string{
		"view":   `SELECT FROM projection_views WHERE job_id = 'job-42' AND $1 <> '' FOR UPDATE NOWAIT`,
		"cursor": `SELECT FROM projection_cursors WHERE job_id = 'job-42' AND tenant = $1 FOR UPDATE NOWAIT`,
	} {
		err := db.QueryRowContext(ctx, probe, tenant).Scan()
		var pg interface{ SQLState() string }
		if errors.As(err, &pg) && pg.SQLState() == "55P03" { // lock_not_available
			w.locked = append(w.locked, name)
			continue
		}
		require.NoError(t, err, name)
	}
	slices.Sort(w.locked)
	return w
}

// startAtV1 applies job-42's first event (which adds nothing: its view
// alone) and writes what the tests' transaction A then holds: the job's
// cursor at version 1, and the row of the tenant's totals in the job's
// shard, at 0.
func startAtV1(ctx context.Context, t *testing.T, db *sql.DB, store projection.Store, e *outbox.Event) {
	t.Helper()
	res, err := store.Apply(ctx, projection.ViewOfEvent(e), e.Delta)
	require.NoError(t, err)
	require.Equal(t, projection.Skipped, res.Outcome)
	_, err = db.ExecContext(ctx, `INSERT INTO projection_cursors (tenant, job_id, version, progress, status) VALUES ($1, $2, 1, 0, 'running')`,
		e.Tenant, e.JobID)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO projection_totals (tenant, shard, processed, completed) VALUES ($1, $2, 0, 0)`,
		e.Tenant, projection.ShardOf(e.JobID, projection.DefaultShards))
	require.NoError(t, err)
}

// applyPrefix is how Apply's statement starts.
const applyPrefix = "WITH p AS ("

type applied struct {
	res projection.Result
	err error
}

// TestPostgresApplyWaitsForALockedRowAndChecksAgain blocks the store's
// Apply behind transaction A, which holds a row the statement writes,
// sees it wait in pg_locks and pg_stat_activity, commits A, and requires
// the answer the rules give on what A committed, not on what the
// statement's snapshot held when it began: Read Committed's re-check of
// an UPDATE's (and an ON CONFLICT DO UPDATE's) condition on the newest
// version of the row it waited for.
func TestPostgresApplyWaitsForALockedRowAndChecksAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// a writes by hand what A commits, on the rows of evs (job-42) and
		// job-43, after evs[0] was applied.
		a func(t *testing.T, a *holder, tenant string)
		// waiting is what Apply's backend holds while it waits.
		waiting waiting
		want    projection.Result
		// wantCursor is job-42's cursor after; wantProcessed the tenant's
		// processed total.
		wantCursor    int64
		wantProcessed int64
	}{{
		// A counts another job of the tenant (job-43's first 7 items):
		// it holds the totals' row. Apply moves job-42's cursor, waits for
		// the totals, then adds its delta to what A committed: no
		// addition is lost.
		name: "the totals",
		a: func(t *testing.T, a *holder, tenant string) {
			a.exec(t, `INSERT INTO projection_cursors (tenant, job_id, version, progress, status) VALUES ($1, 'job-43', 1, 7, 'running')`, tenant)
			a.exec(t, `UPDATE projection_totals SET processed = processed + 7 WHERE tenant = $1`, tenant)
		},
		// It waits in the totals' unique index check (which waits for A's
		// transaction without a tuple lock), having locked job-42's cursor
		// and view: the totals come last.
		waiting:       waiting{locked: []string{"cursor", "view"}},
		want:          projection.Result{Outcome: projection.Applied, ViewUpdated: true, Cursor: 2},
		wantCursor:    2,
		wantProcessed: 10 + 7,
	}, {
		// A recovers job-42 to its version 3 (progress 30): it holds the
		// cursor's row. Apply of version 2 waits for it, then finds the
		// cursor past its version: it counts nothing (Older), though its
		// snapshot held the cursor at version 1, which version 2 follows.
		name: "the cursor",
		a: func(t *testing.T, a *holder, tenant string) {
			a.exec(t, `UPDATE projection_cursors SET version = 3, progress = 30 WHERE tenant = $1 AND job_id = 'job-42'`, tenant)
			a.exec(t, `UPDATE projection_totals SET processed = processed + 30 WHERE tenant = $1`, tenant)
		},
		// Its UPDATE of the cursor waits for A holding the row's tuple
		// lock, and has not locked the view: the cursor comes first. (The
		// cursor is locked by A.)
		waiting:       waiting{tuples: "projection_cursors", locked: []string{"cursor"}},
		want:          projection.Result{Outcome: projection.Older, ViewUpdated: true, Cursor: 3},
		wantCursor:    3,
		wantProcessed: 30,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			db := setupPostgres(t)
			store := newPostgresStore(t, db)
			const tenant = "t-1"
			evs := projectiontest.Lifecycle("job-42", tenant)
			startAtV1(ctx, t, db, store, &evs[0])

			a := begin(t, db)
			tc.a(t, a, tenant)
			done := make(chan applied, 1)
			go func() {
				res, err := store.Apply(ctx, projection.ViewOfEvent(&evs[1]), evs[1].Delta)
				done <- applied{res, err}
			}()
			blocked := blockedBy(ctx, t, db, a.pid, applyPrefix)
			w := waitingOf(ctx, t, db, blocked, tenant)
			t.Logf("Apply's backend %d waits for A (backend %d, xid %d): %+v", blocked, a.pid, a.xid, w)
			want := tc.waiting
			want.xid = a.xid
			require.Equal(t, want, w)
			select {
			case got := <-done:
				t.Fatalf("Apply answered while A held the row: %+v", got)
			default:
			}
			require.NoError(t, a.tx.Commit())

			got := <-done
			require.NoError(t, got.err)
			require.Equal(t, tc.want, got.res)
			c, err := store.Cursor(ctx, tenant, "job-42")
			require.NoError(t, err)
			require.Equal(t, tc.wantCursor, c.Version)
			tot, err := store.Totals(ctx, tenant)
			require.NoError(t, err)
			require.Equal(t, projection.Totals{Tenant: tenant, Processed: tc.wantProcessed}, tot)
			v, err := store.View(ctx, "job-42")
			require.NoError(t, err)
			require.Equal(t, projection.ViewOfEvent(&evs[1]), v, "the view waits for no cursor")
		})
	}
}

// TestPostgresApplyRunsAgainAfterADeadlock: a writer that takes the rows
// in another order than the store's statement (A: the totals, then the
// cursor) deadlocks with it, and PostgreSQL aborts the statement, which
// closes the cycle. Apply runs it again and answers on what A committed.
// B holds the view so that the statement, having locked the cursor, waits
// until A waits for that cursor; A never looks for a deadlock itself
// (deadlock_timeout 1h in its session, 20 ms in the store's), so the
// statement is the one aborted. Without the retry Apply fails with the
// deadlock (SQLSTATE 40P01).
func TestPostgresApplyRunsAgainAfterADeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := pgtest.Config(t)
	admin := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = admin.Close() })
	admin.SetMaxOpenConns(4) // A, B, and the probes
	require.NoError(t, projection.MigratePostgres(ctx, admin))
	cfg.Params = map[string]string{"deadlock_timeout": "20ms"} // the store's sessions only
	db := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(2)
	store := newPostgresStore(t, db)
	const tenant = "t-1"
	evs := projectiontest.Lifecycle("job-42", tenant)
	startAtV1(ctx, t, admin, store, &evs[0])

	// A recovers job-42 to its version 3 by hand, the totals first.
	a := begin(t, admin)
	_, err := a.tx.ExecContext(ctx, `SET LOCAL deadlock_timeout = '1h'`)
	require.NoError(t, err)
	a.exec(t, `UPDATE projection_totals SET processed = processed + 30 WHERE tenant = $1`, tenant)
	b := begin(t, admin)
	b.exec(t, `UPDATE projection_views SET progress = progress WHERE job_id = 'job-42'`)

	done := make(chan applied, 1)
	go func() {
		res, err := store.Apply(ctx, projection.ViewOfEvent(&evs[1]), evs[1].Delta)
		done <- applied{res, err}
	}()
	statement := blockedBy(ctx, t, admin, b.pid, applyPrefix)
	movedByA := make(chan error, 1)
	go func() {
		_, err := a.tx.ExecContext(ctx, `UPDATE projection_cursors SET version = 3, progress = 30 WHERE tenant = $1 AND job_id = 'job-42'`, tenant)
		movedByA <- err
	}()
	blockedBy(ctx, t, admin, statement, "UPDATE projection_cursors")
	require.NoError(t, b.tx.Commit()) // the statement goes on to the totals, which A holds
	require.NoError(t, <-movedByA, "A was not the one aborted")
	require.NoError(t, a.tx.Commit())

	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, projection.Result{Outcome: projection.Older, ViewUpdated: true, Cursor: 3}, got.res)
	tot, err := store.Totals(ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: tenant, Processed: 30}, tot)
}
