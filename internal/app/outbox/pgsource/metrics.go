package pgsource

import (
	"context"
	"database/sql"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/emf"
)

// MetricsNamespace is the CloudWatch namespace of the relay's metrics,
// written as embedded metric format (EMF) records through Config.Logger
// with the dimension FunctionName (Config.FunctionName), one record per
// Drain.
const MetricsNamespace = "fifoworker/relay"

// The metrics.
const (
	// MetricOldestAge is the age, in whole seconds by the relay's clock,
	// of the oldest job_outbox row left after a Drain (its created_at,
	// the writer's commit time), 0 when the table is empty: the PostgreSQL
	// relay's counterpart of a stream's iterator age. It grows while rows
	// wait: triggers lost or failing, a job whose publication keeps
	// failing, or more rows than the relay drains. The templates' alarm
	// watches it.
	MetricOldestAge = "OutboxOldestAgeSeconds"
	// MetricPublished is Report.Rows: the rows the Drain published.
	MetricPublished = "OutboxRowsPublished"
)

// metricsTimeout bounds the read of the oldest row: the Drain may have
// spent its context, and the metric must not outlive the invocation.
const metricsTimeout = 2 * time.Second

// logMetrics writes the Drain's metrics as one EMF record, the age of the
// oldest row only when it could be read (a failed read is logged: the
// alarm treats the missing age as breaching).
func (r *Relay) logMetrics(ctx context.Context, rep Report) {
	if r.function == "" {
		return
	}
	now := r.now()
	metrics := []emf.Metric{{Name: MetricPublished, Unit: emf.Count, Value: int64(rep.Rows)}}
	if age, err := r.oldestAge(ctx, now); err != nil {
		r.log.ErrorContext(ctx, "pgsource: read the oldest outbox row's age", "error", err)
	} else {
		metrics = append(metrics, emf.Metric{Name: MetricOldestAge, Unit: emf.Seconds, Value: age})
	}
	emf.Record{
		Namespace: MetricsNamespace, Time: now,
		Dimensions: []emf.Dimension{{Name: "FunctionName", Value: r.function}}, Metrics: metrics,
	}.Log(ctx, r.log, "pgsource: metrics")
}

// oldestAge is how many whole seconds before now the oldest job_outbox row
// was written, 0 without a row (or with one stamped after now by a writer's
// clock ahead of this one).
func (r *Relay) oldestAge(ctx context.Context, now time.Time) (int64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsTimeout)
	defer cancel()
	var oldest sql.NullInt64
	if err := r.db.QueryRowContext(ctx, `SELECT min(created_at) FROM job_outbox`).Scan(&oldest); err != nil {
		return 0, err
	}
	if !oldest.Valid {
		return 0, nil
	}
	return max(now.UnixMilli()-oldest.Int64, 0) / 1000, nil
}
