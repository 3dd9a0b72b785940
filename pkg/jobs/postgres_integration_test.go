//go:build integration

package jobs_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// postgresDB is a new database at the job store's schema, on a small pool
// (the server is shared).
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(16)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	return db
}

func newPostgresStore(t testing.TB, db *sql.DB, cfg jobs.Config) *jobs.PostgresStore {
	t.Helper()
	s, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db, Config: cfg})
	require.NoError(t, err)
	return s
}

func TestPostgresStoreConformance(t *testing.T) {
	t.Parallel()
	db := postgresDB(t)
	jobstest.Run(t, func(t *testing.T, cfg jobs.Config) jobs.Store {
		return newPostgresStore(t, db, cfg)
	})
}
