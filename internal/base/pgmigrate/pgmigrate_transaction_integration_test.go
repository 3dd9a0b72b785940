//go:build integration

package pgmigrate_test

import (
	"database/sql"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// Sessions whose default isolation is Repeatable Read (a DBA's choice, for
// the database or the role, Apply cannot rule out; here the start-up
// parameter): a transaction's snapshot is taken at its first statement,
// before the advisory lock is granted, so a racer that waited for the lock
// must still read what the winner recorded.
func TestConcurrentAppliesUnderRepeatableReadByDefault(t *testing.T) {
	ctx, cfg := t.Context(), pgtest.Config(t)
	cfg.Params = map[string]string{"default_transaction_isolation": "repeatable read"}
	db := sql.OpenDB(pgtest.Connector(t, cfg))
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(8)
	var level string
	require.NoError(t, db.QueryRowContext(ctx, `SHOW default_transaction_isolation`).Scan(&level))
	require.Equal(t, "repeatable read", level)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	total := make([]int, 6)
	for i := range errs {
		wg.Go(func() {
			ms, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
			errs[i], total[i] = err, len(ms)
		})
	}
	wg.Wait()
	n := 0
	for i := range errs {
		require.NoError(t, errs[i])
		n += total[i]
	}
	require.Equal(t, 2, n, "each file applied by exactly one of the racers")
	requireRecorded(ctx, t, db, 2)
}

// A file that ends Apply's transaction (a COMMIT among its statements)
// would leave what came before it committed, release the lock, and let
// the rest run outside any transaction: Apply refuses it, naming it.
func TestAFileThatEndsTheTransactionIsRefused(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	for _, end := range []string{"COMMIT", "ROLLBACK", "END"} {
		t.Run(end, func(t *testing.T) {
			set := pgmigrate.Set{Component: "c_" + strings.ToLower(end), FS: files("0001_ends.sql",
				`CREATE TABLE IF NOT EXISTS ends (id text); `+end+`; INSERT INTO ends VALUES ('after')`)}
			_, err := pgmigrate.Apply(ctx, db, set)
			require.ErrorIs(t, err, pgmigrate.ErrNotTransactional)
			require.ErrorContains(t, err, "0001_ends.sql")
		})
	}
}
