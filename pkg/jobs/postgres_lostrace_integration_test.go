//go:build integration

package jobs_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// sent records the first word of each statement a pool sends (WITH: a
// transition's UPDATE; SELECT: a read).
type sent struct {
	mu    sync.Mutex
	words []string
}

func (s *sent) trace(_ context.Context, query string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.words = append(s.words, strings.Fields(query)[0])
}

func (s *sent) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.words
	s.words = nil
	return w
}

// Above Read Committed an UPDATE that waited for a competing write fails
// (40001) and returns no row: the store then reads the row as the
// competitor left it and decides on that, in one read, rather than
// sending the refused write again. Behind a competitor that bumped the
// version the accept is stale; behind one that deleted the job (a purge)
// it is ErrNotFound; either way after exactly the failed UPDATE and one
// read, and with nothing written.
func TestPostgresAboveReadCommittedALostRaceIsDecidedOnTheRowAsItIsNow(t *testing.T) {
	t.Parallel()
	cfg := pgtest.Config(t)
	raw := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = raw.Close() })
	raw.SetMaxOpenConns(4)
	trace := &sent{}
	cfg.Params = map[string]string{"default_transaction_isolation": "repeatable read"}
	cfg.Trace = trace.trace
	db := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(4)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	b := &pgBundle{db: db, raw: raw, clock: jobstest.NewClock(jobstest.Start), count: &statements{}}
	b.store = newPostgresStore(t, db, jobs.Config{Now: b.clock.Now})

	for _, tc := range []struct {
		name, competitor string
		check            func(t *testing.T, err error)
	}{
		{"bumped", `UPDATE jobs SET version = version + 1 WHERE job_id = $1`, func(t *testing.T, err error) {
			var stale *jobs.StaleError
			require.ErrorAs(t, err, &stale)
		}},
		{"deleted", `DELETE FROM jobs WHERE job_id = $1`, func(t *testing.T, err error) {
			require.ErrorIs(t, err, jobs.ErrNotFound)
		}},
	} {
		j := b.running(t, "job-"+tc.name)
		tx, err := raw.BeginTx(t.Context(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		a := &competitor{tx: tx}
		require.NoError(t, tx.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&a.pid))
		_, err = tx.ExecContext(t.Context(), tc.competitor, j.ID)
		require.NoError(t, err)
		trace.take()
		res := b.acceptBehind(t, a, j)
		require.NoError(t, tx.Commit())
		got := <-res
		tc.check(t, got.err)
		require.Equal(t, []string{"WITH", "SELECT"}, trace.take(), "%s: the failed UPDATE, then one read", tc.name)
		require.Len(t, b.outbox(t, j.ID), 2, "%s: the create's and the claim's rows only", tc.name)
	}
}
