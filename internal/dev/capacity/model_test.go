package capacity_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
)

// template.yaml's settings, as the CLI reads them.
func templateSettings(t *testing.T) capacity.Settings {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	s, err := capacity.SettingsFrom(tpl)
	require.NoError(t, err)
	return s
}

func plan(t *testing.T, counts capacity.Counts, in capacity.Input) capacity.Plan {
	t.Helper()
	return compute(t, counts, pinned(t), in)
}

func byKey(p capacity.Plan) map[string]capacity.Limit {
	out := map[string]capacity.Limit{}
	for _, l := range p.Limits {
		out[l.Key] = l
	}
	return out
}

func committed(t *testing.T) capacity.Counts {
	t.Helper()
	c, err := capacity.Counted()
	require.NoError(t, err)
	return c
}

// todayCounts are the happy path's counts before the totals were sharded:
// the projector writes the totals for both events (job.started adds 0).
// shardedCounts skip that write: one totals transaction per job. The
// tests below pin their counts and settings so that a regenerated
// requests.json or a new default moves only the document and the goal
// tests, which read the committed ones.
func todayCounts() capacity.Counts {
	return capacity.Counts{Paths: map[string]capacity.Requests{capacity.PathHappy: {
		"intake":    {"TransactWriteItems": 1},
		"projector": {"TransactWriteItems": 2, "UpdateItem": 2},
		"relay":     {"SendMessageBatch": 3},
		"worker":    {"BatchGetItem": 1, "PutObject": 1, "Query": 1, "UpdateItem": 2},
	}}}
}

func shardedCounts() capacity.Counts {
	c := todayCounts()
	c.Paths[capacity.PathHappy]["projector"]["TransactWriteItems"] = 1
	return c
}

// pinned are template.yaml's settings with the values these tests
// compute with set: the defaults before issue 19 (one totals shard).
func pinned(t *testing.T) capacity.Settings {
	t.Helper()
	s := templateSettings(t)
	s.WorkerConcurrency.Value, s.ProjectorConcurrency.Value, s.LiveShards.Value, s.TotalsShards.Value = 20, 10, 16, 1
	s.WorkerBatch.Value, s.ProjectorBatch.Value, s.WorkerStorageMB.Value, s.MaxCandidateBytes.Value = 10, 10, 1536, 134217728
	s.IntakeMemoryMB.Value, s.WorkerMemoryMB.Value, s.ProjectorMemoryMB.Value, s.RelayMemoryMB.Value = 256, 256, 256, 256
	return s
}

func compute(t *testing.T, counts capacity.Counts, s capacity.Settings, in capacity.Input) capacity.Plan {
	t.Helper()
	p, err := capacity.Compute(counts, s, in)
	require.NoError(t, err)
	return p
}

var oneTenant = capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"}

// The committed counts are today's or the sharded design's: the pinned
// tests above describe one of the two (the request tests regenerate the
// file when the projector changes what it writes).
func TestTheCommittedCountsAreADesignTheTestsKnow(t *testing.T) {
	got := committed(t).Paths[capacity.PathHappy].Compact()
	delete(got["projector"], "PutItem") // the shard-count record, once per process
	require.Contains(t, []capacity.Requests{todayCounts().Paths[capacity.PathHappy], shardedCounts().Paths[capacity.PathHappy]}, got)
}

// What one job costs, from the happy path's counts and the design's table
// of what each request writes: all of a job's Totals writes on one
// partition-key value, half of them on the total item.
func TestPerJobComesFromTheCountedRequests(t *testing.T) {
	p := compute(t, todayCounts(), pinned(t), oneTenant)
	require.Equal(t, capacity.PerJob{
		JobsWRU: 6, TotalsWRU: 8, TotalsKeyWRU: 8, TotalItemWRU: 4, ViewsWRU: 2, LiveWrites: 4, FinishedWrites: 1, ReadUnits: 2, S3Puts: 1,
		Commands: 1, Events: 2, APIRequests: 1,
	}, p.PerJob)
	p = compute(t, shardedCounts(), pinned(t), oneTenant)
	require.Equal(t, capacity.PerJob{
		JobsWRU: 6, TotalsWRU: 4, TotalsKeyWRU: 4, TotalItemWRU: 2, ViewsWRU: 2, LiveWrites: 4, FinishedWrites: 1, ReadUnits: 2, S3Puts: 1,
		Commands: 1, Events: 2, APIRequests: 1,
	}, p.PerJob, "the events are the views' updates, not the totals' transactions")
}

