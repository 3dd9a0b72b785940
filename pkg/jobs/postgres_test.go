package jobs_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// NewPostgresStore refuses each configuration that cannot work, naming the
// field, and takes one that can without connecting.
func TestNewPostgresStoreRefusesInvalidConfigs(t *testing.T) {
	t.Parallel()
	db := new(sql.DB) // never used: the constructor does not connect
	for field, cfg := range map[string]jobs.PostgresConfig{
		"DB":                      {},
		"Recovery.MaxGenerations": {DB: db, Config: jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: -1}}},
		"Retention":               {DB: db, Config: jobs.Config{Retention: -1}},
		"IntentRetention":         {DB: db, Config: jobs.Config{IntentRetention: -1}},
		"ClockSkew":               {DB: db, Config: jobs.Config{ClockSkew: jobs.MaxClockSkew + 1}},
	} {
		_, err := jobs.NewPostgresStore(cfg)
		require.ErrorIs(t, err, jobs.ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
	}
	s, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db, Config: jobs.Config{ClockSkew: jobs.MaxClockSkew}})
	require.NoError(t, err)
	require.NotNil(t, s)
}
