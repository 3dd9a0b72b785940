package jobs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	jobstest.Run(t, func(t *testing.T, cfg jobs.Config) jobs.Store {
		store, err := jobs.NewMemoryStore(cfg)
		require.NoError(t, err)
		return store
	})
}
