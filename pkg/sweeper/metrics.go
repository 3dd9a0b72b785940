package sweeper

import (
	"log/slog"
)

// MetricsNamespace is the CloudWatch namespace of the sweeper's metrics,
// written as embedded metric format (EMF) records through Config.Logger
// (on a function, JSON lines that CloudWatch Logs turns into metrics),
// with the dimension FunctionName (Config.FunctionName).
const MetricsNamespace = "fifoworker/sweeper"

// The metrics, one record per run that read the cursors (not a dry run).
const (
	// MetricRepairLag is Report.RepairLagSeconds: how far the repair
	// cursor is behind now - RepairAfter, 0 when the check keeps up. It
	// grows by the schedule's period with every run that cannot reach the
	// bound (more final jobs than a run checks, or a request that keeps
	// failing at one job); the template's alarm watches it.
	MetricRepairLag = "RepairLagSeconds"
	// MetricRecheckLag is Report.RecheckLagSeconds, the recheck's.
	MetricRecheckLag = "RecheckLagSeconds"
)

var lagMetrics = []string{MetricRepairLag, MetricRecheckLag}

// logMetrics writes the run's lags as one EMF record: its top-level _aws,
// FunctionName and metric fields make the JSON log record an EMF
// document. Nothing without a FunctionName, in a dry run, or when no
// cursor could be read.
func (r *run) logMetrics() {
	if r.function == "" || r.dry || len(r.lags) == 0 {
		return
	}
	var metrics []map[string]string
	values := make([]slog.Attr, 0, len(lagMetrics))
	for _, name := range lagMetrics {
		if v, ok := r.lags[name]; ok {
			metrics = append(metrics, map[string]string{"Name": name, "Unit": "Seconds"})
			values = append(values, slog.Int64(name, v))
		}
	}
	attrs := append([]slog.Attr{
		slog.Any("_aws", map[string]any{
			"Timestamp": r.now.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace": MetricsNamespace, "Dimensions": [][]string{{"FunctionName"}}, "Metrics": metrics,
			}},
		}),
		slog.String("FunctionName", r.function),
	}, values...)
	r.log.LogAttrs(r.ctx, slog.LevelInfo, "sweep: metrics", attrs...)
}
