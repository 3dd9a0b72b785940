package jobs_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	jobstest.Run(t, func(t *testing.T, opts ...jobs.Option) jobs.Store {
		return jobs.NewMemoryStore(opts...)
	})
}
