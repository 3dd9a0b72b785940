package sweeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// failingCursor is a cursor whose Load fails.
type failingCursor struct{ sweeper.MemoryCursor }

func (*failingCursor) Load(context.Context) (string, error) {
	return "", errors.New("s3: 503 SlowDown")
}

// metricsByName returns the value of each gauge the run logged, by
// metric and dimension ("HeldGroups stack-events.fifo", "RepairLagSeconds").
func metricsByName(t *testing.T, logs string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, rec := range metricRecords(t, logs) {
		cw := rec["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		for _, m := range cw["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			key := name
			if q, ok := rec["Queue"].(string); ok {
				key += " " + q
			}
			out[key] = rec[name].(float64)
		}
	}
	return out
}

// A gauge the alarms watch that a run cannot measure (a held-groups count
// that fails, a repair lag whose cursor cannot be read) is not left out
// silently, which would let its alarm clear while groups are still held:
// the run reports how many gauges it could not measure, 0 included, as a
// metric of its own (UnmeasuredGauges) beside the others, and logs each
// failure. A run that measures everything reports 0 and every gauge, the
// held groups of both queues among them (0 included).
func TestAGaugeThatCannotBeMeasuredIsReportedAsAMetric(t *testing.T) {
	t.Parallel()
	q := newCountingHolds()
	b := setupRepair(t, func(c *sweeper.Config) {
		c.FunctionName = "stack-sweeper"
		c.Quarantine, c.CommandsQueue, c.EventsQueue = q, commandsQueue, eventsQueue
	})
	park(t, q, commandsQueue, "job-held", "1001", b.clock.Now())
	b.lifecycle(t, "job-1", "t-1", 1, 2, 3)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Minute)

	b.run(t, sweeper.Options{})
	require.Equal(t, map[string]float64{
		quarantine.MetricHeldGroups + " " + commandsQueue: 1,
		quarantine.MetricHeldGroups + " " + eventsQueue:   0,
		sweeper.MetricRepairLag:                           0,
		sweeper.MetricRecheckLag:                          0,
		sweeper.MetricUnmeasured:                          0,
	}, metricsByName(t, b.logs.String()))

	// The events queue's holds cannot be counted, the repair cursor cannot
	// be read: two gauges unmeasured.
	q.failHolds[eventsQueue] = errors.New("dynamodb: 500")
	b.cfg.RepairCursor = &failingCursor{}
	failing, err := sweeper.New(b.cfg)
	require.NoError(t, err)
	since := len(b.logs.String())
	_, err = failing.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "503 SlowDown", "an unreadable cursor fails the run, as before")
	require.Equal(t, map[string]float64{
		quarantine.MetricHeldGroups + " " + commandsQueue: 1,
		sweeper.MetricRecheckLag:                          0,
		sweeper.MetricUnmeasured:                          2,
	}, metricsByName(t, b.logs.String()[since:]))
	require.Contains(t, b.logs.String()[since:], `"msg":"sweep: count the held groups","queue":"stack-events.fifo"`)

	// A dry run, and a Sweeper without a FunctionName, measure and log
	// nothing.
	since = len(b.logs.String())
	b.run(t, sweeper.Options{DryRun: true})
	require.Empty(t, metricRecords(t, b.logs.String()[since:]))
	require.Equal(t, 2, q.holds[commandsQueue], "counted by the two runs with metrics only")
}
