//go:build integration

package projection_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// setupPostgres returns a database of the test's own, migrated, on a pool
// of at most 8 connections (the server is shared).
func setupPostgres(t testing.TB) *sql.DB {
	t.Helper()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(8)
	require.NoError(t, projection.MigratePostgres(t.Context(), db))
	return db
}

func newPostgresStore(t *testing.T, db *sql.DB) *projection.PostgresStore {
	t.Helper()
	store, err := projection.NewPostgresStore(projection.PostgresConfig{DB: db})
	require.NoError(t, err)
	return store
}

func TestPostgresStoreConformance(t *testing.T) {
	t.Parallel()
	db := setupPostgres(t)
	projectiontest.Run(t, func(t *testing.T) projection.Store { return newPostgresStore(t, db) })
}

// tracer counts the round trips a pool makes (pgwire's Config.Trace is
// called before each: a statement, a transaction's begin and commit). Once
// a statement whose text starts with the armed prefix has been sent, it
// runs the armed function before the next round trip: the driver reads a
// result whole before the call returns, so that is between a read and the
// write that depends on it.
type tracer struct {
	mu         sync.Mutex
	statements int
	prefix     string
	fn         func()
	due        bool // the armed statement has been sent; fn runs before the next
}

func (tr *tracer) trace(_ context.Context, query string) {
	tr.mu.Lock()
	tr.statements++
	fn := tr.fn
	if fn == nil {
		tr.mu.Unlock()
		return
	}
	if !tr.due {
		tr.due = strings.HasPrefix(query, tr.prefix)
		tr.mu.Unlock()
		return
	}
	tr.fn, tr.due = nil, false
	tr.mu.Unlock()
	fn()
}

// take returns the count since the last take.
func (tr *tracer) take() (statements int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	statements, tr.statements = tr.statements, 0
	return statements
}

func (tr *tracer) arm(prefix string, fn func()) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.prefix, tr.fn, tr.due = prefix, fn, false
}

// tracedPostgres returns a migrated database of the test's own on a pool
// of one connection that tr traces, and a second, untraced pool on the
// same database.
func tracedPostgres(t *testing.T, tr *tracer) (traced, other *sql.DB) {
	t.Helper()
	plain := pgtest.Config(t)
	cfg := plain
	cfg.Trace = tr.trace
	traced, other = sql.OpenDB(pgtest.Connector(t, cfg)), sql.OpenDB(pgtest.Connector(t, plain))
	t.Cleanup(func() { _ = traced.Close(); _ = other.Close() })
	traced.SetMaxOpenConns(1)
	other.SetMaxOpenConns(4)
	require.NoError(t, projection.MigratePostgres(t.Context(), other))
	return traced, other
}

