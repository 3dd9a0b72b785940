//go:build integration

package test

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
)

// updateRequests makes the request tests write what they count into the
// capacity model's requests.json instead of comparing it with the file.
var updateRequests = flag.Bool("update-requests", false, "write the counted requests into internal/dev/capacity/"+capacity.RequestsFile)

// requireCounted compares a path's counts with the committed ones the
// capacity model reads (internal/dev/capacity/requests.json), or, with
// -update-requests, writes them there. The projector's reads of the holds
// are left out: one per batch, their number depends on how the events
// were batched (requireProjector checks their range); so is its record of
// the totals' shard count, once per process, not per job (requireProjector
// checks there is one).
func requireCounted(t *testing.T, path string, got map[string]map[string]int) {
	t.Helper()
	counted := capacity.Requests{}
	for fn, ops := range got {
		counted[fn] = maps.Clone(ops)
	}
	if p := counted["projector"]; p != nil {
		delete(p, "BatchGetItem")
		delete(p, "PutItem")
	}
	counted = counted.Compact()
	file := filepath.Join("..", "internal", "dev", "capacity", capacity.RequestsFile)
	if *updateRequests {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		c, err := capacity.ParseCounts(raw)
		require.NoError(t, err)
		out, err := c.WithPath(path, counted).Marshal()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, out, 0o644))
		t.Logf("wrote path %s into %s", path, file)
		return
	}
	c, err := capacity.Counted()
	require.NoError(t, err)
	require.Equal(t, c.Paths[path], counted,
		"path %s: the requests counted differ from %s, which the capacity model reads: regenerate it (%s) and review the model",
		path, file, capacity.GeneratedBy)
}
