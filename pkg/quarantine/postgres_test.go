package quarantine_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// TestNewPostgresStoreRefusesAnInvalidConfig: a PostgresStore needs its
// pool, and so does MigratePostgres; a pool is all it needs (no driver is
// registered here, and none is dialled).
func TestNewPostgresStoreRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{})
	require.ErrorIs(t, err, quarantine.ErrInvalidConfig)
	require.ErrorContains(t, err, "DB")
	err = quarantine.MigratePostgres(t.Context(), nil)
	require.ErrorIs(t, err, quarantine.ErrInvalidConfig)
	require.ErrorContains(t, err, "DB")

	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: &sql.DB{}})
	require.NoError(t, err)
	require.NotNil(t, store)
}
