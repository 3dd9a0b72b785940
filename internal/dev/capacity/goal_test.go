package capacity_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
)

// The goal of issue 19 on paper, with the committed template.yaml and
// requests.json: at 1,000 and at 100,000 groups no limit of ours binds
// before the lowest of the raisable AWS quotas the goal names (Lambda's
// concurrency, API Gateway, a table's maximum), and one tenant reaches
// 5,000 jobs/s. A failure lists each shortfall; the document's goal block
// says the same.
func TestTheGoalOnPaper(t *testing.T) {
	for _, groups := range capacity.GoalGroups {
		p := compute(t, committed(t), templateSettings(t), capacity.Input{Groups: groups, Tenants: 1, Region: "us-east-1"})
		require.Empty(t, p.GoalShortfalls(), "%d groups, template.yaml's defaults and requests.json:\n%s", groups, strings.Join(p.GoalShortfalls(), "\n"))
	}
}

// recommended are the defaults with which the sharded design meets the
// goal: TotalsShards 32, the projector's and the worker's concurrency
// 100, LiveShards 32.
func recommended(t *testing.T) capacity.Settings {
	s := pinned(t)
	s.TotalsShards.Value, s.ProjectorConcurrency.Value, s.WorkerConcurrency.Value, s.LiveShards.Value = 32, 100, 200, 32
	return s
}

// With the sharded design's counts (one totals transaction a job) the goal
// holds at the recommended defaults, and it holds down to the smallest of
// each (78, 123, 27, 27: one of ours must allow more than the Jobs table's
// maximum, 6,666 jobs/s at 6 write units a job), and each one below its
// smallest misses it, naming that limit. Before sharding (today's counts,
// one shard, the old defaults) it misses on each of ours and the tenant.
func TestTheGoalHoldsWithTheShardedDesignAndTheseDefaults(t *testing.T) {
	for _, groups := range capacity.GoalGroups {
		in := capacity.Input{Groups: groups, Tenants: 1, Region: "us-east-1"}
		p := compute(t, shardedCounts(), recommended(t), in)
		require.Empty(t, p.GoalShortfalls(), "%d groups", groups)
		require.Equal(t, 8000.0, p.TenantJobsPerS)
		require.NotEqual(t, capacity.Ours, p.Limits[0].Owner)

		smallest := recommended(t)
		smallest.ProjectorConcurrency.Value, smallest.WorkerConcurrency.Value, smallest.LiveShards.Value, smallest.TotalsShards.Value = 78, 123, 27, 27
		require.Empty(t, compute(t, shardedCounts(), smallest, in).GoalShortfalls(), "%d groups, the smallest defaults", groups)
		for key, tc := range map[string]struct {
			lower func(*capacity.Settings)
			fix   string
		}{
			"projector-concurrency": {func(s *capacity.Settings) { s.ProjectorConcurrency.Value = 77 }, "(ProjectorMaxConcurrency 78 or more clears it)"},
			"worker-concurrency":    {func(s *capacity.Settings) { s.WorkerConcurrency.Value = 122 }, "(WorkerMaxConcurrency 123 or more clears it)"},
			"live-shards":           {func(s *capacity.Settings) { s.LiveShards.Value = 26 }, "(LiveShards 27 or more clears it)"},
			"tenant-totals":         {func(s *capacity.Settings) { s.TotalsShards.Value = 26 }, "(TotalsShards 27 or more clears it)"},
		} {
			s := smallest
			tc.lower(&s)
			p := compute(t, shardedCounts(), s, in)
			short := p.GoalShortfalls()
			require.Len(t, short, 1, "%s lowered: %v", key, short)
			require.Contains(t, short[0], byKey(p)[key].Name)
			require.Contains(t, short[0], "not above 6,666 jobs/s (Jobs table: on-demand maximum per table)")
			require.True(t, strings.HasSuffix(short[0], tc.fix), "%s: %s", key, short[0])
		}
		s := recommended(t)
		s.TotalsShards.Value = 19
		short := compute(t, shardedCounts(), s, in).GoalShortfalls()
		require.Len(t, short, 2, "19 shards: below the Jobs table's maximum, and the tenant's 5,000: %v", short)
		require.Equal(t, "one tenant reaches 4,750 jobs/s, below 5,000 (TotalsShards 20 or more clears it)", short[1])
		s.TotalsShards.Value = 20
		short = compute(t, shardedCounts(), s, in).GoalShortfalls()
		require.Len(t, short, 1, "20 shards, 5,000 jobs/s: the tenant's part is met, the table's maximum is not passed: %v", short)
		require.Contains(t, short[0], "ours binds at 5,000 jobs/s, not above 6,666 jobs/s")

		before := compute(t, todayCounts(), pinned(t), in).GoalShortfalls()
		require.Len(t, before, 5, "%d groups: %v", groups, before) // the tenant's totals, the projector, the worker, the live index; the tenant
		require.Equal(t, "one tenant reaches 125 jobs/s, below 5,000 (TotalsShards 40 or more clears it)", before[len(before)-1])
	}
}

// The goal's bounds, at exactly their values: a limit of ours equal to the
// lowest raisable quota binds with it and misses; one above it does not;
// a tenant at exactly 5,000 jobs/s meets it, at 4,999 misses it.
func TestGoalShortfallsAtTheBounds(t *testing.T) {
	plan := func(ours, tenant float64) capacity.Plan {
		return capacity.Plan{TenantJobsPerS: tenant, Limits: []capacity.Limit{
			{Key: "jobs-new-table", Name: "new", Owner: capacity.AWSAdjustable, JobsPerS: 666},
			{Key: "projector-concurrency", Name: "the projector", Owner: capacity.Ours, JobsPerS: ours},
			{Key: "jobs-table-max", Name: "Jobs table: max, 40000", Owner: capacity.AWSAdjustable, JobsPerS: 6666},
			{Key: "api-gateway", Name: "API Gateway, 10000", Owner: capacity.AWSAdjustable, JobsPerS: 10000},
			{Key: "groups", Name: "groups", Owner: capacity.AWSFixed, JobsPerS: 10},
		}}
	}
	require.Empty(t, plan(6667, 5000).GoalShortfalls())
	require.Equal(t, []string{"ours binds at 6,666 jobs/s, not above 6,666 jobs/s (Jobs table: max): the projector"}, plan(6666, 5000).GoalShortfalls())
	require.Equal(t, []string{"one tenant reaches 4,999 jobs/s, below 5,000"}, plan(6667, 4999).GoalShortfalls())
}
