//go:build integration

package test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
)

// BenchmarkTotalsDesigns measures the tenant totals' two designs side by
// side (issue 19, point 5): "before", today's design before
// sharding, selected by settings in the same binaries (TOTALS_SHARDS=1
// and TOTALS_COUNT_EVERY_EVENT=1 for the projector and the sweeper: one
// total item per tenant, and every event, job.started included, moves
// the job's cursor in a transaction with it), against "sharded",
// template.yaml's defaults (TotalsShards, 32 shards; an event that adds
// nothing writes nothing to the totals). `make bench-totals` runs it.
//
// Each design posts totalsJobs jobs of ONE tenant through the whole
// pipeline, as BenchmarkPipeline does (the five functions in process on
// the local stack), from a closed loop of totalsGroups clients (each job
// is its own group), on a deployment of its own (a Totals table keeps
// the shard count it was first written with), after an untimed warm-up
// of another tenant. When every job is projected completed, the tenant's
// totals are read through projection.DynamoStore with the deployment's
// shard count and must be exact: Completed the number of jobs, Processed
// the sum of their progress (each job's job.completed event's); anything
// else fails the benchmark.
//
// An op is a job (ns/op too). Beside BenchmarkPipeline's figures it
// reports jobs/s and the projector's TransactWriteItems attempts per job
// (txn/op; a transaction cancelled by a conflict and tried again counts
// twice).
//
// On one stack the design that runs second is measured on an older
// emulator, and DynamoDB Local slows as it ages (in one run its CPU per
// job went 37, 64, then 144 ms over the first three runs of 2,000 jobs:
// docs/BENCHMARKS.md). So make bench-totals runs each design on a fresh
// stack of its own (-bench 'BenchmarkTotalsDesigns/^design=before$'),
// alternating before and sharded in rounds.
func BenchmarkTotalsDesigns(b *testing.B) {
	for _, design := range []string{"before", "sharded"} {
		b.Run("design="+design, func(b *testing.B) {
			benchPipeline(b, pipelineLoad{
				groups: totalsGroups, tenants: []string{"load"}, warmTenants: []string{"warm"},
				jobs: totalsJobs, settings: totalsDesigns[design], check: checkTotals,
			})
		})
	}
}

const (
	totalsJobs   = 2000
	totalsGroups = 100
)

// totalsDesigns are each design's function settings (pipeline.Config's
// Settings): the sharded design is template.yaml's.
var totalsDesigns = map[string]map[string]map[string]string{
	"before": {
		"projector": {"TOTALS_SHARDS": "1", "TOTALS_COUNT_EVERY_EVENT": "1"},
		"sweeper":   {"TOTALS_SHARDS": "1", "TOTALS_COUNT_EVERY_EVENT": "1"},
	},
	"sharded": nil,
}

// checkTotals fails the benchmark unless the tenant's totals are exact,
// and reports the projector's transactions per job.
func checkTotals(b *testing.B, run *pipelineRun) {
	shards, err := strconv.Atoi(run.p.Setting("projector", "TOTALS_SHARDS"))
	require.NoError(b, err, "the projector's TOTALS_SHARDS")
	store, err := projection.NewDynamoStore(projection.DynamoConfig{
		Client: run.d.state.DynamoDBClient(),
		Tables: projection.Tables{Views: run.d.deployed.Resources["ViewsTable"], Totals: run.d.deployed.Resources["TotalsTable"]},
		Shards: shards,
	})
	require.NoError(b, err)
	want := map[string]projection.Totals{}
	for id, tenant := range run.tenant {
		progress, ok := run.progress[id]
		require.True(b, ok, "job %s (tenant %s) has no job.completed event recorded", id, tenant)
		t := want[tenant]
		t.Tenant, t.Processed, t.Completed = tenant, t.Processed+progress, t.Completed+1
		want[tenant] = t
	}
	require.Len(b, run.tenant, run.jobs, "the timed jobs")
	for tenant, w := range want {
		got, err := store.Totals(b.Context(), tenant)
		require.NoError(b, err)
		if got != w {
			b.Fatalf("tenant %s's totals over %d shards are %+v; want %+v (the sum of its %d jobs)", tenant, shards, got, w, run.jobs)
		}
	}
	b.ReportMetric(float64(run.requests.count("projector", "TransactWriteItems"))/float64(run.jobs), "txn/op")
	b.ReportMetric(float64(shards), "shards")
}
