//go:build integration

package jobs_test

import (
	"database/sql"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// On an empty database MigratePostgres applies every version; applied
// again it applies nothing and the schema stays.
func TestPostgresMigrationsOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	cur, err := pgmigrate.Current(t.Context(), db)
	require.NoError(t, err)
	ms, err := jobs.PostgresMigrations().Read()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ms), 2, "at least two versions: the previous version's test needs one")
	require.Equal(t, map[string]int{"jobs": len(ms)}, cur)
	for _, index := range []string{"jobs_live", "jobs_finished", "jobs_expiry", "job_intents_expiry"} {
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_indexes WHERE indexname = $1`, index).Scan(&n))
		require.Equal(t, 1, n, index)
	}
}

// previousVersion is the job store's migrations but the last: the schema
// a deployment of the previous version holds.
func previousVersion(t *testing.T) pgmigrate.Set {
	t.Helper()
	ms, err := jobs.PostgresMigrations().Read()
	require.NoError(t, err)
	prev := fstest.MapFS{}
	for _, m := range ms[:len(ms)-1] {
		prev[m.Name] = &fstest.MapFile{Data: []byte(m.SQL), Mode: fs.ModePerm}
	}
	return pgmigrate.Set{Component: "jobs", FS: prev}
}

// execAll runs statements on db.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		_, err := db.ExecContext(t.Context(), s)
		require.NoError(t, err, s)
	}
}
