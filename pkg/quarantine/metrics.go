package quarantine

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/emf"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// MetricsNamespace is the CloudWatch namespace of the quarantine's
// metrics, written as embedded metric format (EMF) lines that CloudWatch
// Logs turns into metrics, with the dimension Queue.
const MetricsNamespace = "fifoworker/quarantine"

// The metrics.
const (
	// MetricParked counts messages parked by a batch.
	MetricParked = "MessagesParked"
	// MetricDropped counts copies and redeliveries dropped by a batch.
	MetricDropped = "MessagesDropped"
	// MetricHeldGroups is the number of held or draining groups of a queue,
	// as HeldGroups reports it (the sweeper does, on its schedule); the
	// template's alarm fires while it is above zero.
	MetricHeldGroups = "HeldGroups"
)

// BatchMetrics returns a hook for fifo.Config's Metrics that writes one EMF line to
// w for each batch that parked or dropped a message (nothing otherwise).
// Writes are serialised; w is typically os.Stdout, which Lambda sends to
// CloudWatch Logs.
func BatchMetrics(w io.Writer, queue string) func(fifo.BatchMetrics) {
	var mu sync.Mutex
	return func(m fifo.BatchMetrics) {
		r, ok := batchRecord(queue, m)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		_ = r.WriteLine(w)
	}
}

// LoggedBatchMetrics is BatchMetrics written through log: each line is a
// JSON log record (a Lambda function's slog.JSONHandler on stdout) whose
// top-level _aws, Queue and metric fields make it an EMF document.
func LoggedBatchMetrics(log *slog.Logger, queue string) func(fifo.BatchMetrics) {
	return func(m fifo.BatchMetrics) {
		if r, ok := batchRecord(queue, m); ok {
			r.Log(context.Background(), log, "quarantine: metrics")
		}
	}
}

// LoggedKafkaBatchMetrics is LoggedBatchMetrics for kafka.Config's
// Metrics: the records a Kafka batch parked or dropped, under the dimension
// Queue = topic (the name the held-groups gauge and its alarm use too).
func LoggedKafkaBatchMetrics(log *slog.Logger, topic string) func(kafka.BatchMetrics) {
	return func(m kafka.BatchMetrics) {
		if r, ok := countsRecord(topic, m.Count(kafka.Parked), m.Count(kafka.Dropped)); ok {
			r.Log(context.Background(), log, "quarantine: metrics")
		}
	}
}

// LogHeldGroups logs the number of held groups of queue, counted at now,
// as an EMF record (see LoggedBatchMetrics): the caller's clock stamps it,
// as HeldGroups', so a gauge and the run that measured it agree.
func LogHeldGroups(ctx context.Context, log *slog.Logger, queue string, held int, now time.Time) {
	heldRecord(queue, held, now).Log(ctx, log, "quarantine: held groups")
}

// HeldGroups writes the number of held groups of queue as one EMF line.
func HeldGroups(w io.Writer, queue string, held int, now time.Time) error {
	return heldRecord(queue, held, now).WriteLine(w)
}

// batchRecord is the record of a batch, and whether it parked or dropped
// anything: a batch that did neither writes no record. Both counts are
// written, 0 included.
func batchRecord(queue string, m fifo.BatchMetrics) (emf.Record, bool) {
	return countsRecord(queue, m.Count(fifo.Parked), m.Count(fifo.Dropped))
}

// countsRecord is the record of a batch that parked and dropped so many,
// and whether it did either.
func countsRecord(queue string, parked, dropped int) (emf.Record, bool) {
	if parked == 0 && dropped == 0 {
		return emf.Record{}, false
	}
	return record(queue, time.Now(),
		emf.Metric{Name: MetricParked, Unit: emf.Count, Value: int64(parked)},
		emf.Metric{Name: MetricDropped, Unit: emf.Count, Value: int64(dropped)}), true
}

func heldRecord(queue string, held int, now time.Time) emf.Record {
	return record(queue, now, emf.Metric{Name: MetricHeldGroups, Unit: emf.Count, Value: int64(held)})
}

// record is a record of the quarantine's namespace with the dimension
// Queue.
func record(queue string, now time.Time, metrics ...emf.Metric) emf.Record {
	return emf.Record{
		Namespace: MetricsNamespace, Time: now,
		Dimensions: []emf.Dimension{{Name: "Queue", Value: queue}}, Metrics: metrics,
	}
}
