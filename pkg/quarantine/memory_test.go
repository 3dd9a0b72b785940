package quarantine_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	quarantinetest.Run(t, func(*testing.T) quarantine.Store { return quarantine.NewMemoryStore() })
}
