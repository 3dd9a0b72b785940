package projection

import (
	"context"

	"github.com/fifoworker/fifoworker/internal/base/emf"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// endedMetrics are the metrics of a job that reached status: one of
// jobs.MetricCompleted and jobs.MetricFailed, or none (cancelled, or not
// final).
func endedMetrics(status jobs.Status) []emf.Metric {
	switch status {
	case jobs.StatusCompleted:
		return []emf.Metric{{Name: jobs.MetricCompleted, Unit: emf.Count, Value: 1}}
	case jobs.StatusFailed:
		return []emf.Metric{{Name: jobs.MetricFailed, Unit: emf.Count, Value: 1}}
	}
	return nil
}

// logMetrics writes, with a FunctionName, one EMF record of what an event
// did: the job it ended (only when this event moved the cursor to the
// final version: a duplicate or an older event ends nothing, so a job is
// counted once however often its events are delivered) and the totals
// write's lost rounds, when there were any. Nothing else writes a record.
func (p *Projector) logMetrics(ctx context.Context, ended jobs.Status, conflicts int) {
	if p.function == "" {
		return
	}
	metrics := endedMetrics(ended)
	if conflicts > 0 {
		metrics = append(metrics, emf.Metric{Name: jobs.MetricTotalsConflicts, Unit: emf.Count, Value: int64(conflicts)})
	}
	if len(metrics) == 0 {
		return
	}
	emf.Record{
		Namespace: jobs.MetricsNamespace, Time: p.now(),
		Dimensions: []emf.Dimension{{Name: jobs.MetricsDimension, Value: p.function}}, Metrics: metrics,
	}.Log(ctx, p.log, "projection: metrics")
}

// endedBy is the final status the cursor reached by moving from from to
// to, or "" when it did not move to a final status now.
func endedBy(from, to Cursor) jobs.Status {
	if to.Status.Final() && !from.Status.Final() {
		return to.Status
	}
	return ""
}