// The model's figures from the counts, the quotas and the settings before
// issue 19, in their order (Jobs 666 and 6,666 are 4,000/6 and 40,000/6
// rounded down), at the batch times the model now uses (measured at 512
// MB: the worker's 183 ms, the projector's 58 ms; Lambda's 22,271 is
// 1,000 / 44.9 ms of invocations a job). One tenant's totals on
// one partition-key value take 8 write units a job: 125 jobs/s, under the
// 250 its total item alone (4 a job) would allow.
func TestTheModelsFiguresBeforeIssue19(t *testing.T) {
	for _, groups := range []int{1000, 100_000} {
		p := compute(t, todayCounts(), pinned(t), capacity.Input{Groups: groups, Tenants: 1, Region: "us-east-1"})
		got := map[string]float64{}
		for k, l := range byKey(p) {
			got[k] = l.JobsPerS
		}
		want := map[string]float64{
			"tenant-totals": 125, "totals-new-table": 500, "jobs-new-table": 666, "views-new-table": 2000,
			"projector-concurrency": 862, "worker-concurrency": 1092, "s3-prefix": 3500, "live-shards": 4000,
			"totals-table-max": 5000, "jobs-table-max": 6666, "views-table-max": 20000,
			"groups": math.Floor(float64(groups) / capacity.WorkerBatchSeconds), "api-gateway": 10000, "lambda-concurrency": 22271, "sqs-fifo": 350000,
		}
		require.Equal(t, want, got, "%d groups", groups)
		require.Equal(t, "tenant-totals", p.Limits[0].Key, "one tenant: its totals bind first")
		require.Contains(t, p.Limits[0].Name, "per partition-key value")
		require.Equal(t, "totals-new-table", p.Limits[1].Key)
		require.Equal(t, 125.0, p.PerTenantJobsPerS)
		require.Equal(t, 125.0, p.TenantJobsPerS)
		for i := 1; i < len(p.Limits); i++ {
			require.LessOrEqual(t, p.Limits[i-1].JobsPerS, p.Limits[i].JobsPerS, "binding order")
		}
		for _, l := range p.Limits {
			require.NotEmpty(t, l.Raise, l.Key)
			require.Contains(t, []capacity.Owner{capacity.Ours, capacity.AWSAdjustable, capacity.AWSFixed}, l.Owner, l.Key)
		}
	}
}

// A tenant's totals: shards × min(1,000 / write units a job puts on one
// partition-key value, 1,000 / those on one total item).
func TestTheTenantsTotalsScaleWithTheShards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts capacity.Counts
		shards float64
		want   float64
	}{
		{"today, 1 shard: 8 units a job on the tenant's key", todayCounts(), 1, 125},
		{"today's counts, 32 shards", todayCounts(), 32, 4000},
		{"sharded, 1 shard: 4 units a job on the key, 2 on the item", shardedCounts(), 1, 250},
		{"sharded, 20 shards: exactly the goal", shardedCounts(), 20, 5000},
		{"sharded, 32 shards", shardedCounts(), 32, 8000},
		{"sharded, 256 shards", shardedCounts(), 256, 64000},
	} {
		s := pinned(t)
		s.TotalsShards.Value = tc.shards
		p := compute(t, tc.counts, s, oneTenant)
		require.Equal(t, tc.want, byKey(p)["tenant-totals"].JobsPerS, tc.name)
		require.Equal(t, tc.want, p.TenantJobsPerS, tc.name)
		require.Contains(t, byKey(p)["tenant-totals"].Name, capacity.Num(tc.shards)+" shards", tc.name)
	}
}

// The projector's PutItem, the Totals table's shard-count record once per
// process, costs a busy process's jobs nothing: a job alone counts it,
// the model leaves it out.
func TestTheShardCountRecordIsNotPerJob(t *testing.T) {
	c := shardedCounts()
	base := compute(t, c, pinned(t), oneTenant)
	c.Paths[capacity.PathHappy]["projector"]["PutItem"] = 1
	with := compute(t, c, pinned(t), oneTenant)
	require.Equal(t, base.PerJob, with.PerJob)
	require.Equal(t, base.Limits, with.Limits)
}

