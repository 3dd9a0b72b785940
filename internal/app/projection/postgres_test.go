package projection_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
)

// TestNewPostgresStoreRefusesAnInvalidConfig: NewPostgresStore refuses a
// configuration without a database, naming the field.
func TestNewPostgresStoreRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   projection.PostgresConfig
		field string // "" when the configuration is valid
	}{
		{"a database", projection.PostgresConfig{DB: &sql.DB{}}, ""},
		{"no database", projection.PostgresConfig{}, "DB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, err := projection.NewPostgresStore(tc.cfg)
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, store)
				return
			}
			require.ErrorIs(t, err, projection.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, store)
		})
	}
}