// TestPostgresRoundTrips pins what each operation costs: Apply one
// statement whatever it answers (a gap and a mismatch included, which
// cost DynamoStore a read more when there is no cursor), Recover two (the
// cursor's read and one write), each read one; and nothing is prepared on
// the session: statements go unnamed, as the functions' driver sends them
// (no prepared statement for RDS Proxy to pin a session on).
func TestPostgresRoundTrips(t *testing.T) {
	t.Parallel()
	tr := &tracer{}
	db, _ := tracedPostgres(t, tr)
	store := newPostgresStore(t, db)
	ctx := t.Context()
	tr.take()

	measure := func(what string, want int, op func() error) {
		t.Helper()
		require.NoError(t, op(), what)
		got := tr.take()
		require.Equal(t, want, got, what)
		t.Logf("%-44s %d round trip(s)", what, got)
	}
	apply := func(e *outbox.Event, want projection.Outcome, wantErr error) func() error {
		return func() error {
			res, err := store.Apply(ctx, projection.ViewOfEvent(e), e.Delta)
			if wantErr != nil {
				if !errors.Is(err, wantErr) {
					return fmt.Errorf("apply %s: %w, want %w", e.EventID, err, wantErr)
				}
				return nil
			}
			if err == nil && res.Outcome != want {
				return fmt.Errorf("apply %s: %v, want %v", e.EventID, res.Outcome, want)
			}
			return err
		}
	}
	recoverTo := func(e *outbox.Event, moves bool) func() error {
		return func() error {
			r, err := store.Recover(ctx, projection.ViewOfEvent(e))
			if err == nil && r.Moved() != moves {
				return fmt.Errorf("recover to %s: moved %v, want %v", e.EventID, r.Moved(), moves)
			}
			return err
		}
	}
	evs := projectiontest.Lifecycle("job-42", "t-1")
	other := projectiontest.Lifecycle("job-43", "t-1")
	measure("job-42/v1: skipped (the view alone), first use", 1, apply(&evs[0], projection.Skipped, nil))
	measure("job-42/v2: applied, first use", 1, apply(&evs[1], projection.Applied, nil))
	measure("job-42/v3: applied", 1, apply(&evs[2], projection.Applied, nil))
	measure("job-42/v3 again: duplicate", 1, apply(&evs[2], projection.Duplicate, nil))
	measure("job-42/v2 again: older", 1, apply(&evs[1], projection.Older, nil))
	measure("job-42/v5: gap", 1, apply(&evs[4], 0, projection.ErrGap))
	measure("job-43/v3, no cursor: gap", 1, apply(&other[2], 0, projection.ErrGap))
	forged := other[0]
	forged.Delta = 7
	measure("job-43/v1 with a delta not its progress", 1, apply(&forged, 0, projection.ErrMismatch))
	measure("job-42 recovered to v5, first use", 2, recoverTo(&evs[4], true))
	measure("job-43 recovered to v3", 2, recoverTo(&other[2], true))
	measure("job-42 recovered to v5 again, first use", 2, recoverTo(&evs[4], false))
	measure("job-42 recovered to v5 a third time", 2, recoverTo(&evs[4], false))
	measure("view", 1, func() error { _, err := store.View(ctx, "job-42"); return err })
	measure("totals", 1, func() error { _, err := store.Totals(ctx, "t-1"); return err })
	measure("cursor", 1, func() error { _, err := store.Cursor(ctx, "t-1", "job-42"); return err })

	// The pool's one session is the one that ran them all.
	var prepared int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&prepared))
	require.Zero(t, prepared, "statements prepared on the session")
}

// cursorRead is how the store's read of a cursor starts.
const cursorRead = "SELECT version, progress, status FROM projection_cursors"

// setupPostgresRace returns a store whose statements tr traces, a second store on
// the same database, and job-42's history in tenant t-race, its first n
// events applied.
func setupPostgresRace(t *testing.T, n int) (*tracer, *projection.PostgresStore, *projection.PostgresStore, []outbox.Event) {
	t.Helper()
	tr := &tracer{}
	db, otherDB := tracedPostgres(t, tr)
	store := newPostgresStore(t, db)
	evs := projectiontest.Lifecycle("job-42", "t-race")
	applyEach(t, store, evs[:n]...)
	tr.take()
	return tr, store, newPostgresStore(t, otherDB), evs
}

// applyEach applies evs in order, each without an error.
func applyEach(t *testing.T, store projection.Store, evs ...outbox.Event) {
	t.Helper()
	for i := range evs {
		_, err := store.Apply(t.Context(), projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err, "apply %s", evs[i].EventID)
	}
}

// TestPostgresRecoverRacingAnApply applies the next event between the
// recovery's read of the cursor and its write. The write is conditioned
// on the cursor read, so it moves nothing, and the recovery reads again
// and counts from where the event left the cursor; without the condition
// it would count the event's delta a second time.
func TestPostgresRecoverRacingAnApply(t *testing.T) {
	t.Parallel()
	tr, store, other, evs := setupPostgresRace(t, 2)
	ctx := t.Context()
	tr.arm(cursorRead, func() {
		res, err := other.Apply(ctx, projection.ViewOfEvent(&evs[2]), evs[2].Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Applied, res.Outcome)
	})
	r, err := store.Recover(ctx, projection.ViewOfEvent(&evs[4]))
	require.NoError(t, err)
	require.Equal(t, projection.Recovery{
		From:      projection.Cursor{Version: 3, Progress: 30, Status: jobs.StatusRunning},
		To:        projection.Cursor{Version: 5, Progress: 25, Status: jobs.StatusRunning},
		Processed: -5, ViewUpdated: true,
	}, r)
	require.Equal(t, 4, tr.take(), "a read and a write that moved nothing, then a second round")
	got, err := store.Totals(ctx, "t-race")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-race", Processed: 25}, got, "each version counted once")
}

