package intake

import (
	"context"

	"github.com/fifoworker/fifoworker/internal/base/emf"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// logCreated writes, with a FunctionName, the EMF record of one job
// created (jobs.MetricCreated): a create that made a new job calls it, a
// replay of the intent's job does not, so a retried request is not a
// second job on the dashboard.
func (h *Handler) logCreated(ctx context.Context) {
	if h.cfg.FunctionName == "" {
		return
	}
	emf.Record{
		Namespace: jobs.MetricsNamespace, Time: h.cfg.Now(),
		Dimensions: []emf.Dimension{{Name: jobs.MetricsDimension, Value: h.cfg.FunctionName}},
		Metrics:    []emf.Metric{{Name: jobs.MetricCreated, Unit: emf.Count, Value: 1}},
	}.Log(ctx, h.cfg.Logger, "intake: metrics")
}
