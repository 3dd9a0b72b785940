package worker

import (
	"context"

	"github.com/fifoworker/fifoworker/internal/base/emf"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// logLatency writes, with a FunctionName, the EMF record of a job the
// worker's accept completed: its time from creation to completion in
// milliseconds (jobs.MetricLatency), both stamped by the job store. The
// worker measures it, not the projector, because the job's creation time
// is in the item the accept returns and in no event; an accept succeeds
// once per job (a redelivered command finds the job final and accepts
// nothing), so each completed job is one value. Jobs that fail have no
// latency: the dashboard's percentiles are those of the work done.
func (w *Worker) logLatency(ctx context.Context, job *jobs.Job) {
	if w.cfg.FunctionName == "" {
		return
	}
	emf.Record{
		Namespace: jobs.MetricsNamespace, Time: w.cfg.Now(),
		Dimensions: []emf.Dimension{{Name: jobs.MetricsDimension, Value: w.cfg.FunctionName}},
		Metrics: []emf.Metric{{Name: jobs.MetricLatency, Unit: emf.Milliseconds,
			Value: max(job.UpdatedAt.Sub(job.CreatedAt).Milliseconds(), 0)}},
	}.Log(ctx, w.log, "worker: metrics")
}