// With many tenants each has its totals, and the new Totals table binds
// first: each tenant gets its share of its 500 jobs/s. At exactly four
// tenants their totals allow the same 500; theirs, listed first, binds.
func TestManyTenantsShareTheFirstLimit(t *testing.T) {
	p := compute(t, todayCounts(), pinned(t), capacity.Input{Groups: 1000, Tenants: 8, Region: "us-east-1"})
	require.Equal(t, 1000.0, byKey(p)["tenant-totals"].JobsPerS)
	require.Equal(t, "totals-new-table", p.Limits[0].Key)
	require.Equal(t, 62.0, p.PerTenantJobsPerS)
	require.Equal(t, 125.0, p.TenantJobsPerS, "each tenant's own ceiling")
	p = compute(t, todayCounts(), pinned(t), capacity.Input{Groups: 1000, Tenants: 4, Region: "us-east-1"})
	require.Equal(t, "tenant-totals", p.Limits[0].Key)
	require.Equal(t, 500.0, p.Limits[0].JobsPerS)
	require.Equal(t, 125.0, p.PerTenantJobsPerS)
}

// Each limit of ours names what raises it: the parameter and its bounds,
// or that the template lacks the parameter.
func TestOurLimitsNameTheirParameters(t *testing.T) {
	s := pinned(t)
	s.TotalsShards = capacity.Setting{Value: 32, Source: "parameter TotalsShards's default", Parameter: "TotalsShards", Range: "1 to 256"}
	k := byKey(compute(t, shardedCounts(), s, oneTenant))
	require.Contains(t, k["tenant-totals"].Raise, "raise the parameter TotalsShards (1 to 256); chosen when the Totals table is created")
	require.Contains(t, k["projector-concurrency"].Raise, "raise the parameter ProjectorMaxConcurrency (2 to 1000)")
	require.Contains(t, k["worker-concurrency"].Raise, "raise the parameter WorkerMaxConcurrency (2 to 1000)")
	require.Contains(t, k["live-shards"].Raise, "raise the parameter LiveShards (16 to 256); it may only grow")
	s.TotalsShards = capacity.Setting{Value: 1, Source: "one total item per tenant (no TotalsShards parameter in the template)"}
	k = byKey(compute(t, todayCounts(), s, oneTenant))
	require.Contains(t, k["tenant-totals"].Raise, "the parameter TotalsShards, not in the template yet")
}

// Regional quotas: API Gateway's 2,500 and SQS's smallest 2,400 (12,000
// jobs/s batched by ten, two events per job).
func TestRegionalQuotas(t *testing.T) {
	for region, want := range map[string][2]float64{
		"us-east-1": {10000, 350000}, "us-east-2": {10000, 95000}, "ap-south-1": {10000, 45000},
		"eu-west-2": {10000, 22500}, "eu-west-3": {10000, 12000}, "ap-south-2": {2500, 12000}, "eu-south-1": {2500, 12000},
	} {
		k := byKey(plan(t, committed(t), capacity.Input{Groups: 1000, Tenants: 1, Region: region}))
		require.Equal(t, want, [2]float64{k["api-gateway"].JobsPerS, k["sqs-fifo"].JobsPerS}, region)
	}
}

// A count changed in the file changes the model: the model reads the
// counts, it does not carry them. One totals transaction per job halves
// the tenant's and the Totals table's write units; the projector's events
// stay two (the views' updates).
func TestTheModelFollowsTheCounts(t *testing.T) {
	k := byKey(compute(t, shardedCounts(), pinned(t), oneTenant))
	require.Equal(t, 250.0, k["tenant-totals"].JobsPerS)
	require.Equal(t, 1000.0, k["totals-new-table"].JobsPerS)
	require.Equal(t, 862.0, k["projector-concurrency"].JobsPerS)
	c := shardedCounts()
	c.Paths[capacity.PathHappy]["projector"]["UpdateItem"] = 1
	c.Paths[capacity.PathHappy]["relay"]["SendMessageBatch"] = 2
	require.Equal(t, 1724.0, byKey(compute(t, c, pinned(t), oneTenant))["projector-concurrency"].JobsPerS, "one event a job: 10 × 10 / 58 ms")

	delete(c.Paths[capacity.PathHappy], "projector")
	_, err := capacity.Compute(c, pinned(t), oneTenant)
	require.ErrorIs(t, err, capacity.ErrInvalid, "no totals write, no events")
	require.ErrorContains(t, err, "0 totals write units per job")
}

