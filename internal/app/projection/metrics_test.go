package projection_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// metricsAt is the clock of the metrics' records.
var metricsAt = time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)

// metricsConfig is a projector's configuration that writes metrics.
func metricsConfig() projection.ProjectorConfig {
	return projection.ProjectorConfig{FunctionName: "stack-projector", Now: func() time.Time { return metricsAt }}
}

// jobsRecord is the EMF record of one job metric with its value, its
// members in sorted order (emfRecords' order).
func jobsRecord(metric, unit string, value int64) string {
	return fmt.Sprintf(`{"FunctionName":"stack-projector","%s":%d,"_aws":{"CloudWatchMetrics":[{"Dimensions":[["FunctionName"]],`+
		`"Metrics":[{"Name":"%s","Unit":"%s"}],"Namespace":"fifoworker/jobs"}],"Timestamp":%d}}`,
		metric, value, metric, unit, metricsAt.UnixMilli())
}

func TestProjectorCountsACompletedJobOnceWhateverTheRedeliveries(t *testing.T) {
	t.Parallel()
	b := setupWith(t, metricsConfig())
	last := len(b.events) - 1
	for i := range last {
		require.NoError(t, b.handle(t, i, 1))
	}
	require.Empty(t, testenv.EMFRecords(t, b.logs.String()), "no job ended before the final event")
	require.NoError(t, b.handle(t, last, 1))
	want := []string{jobsRecord(jobs.MetricCompleted, "Count", 1)}
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))
	// The final event again (a redelivery) and an older one end nothing.
	require.NoError(t, b.handle(t, last, 2))
	require.NoError(t, b.handle(t, last-1, 2))
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))
}

func TestProjectorCountsAFailedJob(t *testing.T) {
	t.Parallel()
	b := setupWith(t, metricsConfig())
	b.events = projectiontest.Failing("job-42", "t-1")
	for i := range b.events {
		require.NoError(t, b.handle(t, i, 1))
	}
	require.NoError(t, b.handle(t, len(b.events)-1, 2))
	require.Equal(t, []string{jobsRecord(jobs.MetricFailed, "Count", 1)}, testenv.EMFRecords(t, b.logs.String()))
}

func TestProjectorCountsAJobARecoveryEnds(t *testing.T) {
	t.Parallel()
	b := setupWith(t, metricsConfig())
	require.NoError(t, b.handle(t, 0, 1))
	// Versions 2 to 5 never come; the job item is at its final version 6.
	last := len(b.events) - 1
	b.jobs.items["job-42"] = jobAt(&b.events[last])
	require.NoError(t, b.handle(t, last, projection.DefaultRecoverAfter))
	want := []string{jobsRecord(jobs.MetricCompleted, "Count", 1)}
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))
	// The final event again, and a recovery that finds the cursor final.
	require.NoError(t, b.handle(t, last, projection.DefaultRecoverAfter+1))
	_, err := projection.RecoverJob(b.ctx, b.store, new(jobAt(&b.events[last])))
	require.NoError(t, err)
	require.NoError(t, b.handle(t, 2, projection.DefaultRecoverAfter))
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))
}

func TestProjectorWritesNoMetricsWithoutAFunctionName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range b.events {
		require.NoError(t, b.handle(t, i, 1))
	}
	b.requireTotals(t, 40, 1)
	require.Empty(t, testenv.EMFRecords(t, b.logs.String()))
}

func TestProjectorCountsTheTotalsConflicts(t *testing.T) {
	t.Parallel()
	api := &scriptedDynamo{transact: []error{cancelled("None", "TransactionConflict"), cancelled("TransactionConflict", "None")}}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	b := setupWith(t, metricsConfig())
	cfg := metricsConfig()
	cfg.Store, cfg.Source, cfg.Logger = store, b.jobs, slog.New(slog.NewJSONHandler(&lockedWriter{w: b.logs}, nil))
	p, err := projection.NewProjector(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Handle(b.ctx, message(t, &b.events[1], 1)))
	require.Equal(t, []string{jobsRecord(jobs.MetricTotalsConflicts, "Count", 2)}, testenv.EMFRecords(t, b.logs.String()))
	// A round without a conflict writes no record.
	require.NoError(t, p.Handle(b.ctx, message(t, &b.events[2], 1)))
	require.Len(t, testenv.EMFRecords(t, b.logs.String()), 1)
}

// A recovery counts the rounds its totals write lost, as Apply does, and
// the projector that recovered writes them.
func TestProjectorCountsARecoverysTotalsConflicts(t *testing.T) {
	t.Parallel()
	api := &scriptedDynamo{item: cursorItem(1, 0), transact: []error{
		cancelled("ConditionalCheckFailed", "None"),      // the event's Apply: the cursor is at 1, a gap
		cancelled("None", "TransactionConflict", "None"), // the recovery's first round
	}}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	b := setupWith(t, metricsConfig())
	b.jobs.items["job-42"] = jobAt(&b.events[3])
	cfg := metricsConfig()
	cfg.Store, cfg.Source, cfg.Logger = store, b.jobs, slog.New(slog.NewJSONHandler(&lockedWriter{w: b.logs}, nil))
	p, err := projection.NewProjector(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Handle(b.ctx, message(t, &b.events[3], projection.DefaultRecoverAfter)))
	require.Len(t, api.txs, 3, "the Apply, the recovery's lost round and its next")
	require.Equal(t, []string{jobsRecord(jobs.MetricTotalsConflicts, "Count", 1)}, testenv.EMFRecords(t, b.logs.String()))
}
