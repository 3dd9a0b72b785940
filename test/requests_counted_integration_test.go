//go:build integration

package test

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
)

// updateRequests makes the request tests write what they count into the
// capacity model's requests.json instead of comparing it with the file.
var updateRequests = flag.Bool("update-requests", false, "write the counted requests into internal/dev/capacity/"+capacity.RequestsFile)

// perProcess reports whether a request is a function's once-per-process
// write, no job's cost, which the request tests leave out of their counts:
// the Jobs table's record of its live index's shard count (an UpdateItem of
// "config#live-shards", by every writer of jobs above 16 shards) and the
// Totals table's record of its shard count (under "#config": the
// projector's read of it, its Scan for totals written before it, its
// PutItem; the sweeper's read), before their first write.
func perProcess(input any) bool {
	switch in := input.(type) {
	case *dynamodb.UpdateItemInput:
		k, ok := in.Key["job_id"].(*ddbtypes.AttributeValueMemberS)
		return ok && k.Value == "config#live-shards"
	case *dynamodb.PutItemInput:
		k, ok := in.Item["tenant"].(*ddbtypes.AttributeValueMemberS)
		return ok && k.Value == "#config"
	case *dynamodb.ScanInput: // the look for totals written before the record, no function's other request
		return true
	case *dynamodb.GetItemInput:
		k, ok := in.Key["tenant"].(*ddbtypes.AttributeValueMemberS)
		return ok && k.Value == "#config"
	}
	return false
}

// requireCounted compares a path's counts with the committed ones the
// capacity model reads (internal/dev/capacity/requests.json), or, with
// -update-requests, writes them there. The projector's reads of the holds
// are left out: one per batch, their number depends on how the events
// were batched (requireProjector checks their range). The once-per-process
// writes (perProcess) were never counted.
func requireCounted(t *testing.T, path string, got map[string]map[string]int) {
	t.Helper()
	counted := capacity.Requests{}
	for fn, ops := range got {
		counted[fn] = maps.Clone(ops)
	}
	if p := counted["projector"]; p != nil {
		delete(p, "BatchGetItem")
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