// A request the model does not know the cost of is refused, naming it.
func TestAnUnmodelledRequestIsRefused(t *testing.T) {
	c := committed(t)
	happy := c.Paths[capacity.PathHappy].Compact()
	happy["intake"] = map[string]int{"TransactWriteItems": 1, "GetItem": 1}
	_, err := capacity.Compute(c.WithPath(capacity.PathHappy, happy), templateSettings(t), capacity.Input{Groups: 1, Tenants: 1, Region: "us-east-1"})
	require.ErrorIs(t, err, capacity.ErrInvalid)
	require.ErrorContains(t, err, "intake GetItem")

	delete(c.Paths, capacity.PathHappy)
	_, err = capacity.Compute(c, templateSettings(t), capacity.Input{Groups: 1, Tenants: 1, Region: "us-east-1"})
	require.ErrorIs(t, err, capacity.ErrInvalid)
	require.ErrorContains(t, err, `no "happy" path`)
}

// Every bad input is refused with the field it is about; 1 group and 1
// tenant (the bounds) are fine.
func TestInputValidate(t *testing.T) {
	require.NoError(t, capacity.Input{Groups: 1, Tenants: 1, Region: "eu-west-1"}.Validate())
	for _, tc := range []struct {
		in   capacity.Input
		want string
	}{
		{capacity.Input{Groups: 0, Tenants: 1, Region: "us-east-1"}, "groups 0: at least 1"},
		{capacity.Input{Groups: -5, Tenants: 1, Region: "us-east-1"}, "groups -5"},
		{capacity.Input{Groups: 1, Tenants: 0, Region: "us-east-1"}, "tenants 0: at least 1"},
		{capacity.Input{Groups: 1, Tenants: 1, Region: "mars-north-1"}, `region "mars-north-1"`},
		{capacity.Input{Groups: 1, Tenants: 1, Region: ""}, `region ""`},
		{capacity.Input{Groups: 1, Tenants: 1, Region: "cn-north-1"}, `region "cn-north-1"`},
	} {
		err := tc.in.Validate()
		require.ErrorIs(t, err, capacity.ErrInvalid, "%+v", tc.in)
		require.ErrorContains(t, err, tc.want)
		_, err = capacity.Compute(committed(t), templateSettings(t), tc.in)
		require.ErrorIs(t, err, capacity.ErrInvalid, "%+v", tc.in)
	}
}

// The counts file: what WithPath and Marshal write ParseCounts reads back;
// a count below 1, a file that is no JSON and an unknown field are refused.
func TestCountsRoundTrip(t *testing.T) {
	c := committed(t).WithPath("x", capacity.Requests{"worker": {"UpdateItem": 3}, "sweeper": {}})
	raw, err := c.Marshal()
	require.NoError(t, err)
	back, err := capacity.ParseCounts(raw)
	require.NoError(t, err)
	require.Equal(t, capacity.Requests{"worker": {"UpdateItem": 3}}, back.Paths["x"], "the functions that made none are left out")
	require.Equal(t, committed(t).Paths[capacity.PathHappy], back.Paths[capacity.PathHappy])

	_, err = capacity.ParseCounts([]byte(`{"paths":{"happy":{"intake":{"TransactWriteItems":0}}}}`))
	require.ErrorIs(t, err, capacity.ErrInvalid)
	require.ErrorContains(t, err, "intake TransactWriteItems: 0 requests")
	_, err = capacity.ParseCounts([]byte(`{`))
	require.ErrorIs(t, err, capacity.ErrInvalid)
	_, err = capacity.ParseCounts([]byte(`{"paths":{},"extra":1}`))
	require.ErrorIs(t, err, capacity.ErrInvalid, "an unknown field")
}
