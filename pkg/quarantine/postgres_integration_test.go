//go:build integration

package quarantine_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// postgresDB is a new database of the test's own with the quarantine's
// schema, on a small pool (the server is shared).
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(8)
	require.NoError(t, quarantine.MigratePostgres(t.Context(), db))
	return db
}

func TestPostgresStoreConformance(t *testing.T) {
	t.Parallel()
	db := postgresDB(t) // the suite's tests each use a queue of their own
	quarantinetest.Run(t, func(t *testing.T) quarantine.Store {
		store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
		require.NoError(t, err)
		return store
	})
}
