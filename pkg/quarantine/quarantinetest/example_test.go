package quarantinetest_test

import (
	"testing"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// A store is held to the suite from its own test file, which hands Run a
// constructor rather than a store: every test of the suite starts from a
// fresh one, so one test's holds cannot make another pass. The suite needs
// a *testing.T, so this example is compiled, not run; pkg/quarantine's
// memory_test.go runs it.
func Example() {
	var newStore quarantinetest.NewStore = func(*testing.T) quarantine.Store {
		return quarantine.NewMemoryStore()
	}
	// In a _test.go file:
	//
	//	func TestMemoryStore(t *testing.T) { quarantinetest.Run(t, newStore) }
	_ = newStore
}