// TestPostgresRecoverRacingTheFinalEvent: the job's final event arrives
// between a recovery's read of the cursor and its write, while the view
// holds a version past the item's (an event that was not the job's). The
// recovery's write is refused as a whole, view included, and its second
// round, the cursor in step, puts the view back to the final item and
// says so: a view written by the refused round would leave the second
// nothing to write and the recovery report no view updated.
func TestPostgresRecoverRacingTheFinalEvent(t *testing.T) {
	t.Parallel()
	tr, store, other, evs := setupPostgresRace(t, 5)
	ctx := t.Context()
	done := &evs[5]
	ahead := *done
	ahead.Version = 9
	_, err := store.Apply(ctx, projection.ViewOfEvent(&ahead), 0)
	require.ErrorIs(t, err, projection.ErrGap, "the view takes it; the totals wait")
	tr.arm(cursorRead, func() {
		res, err := other.Apply(ctx, projection.ViewOfEvent(done), done.Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Result{Outcome: projection.Applied, Cursor: 6}, res, "the view holds version 9")
	})
	r, err := store.Recover(ctx, projection.ViewOfEvent(done))
	require.NoError(t, err)
	at := projection.Cursor{Version: 6, Progress: 40, Status: jobs.StatusCompleted}
	require.Equal(t, projection.Recovery{From: at, To: at, ViewUpdated: true}, r)
	requirePostgresState(t, store, done, projection.Totals{Tenant: "t-race", Processed: 40, Completed: 1})
}

// The migrations: to an empty database, and to the schema of version 1
// holding rows the store wrote, which survive and are checked by version
// 2's constraints; the store works after either.

func TestMigratePostgresToAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), pgtest.DB(t)
	require.NoError(t, projection.MigratePostgres(ctx, db))
	require.NoError(t, projection.MigratePostgres(ctx, db), "a current schema applies nothing")
	cur, err := pgmigrate.Current(ctx, db)
	require.NoError(t, err)
	require.Equal(t, map[string]int{projection.MigrationComponent: 3}, cur)

	// Version 2's and 3's checks hold a row no store decision expects.
	for name, insert := range map[string]string{
		"unknown status":   `INSERT INTO projection_views (job_id, tenant, status, generation, version, progress) VALUES ('j', 't', 'paused', 1, 1, 0)`,
		"version 0":        `INSERT INTO projection_views (job_id, tenant, status, generation, version, progress) VALUES ('j', 't', 'running', 1, 0, 0)`,
		"empty result key": `INSERT INTO projection_views (job_id, tenant, status, generation, version, progress, result_key) VALUES ('j', 't', 'running', 1, 1, 0, '')`,
		"cursor at 0":      `INSERT INTO projection_cursors (tenant, job_id, version, progress, status) VALUES ('t', 'j', 0, 0, 'running')`,
		"negative cursor":  `INSERT INTO projection_cursors (tenant, job_id, version, progress, status) VALUES ('t', 'j', 1, -1, 'running')`,
		"negative shard":   `INSERT INTO projection_totals (tenant, shard, processed, completed) VALUES ('t', -1, 0, 0)`,
	} {
		_, err := db.ExecContext(ctx, insert)
		var pg interface{ SQLState() string }
		require.ErrorAs(t, err, &pg, name)
		require.Equal(t, "23514", pg.SQLState(), "%s: check_violation", name)
	}

	store := newPostgresStore(t, db)
	evs := projectiontest.Lifecycle("job-42", "t-1")
	applyEach(t, store, evs...)
	requirePostgresState(t, store, &evs[5], projection.Totals{Tenant: "t-1", Processed: 40, Completed: 1})
}

