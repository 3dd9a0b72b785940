package capacity_test

import (
	"maps"
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
	p, err := capacity.Compute(counts, templateSettings(t), in)
	require.NoError(t, err)
	return p
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

// What one job costs, from the committed counts of the happy path and the
// design's table of what each request writes: docs/CAPACITY.md's "What one
// job costs".
func TestPerJobComesFromTheCountedRequests(t *testing.T) {
	p := plan(t, committed(t), capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"})
	require.Equal(t, capacity.PerJob{
		JobsWRU: 6, TotalsWRU: 8, TotalItemWRU: 4, ViewsWRU: 2, LiveWrites: 4, FinishedWrites: 1, ReadUnits: 2, S3Puts: 1,
		Commands: 1, Events: 2, APIRequests: 1,
	}, p.PerJob)
}

// The model gives docs/CAPACITY.md's figures from the counts, the quotas
// and template.yaml's defaults, in the document's order (its Jobs 660 and
// 6,600 are 4,000/6 and 40,000/6 rounded down further; its Lambda ~30,000
// is 1,000 / 35 ms).
func TestTheModelReproducesTheCapacityDocument(t *testing.T) {
	for _, groups := range []int{1000, 100_000} {
		p := plan(t, committed(t), capacity.Input{Groups: groups, Tenants: 1, Region: "us-east-1"})
		got := map[string]float64{}
		for k, l := range byKey(p) {
			got[k] = l.JobsPerS
		}
		want := map[string]float64{
			"tenant-total": 250, "totals-new-table": 500, "jobs-new-table": 666, "views-new-table": 2000,
			"projector-concurrency": 1000, "worker-concurrency": 2000, "s3-prefix": 3500, "live-shards": 4000,
			"totals-table-max": 5000, "jobs-table-max": 6666, "views-table-max": 20000,
			"groups": float64(groups) * 10, "api-gateway": 10000, "lambda-concurrency": 28571, "sqs-fifo": 350000,
		}
		require.Equal(t, want, got, "%d groups", groups)
		require.Equal(t, "tenant-total", p.Limits[0].Key, "one tenant: its total item binds first")
		require.Equal(t, "totals-new-table", p.Limits[1].Key)
		require.Equal(t, "jobs-new-table", p.Limits[2].Key)
		require.Equal(t, 250.0, p.PerTenantJobsPerS)
		for i := 1; i < len(p.Limits); i++ {
			require.LessOrEqual(t, p.Limits[i-1].JobsPerS, p.Limits[i].JobsPerS, "binding order")
		}
		for _, l := range p.Limits {
			require.NotEmpty(t, l.Raise, l.Key)
			require.Contains(t, []capacity.Owner{capacity.Ours, capacity.AWSAdjustable, capacity.AWSFixed}, l.Owner, l.Key)
		}
	}
}

// With many tenants the tenant's item allows T × 250 in all, and the new
// Totals table binds first: each tenant gets its share of 500 jobs/s.
func TestManyTenantsShareTheFirstLimit(t *testing.T) {
	p := plan(t, committed(t), capacity.Input{Groups: 1000, Tenants: 4, Region: "us-east-1"})
	require.Equal(t, 1000.0, byKey(p)["tenant-total"].JobsPerS)
	require.Equal(t, "totals-new-table", p.Limits[0].Key)
	require.Equal(t, 125.0, p.PerTenantJobsPerS)
	// At exactly two tenants the tenants' items and the Totals table allow
	// the same 500; the item, listed first, binds first.
	p = plan(t, committed(t), capacity.Input{Groups: 1000, Tenants: 2, Region: "us-east-1"})
	require.Equal(t, 500.0, p.Limits[0].JobsPerS)
	require.Equal(t, 250.0, p.PerTenantJobsPerS)
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
// counts, it does not carry them. One totals transaction per job (as if
// job.started were not counted) halves the tenant item's and the Totals
// table's write units.
func TestTheModelFollowsTheCounts(t *testing.T) {
	c := committed(t)
	happy := c.Paths[capacity.PathHappy].Compact()
	happy["projector"] = maps.Clone(happy["projector"])
	happy["projector"]["TransactWriteItems"] = 1
	happy["projector"]["UpdateItem"] = 1
	happy["relay"] = map[string]int{"SendMessageBatch": 2}
	k := byKey(plan(t, c.WithPath(capacity.PathHappy, happy), capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"}))
	require.Equal(t, 500.0, k["tenant-total"].JobsPerS)
	require.Equal(t, 1000.0, k["totals-new-table"].JobsPerS)
	require.Equal(t, 2000.0, k["projector-concurrency"].JobsPerS)
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
