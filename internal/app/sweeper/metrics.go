package sweeper

import (
	"github.com/fifoworker/fifoworker/internal/base/emf"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// MetricsNamespace is the CloudWatch namespace of the sweeper's metrics,
// written as embedded metric format (EMF) records through Config.Logger
// (on a function, JSON lines that CloudWatch Logs turns into metrics),
// with the dimension FunctionName (Config.FunctionName).
const MetricsNamespace = "fifoworker/sweeper"

// The metrics, one record per run (not a dry run, and only with a
// FunctionName).
const (
	// MetricRepairLag is Report.RepairLagSeconds: how far the repair
	// cursor is behind now - RepairAfter, 0 when the check keeps up. It
	// grows by the schedule's period with every run that cannot reach the
	// bound (more final jobs than a run checks, or a request that keeps
	// failing at one job); the template's alarm watches it.
	MetricRepairLag = "RepairLagSeconds"
	// MetricRecheckLag is Report.RecheckLagSeconds, the recheck's.
	MetricRecheckLag = "RecheckLagSeconds"
	// MetricUnmeasured is how many of the run's gauges it could not
	// measure, 0 included.
	MetricUnmeasured = "UnmeasuredGauges"
	// MetricPurged is Report.Purged, written only by a Sweeper with
	// Purgers: near Config.PurgeLimit run after run, expired rows come
	// faster than the runs delete them.
	MetricPurged = "PurgedRows"
)

var lagMetrics = []string{MetricRepairLag, MetricRecheckLag}

// metrics reports whether the run measures and logs its gauges: not in a
// dry run, and not without a FunctionName, the dimension's value.
func (r *run) metrics() bool { return r.function != "" && !r.dry }

// countHeld logs, for each queue the Sweeper names, how many of its groups
// the quarantine holds (quarantine.MetricHeldGroups, 0 included): the
// gauge the template's held-groups alarms watch. A count that fails is
// logged and counted as unmeasured (MetricUnmeasured); it does not fail
// the run, whose work it is not.
func (r *run) countHeld() {
	if !r.metrics() || r.quarantine == nil {
		return
	}
	for _, q := range r.queues {
		if q == "" {
			continue
		}
		holds, err := r.quarantine.Holds(r.ctx, q)
		if err != nil {
			r.unmeasured++
			r.log.ErrorContext(r.ctx, "sweep: count the held groups", "queue", q, "error", err)
			continue
		}
		quarantine.LogHeldGroups(r.ctx, r.log, q, len(holds), r.now)
	}
}

// logMetrics writes the run's lags and how many gauges it could not
// measure (a held-groups count that failed, a lag whose cursor could not
// be read or that the deadline left unwalked) as one EMF record: its
// top-level _aws, FunctionName and metric fields make the JSON log record
// an EMF document. MetricUnmeasured is written by every run that logs
// metrics, so that the alarm on it also sees runs stop.
func (r *run) logMetrics() {
	if !r.metrics() {
		return
	}
	unmeasured := r.unmeasured
	if r.projection != nil {
		unmeasured += len(lagMetrics) - len(r.lags)
	}
	metrics := make([]emf.Metric, 0, len(lagMetrics)+1)
	for _, name := range lagMetrics {
		if v, ok := r.lags[name]; ok {
			metrics = append(metrics, emf.Metric{Name: name, Unit: emf.Seconds, Value: v})
		}
	}
	metrics = append(metrics, emf.Metric{Name: MetricUnmeasured, Unit: emf.Count, Value: int64(unmeasured)})
	if len(r.purgers) > 0 {
		metrics = append(metrics, emf.Metric{Name: MetricPurged, Unit: emf.Count, Value: int64(r.r.Purged)})
	}
	emf.Record{
		Namespace: MetricsNamespace, Time: r.now,
		Dimensions: []emf.Dimension{{Name: "FunctionName", Value: r.function}}, Metrics: metrics,
	}.Log(r.ctx, r.log, "sweep: metrics")
}
