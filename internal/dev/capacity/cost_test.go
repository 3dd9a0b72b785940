package capacity_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/capacity"
)

func usEast1(t *testing.T, counts capacity.Counts) capacity.Cost {
	t.Helper()
	p := plan(t, counts, capacity.Input{Groups: 1000, Tenants: 1, Region: "us-east-1"})
	require.NotNil(t, p.Cost, p.CostNote)
	return *p.Cost
}

func lineOf(t *testing.T, c capacity.Cost, key string) capacity.CostLine {
	t.Helper()
	for _, l := range c.Lines {
		if l.Key == key {
			return l
		}
	}
	require.FailNow(t, "no cost line", key)
	return capacity.CostLine{}
}

// Each line is its quantity per million jobs times its price, the
// quantities come from the counted requests (through what each request
// costs in units) and the template's memory sizes, and the total is the
// lines' sum: the expected figures below are recomputed from the price
// table, not copied from the output.
func TestCostIsCountsTimesPrices(t *testing.T) {
	c := usEast1(t, todayCounts())
	prices := map[string]capacity.Price{}
	for _, p := range capacity.Prices() {
		prices[p.Key] = p
	}
	const m = 1e6
	// Invocations alone: intake 1, worker 1 (one command), projector 2
	// (two events), relay 3 (one per message); at 256 MB (template.yaml's
	// Globals) for IntakeSeconds, t_w, t_p and t_p.
	gbs := 0.25 * (capacity.IntakeSeconds + capacity.WorkerBatchSeconds + 2*capacity.ProjectorBatchSeconds + 3*capacity.RelayInvocationSeconds)
	want := map[string]float64{
		"lambda-requests": 7 * m, "lambda-gb-seconds": gbs * m,
		"dynamodb-writes": (6 + 8 + 2 + 4 + 1) * m, "dynamodb-reads": 2 * m,
		"sqs-fifo-requests": 9 * m, "s3-puts": 1 * m, "s3-gets": 0, "api-gateway-requests": 1 * m,
	}
	total := 0.0
	byService := map[string]float64{}
	for key, q := range want {
		l := lineOf(t, c, key)
		require.InDelta(t, q, l.Quantity, 1e-6, key)
		require.InDelta(t, q*prices[key].USD/prices[key].Per, l.USD, 1e-9, key)
		total += l.USD
		byService[l.Service] += l.USD
	}
	require.Len(t, c.Lines, len(want))
	require.InDelta(t, total, c.TotalUSD, 1e-9)
	require.InDeltaMapValues(t, byService, c.ByService(), 1e-9)
	require.Equal(t, "us-east-1", c.Region)
}

// Doubling one request count doubles its line and leaves the others: the
// figure follows requests.json.
func TestDoublingACountDoublesItsLine(t *testing.T) {
	base := usEast1(t, todayCounts())
	c := todayCounts()
	happy := c.Paths[capacity.PathHappy].Compact()
	happy["worker"] = maps.Clone(happy["worker"])
	happy["worker"]["PutObject"] *= 2
	doubled := usEast1(t, c.WithPath(capacity.PathHappy, happy))
	for _, l := range base.Lines {
		got := lineOf(t, doubled, l.Key)
		if l.Key == "s3-puts" {
			require.InDelta(t, 2*l.USD, got.USD, 1e-9)
			require.Positive(t, l.USD)
			continue
		}
		require.InDelta(t, l.USD, got.USD, 1e-9, l.Key)
	}

	// Other counts and the lines that follow each.
	for _, tc := range []struct {
		fn   string
		ops  []string
		line string
	}{
		{"intake", []string{"TransactWriteItems"}, "api-gateway-requests"},
		{"relay", []string{"SendMessageBatch"}, "sqs-fifo-requests"},
		{"worker", []string{"BatchGetItem", "Query"}, "dynamodb-reads"}, // the counted path's only reads
	} {
		happy = c.Paths[capacity.PathHappy].Compact()
		happy[tc.fn] = maps.Clone(happy[tc.fn])
		for _, op := range tc.ops {
			happy[tc.fn][op] *= 2
		}
		doubled = usEast1(t, c.WithPath(capacity.PathHappy, happy))
		require.Greater(t, lineOf(t, base, tc.line).USD, 0.0, tc.line)
		require.InDelta(t, 2*lineOf(t, base, tc.line).USD, lineOf(t, doubled, tc.line).USD, 1e-9, "%s %v doubled", tc.fn, tc.ops)
	}
}

// A function's MemorySize (its own, else Globals') scales its GB-seconds.
func TestMemorySizeScalesGBSeconds(t *testing.T) {
	s := pinned(t)
	base := compute(t, todayCounts(), s, oneTenant)
	s.WorkerMemoryMB.Value = 512
	bigger := compute(t, todayCounts(), s, oneTenant)
	worker := 0.25 * capacity.WorkerBatchSeconds * 1e6 // 256 MB more for t_w, a million times
	require.InDelta(t, lineOf(t, *base.Cost, "lambda-gb-seconds").Quantity+worker,
		lineOf(t, *bigger.Cost, "lambda-gb-seconds").Quantity, 1e-6)

	tpl := loadTemplate(t)
	tpl.Resources["WorkerFunction"].Properties["MemorySize"] = 1024
	delete(tpl.Resources["ProjectorFunction"].Properties, "MemorySize")
	tpl.Globals["Function"].(map[string]any)["MemorySize"] = 384
	s, err := capacity.SettingsFrom(tpl)
	require.NoError(t, err)
	require.Equal(t, capacity.Setting{Value: 1024, Source: "WorkerFunction's MemorySize (a literal in the template)"}, s.WorkerMemoryMB)
	require.Equal(t, capacity.Setting{Value: 384, Source: "Globals' Function MemorySize"}, s.ProjectorMemoryMB)

	delete(tpl.Resources["WorkerFunction"].Properties, "MemorySize")
	delete(tpl.Globals["Function"].(map[string]any), "MemorySize")
	_, err = capacity.SettingsFrom(tpl)
	require.ErrorIs(t, err, capacity.ErrInvalid)
	require.ErrorContains(t, err, "MemorySize")
}

// Prices are known for us-east-1 only: another region's plan has its
// limits and no cost, with a note that says why; PricesFor refuses it.
func TestCostInAnotherRegion(t *testing.T) {
	p := plan(t, committed(t), capacity.Input{Groups: 1000, Tenants: 1, Region: "eu-west-1"})
	require.Nil(t, p.Cost)
	require.Contains(t, p.CostNote, "eu-west-1")
	require.Contains(t, p.CostNote, "us-east-1 only")
	require.NotEmpty(t, p.Limits)
	_, err := capacity.PricesFor("eu-west-1")
	require.ErrorIs(t, err, capacity.ErrNoPrices)
	_, err = capacity.PricesFor("us-east-1")
	require.NoError(t, err)
}

// Every price has a source, a date, what was read and whether AWS's own
// page confirmed the figure.
func TestPriceTableIsSourced(t *testing.T) {
	require.NotEmpty(t, capacity.PricesAsOf)
	for _, p := range capacity.Prices() {
		require.Positive(t, p.USD, p.Key)
		require.Positive(t, p.Per, p.Key)
		require.Regexp(t, `^https://aws\.amazon\.com/`, p.Source, p.Key)
		require.NotEmpty(t, p.Read, p.Key)
		require.Equal(t, capacity.PricesAsOf, p.ReadOn, p.Key)
	}
}
