//go:build integration

package jobs_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// TestPostgresUnderRepeatableReadABlockedWriteIsDecidedNotFailed: on a
// database whose default isolation is Repeatable Read (a role's or a
// database's default_transaction_isolation), an UPDATE that waited for a
// competing write fails with serialization_failure (40001) instead of
// checking its WHERE again. The store takes that as the refusal it is
// (the statement wrote nothing) and decides on the newer row, as under
// Read Committed: the accept behind a competitor that commits is stale,
// and one behind a competitor that rolls back lands, never an error of
// the server's.
func TestPostgresUnderRepeatableReadABlockedWriteIsDecidedNotFailed(t *testing.T) {
	t.Parallel()
	db, raw := repeatableReadDB(t, 4)
	var level string
	require.NoError(t, db.QueryRowContext(t.Context(), `SHOW transaction_isolation`).Scan(&level))
	require.Equal(t, "repeatable read", level)
	b := &pgBundle{db: db, raw: raw, clock: jobstest.NewClock(jobstest.Start), count: &statements{}}
	b.store = newPostgresStore(t, db, jobs.Config{Now: b.clock.Now})

	j := b.running(t, "job-commits")
	a := compete(t, raw, j.ID)
	res := b.acceptBehind(t, a, j)
	require.NoError(t, a.tx.Commit())
	got := <-res
	var stale *jobs.StaleError
	require.ErrorAs(t, got.err, &stale)
	require.Equal(t, &jobs.StaleError{Generation: 1, Version: j.Version + 1, Status: jobs.StatusRunning}, stale)
	require.Len(t, b.outbox(t, j.ID), 2, "the create's and the claim's rows only")

	j = b.running(t, "job-rolls-back")
	a = compete(t, raw, j.ID)
	res = b.acceptBehind(t, a, j)
	require.NoError(t, a.tx.Rollback())
	got = <-res
	require.NoError(t, got.err)
	require.Equal(t, jobs.StatusCompleted, got.job.Status)
	require.Len(t, b.outbox(t, j.ID), 3)

	// A claim behind a competitor's claim: 40001, then decided on the
	// competitor's row (its lease is live).
	_, err := b.store.Create(t.Context(), jobs.CreateRequest{JobID: "job-pending", IntentID: "intent-pending", Tenant: "t-1"})
	require.NoError(t, err)
	tx, err := raw.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	var pid int
	require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	_, err = tx.ExecContext(t.Context(), `UPDATE jobs SET status = 'running', generation = 1, version = 1, lease_owner = 'attempt-z',
		lease_expires_at = $1 WHERE job_id = 'job-pending'`, b.clock.Now().Add(time.Minute).UnixMilli())
	require.NoError(t, err)
	claimed := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-pending", AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
		claimed <- err
	}()
	waitBlockedBehind(t, raw, pid, done)
	require.NoError(t, tx.Commit())
	var held *jobs.LeaseHeldError
	require.ErrorAs(t, <-claimed, &held)
	require.Equal(t, "attempt-z", held.Owner)
}

// TestPostgresStoreConformanceUnderRepeatableRead: the conformance suite,
// its races and its linearizability check included, on a pool whose
// transactions are Repeatable Read by default.
func TestPostgresStoreConformanceUnderRepeatableRead(t *testing.T) {
	t.Parallel()
	db, _ := repeatableReadDB(t, 16)
	jobstest.Run(t, func(t *testing.T, cfg jobs.Config) jobs.Store {
		return newPostgresStore(t, db, cfg)
	})
}

// repeatableReadDB returns two pools of conns connections on a new
// database at the job store's schema: db, whose transactions are
// Repeatable Read by default, and raw, at PostgreSQL's default.
func repeatableReadDB(t *testing.T, conns int) (db, raw *sql.DB) {
	t.Helper()
	cfg := pgtest.Config(t)
	raw = sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = raw.Close() })
	raw.SetMaxOpenConns(conns)
	cfg.Params = map[string]string{"default_transaction_isolation": "repeatable read"}
	db = sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(conns)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	return db, raw
}
