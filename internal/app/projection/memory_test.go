package projection_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, func(*testing.T) projection.Store { return projection.NewMemoryStore() })
}
