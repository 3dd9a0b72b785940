//go:build integration

package pgwire_test

import (
	"database/sql"

	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// A pooled session the server ended while it sat idle (pg_terminate_backend,
// idle_session_timeout, a restart) is found dead when the pool hands it
// out, before anything is sent on it: the statement runs on a new session
// instead of failing with the server's reason (database/sql retries a
// session reset refuses), as it did on pgx, whose reset pings.
func TestASessionEndedWhileIdleIsReplacedBeforeUse(t *testing.T) {
	t.Parallel()
	cfg := pgtest.Config(t)
	db := sqlOpen(t, cfg)
	db.SetMaxOpenConns(1)
	admin := sqlOpen(t, cfg)
	ctx := t.Context()
	pid := backendPID(t, db)
	require.Equal(t, pid, backendPID(t, db), "a quiet idle session is reused")
	var ok bool
	require.NoError(t, admin.QueryRowContext(ctx, `SELECT pg_terminate_backend($1::int)`, pid).Scan(&ok))
	require.True(t, ok)
	waitGone(t, admin, pid) // then the server's goodbye has reached the idle socket
	var one int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT $1::int`, 1).Scan(&one), "the pool's idle session was dead; a new one serves the call")
	require.Equal(t, int64(1), one)
	require.NotEqual(t, pid, backendPID(t, db))
}

func sqlOpen(t *testing.T, cfg pgwire.Config) *sql.DB {
	t.Helper()
	db := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// waitGone waits until the server process pid has ended.
func waitGone(t *testing.T, db *sql.DB, pid int64) {
	t.Helper()
	for {
		var alive int64
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&alive))
		if alive == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