func TestMigratePostgresFromVersion1KeepsItsRows(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), pgtest.DB(t)
	v1, err := os.ReadFile("postgres/0001_tables.sql")
	require.NoError(t, err)
	_, err = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: projection.MigrationComponent,
		FS: fstest.MapFS{"0001_tables.sql": {Data: v1}}})
	require.NoError(t, err)

	// The rows a store of version 1 wrote (one totals row per tenant): a
	// job halfway, one failed, and one recovered to its completion.
	evs := projectiontest.Lifecycle("job-42", "t-1")
	failing := projectiontest.Failing("job-43", "t-1")
	recovered := projectiontest.Lifecycle("job-44", "t-2")
	for _, e := range []*outbox.Event{&evs[2], &failing[2], &recovered[5]} {
		v := projection.ViewOfEvent(e)
		_, err := db.ExecContext(ctx, `INSERT INTO projection_views (job_id, tenant, status, generation, version, progress, result_key, result_size, error_code, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, 0), NULLIF($9, ''), $10)`,
			v.JobID, v.Tenant, string(v.Status), v.Generation, v.Version, v.Progress, v.ResultKey, v.ResultSize, v.ErrorCode, v.UpdatedAt.UnixMilli())
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO projection_cursors (tenant, job_id, version, progress, status) VALUES ($1, $2, $3, $4, $5)`,
			v.Tenant, v.JobID, v.Version, v.Progress, string(v.Status))
		require.NoError(t, err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO projection_totals (tenant, processed, completed) VALUES ('t-1', 37, 0), ('t-2', 40, 1)`)
	require.NoError(t, err)

	require.NoError(t, projection.MigratePostgres(ctx, db))
	cur, err := pgmigrate.Current(ctx, db)
	require.NoError(t, err)
	require.Equal(t, map[string]int{projection.MigrationComponent: 3}, cur)
	store := newPostgresStore(t, db)
	requirePostgresState(t, store, &evs[2], projection.Totals{Tenant: "t-1", Processed: 30 + 7})
	requirePostgresState(t, store, &failing[2], projection.Totals{Tenant: "t-1", Processed: 30 + 7})
	requirePostgresState(t, store, &recovered[5], projection.Totals{Tenant: "t-2", Processed: 40, Completed: 1})

	// The store goes on where it was.
	for i := 3; i < 6; i++ {
		res, err := store.Apply(ctx, projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Applied, res.Outcome)
	}
	requirePostgresState(t, store, &evs[5], projection.Totals{Tenant: "t-1", Processed: 40 + 7, Completed: 1})
}

// requirePostgresState requires e's job to have e's view and cursor, and
// its tenant the totals want.
func requirePostgresState(t *testing.T, store projection.Store, e *outbox.Event, want projection.Totals) {
	t.Helper()
	ctx := t.Context()
	v, err := store.View(ctx, e.JobID)
	require.NoError(t, err)
	require.Equal(t, projection.ViewOfEvent(e), v)
	c, err := store.Cursor(ctx, e.Tenant, e.JobID)
	require.NoError(t, err)
	require.Equal(t, projection.Cursor{Version: e.Version, Progress: e.Progress, Status: e.Status}, c)
	got, err := store.Totals(ctx, e.Tenant)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestPostgresLagOfAndRecoverJob: what the sweeper's repair asks of the
// store (projection.Repairer) on PostgreSQL: a final job whose last event
// was lost is behind, RecoverJob brings it in step, and a view moved past
// the final item by an event that was not the job's is diverged and put
// back.
func TestPostgresLagOfAndRecoverJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := newPostgresStore(t, setupPostgres(t))
	evs := projectiontest.Lifecycle("job-42", "t-1")
	applyEach(t, store, evs[:5]...) // the completion's event is lost
	done := &evs[5]
	job := jobs.Job{ID: done.JobID, Tenant: done.Tenant, Status: done.Status, Generation: done.Generation, Version: done.Version,
		Progress: done.Progress, Result: jobs.Result{Key: done.ResultKey, Size: done.ResultSize}, UpdatedAt: done.OccurredAt}
	lag, err := projection.LagOf(ctx, store, &job)
	require.NoError(t, err)
	require.True(t, lag.Behind())
	require.Equal(t, projection.Lag{Job: 6, View: 5, Cursor: projection.Cursor{Version: 5, Progress: 25, Status: jobs.StatusRunning}}, lag)

	r, err := projection.RecoverJob(ctx, store, &job)
	require.NoError(t, err)
	require.Equal(t, projection.Recovery{From: lag.Cursor, To: projection.Cursor{Version: 6, Progress: 40, Status: jobs.StatusCompleted},
		Processed: 15, Completed: 1, ViewUpdated: true}, r)
	lag, err = projection.LagOf(ctx, store, &job)
	require.NoError(t, err)
	require.True(t, lag.InStep())

	ahead := *done
	ahead.Version, ahead.EventID = 9, "forged"
	_, err = store.Apply(ctx, projection.ViewOfEvent(&ahead), 0)
	require.ErrorIs(t, err, projection.ErrMismatch, "nothing follows a final cursor")
	lag, err = projection.LagOf(ctx, store, &job)
	require.NoError(t, err)
	require.True(t, lag.Diverged())
	r, err = projection.RecoverJob(ctx, store, &job)
	require.NoError(t, err)
	require.True(t, r.ViewUpdated)
	requirePostgresState(t, store, done, projection.Totals{Tenant: "t-1", Processed: 40, Completed: 1})
}

// waitFor polls until cond holds, failing the test when ctx ends: what the
// test waits for is a state of the server, not a time.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s: %v", what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
