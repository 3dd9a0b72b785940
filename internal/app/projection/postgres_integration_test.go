//go:build integration

package projection_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// setupPostgres returns a database of the test's own, migrated, on a pool
// of at most 8 connections (the server is shared).
func setupPostgres(t *testing.T) *sql.DB {
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
