package quarantine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/fifoworker/fifoworker/pkg/fifo"
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

// BatchMetrics returns a fifo.WithMetrics hook that writes one EMF line to
// w for each batch that parked or dropped a message (nothing otherwise).
// Writes are serialised; w is typically os.Stdout, which Lambda sends to
// CloudWatch Logs.
func BatchMetrics(w io.Writer, queue string) func(fifo.BatchMetrics) {
	var mu sync.Mutex
	return func(m fifo.BatchMetrics) {
		parked, dropped := m.Count(fifo.Parked), m.Count(fifo.Dropped)
		if parked == 0 && dropped == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		_ = writeEMF(w, queue, map[string]int{MetricParked: parked, MetricDropped: dropped}, time.Now())
	}
}

// LoggedBatchMetrics is BatchMetrics written through log: each line is a
// JSON log record (a Lambda function's slog.JSONHandler on stdout) whose
// top-level _aws, Queue and metric fields make it an EMF document.
func LoggedBatchMetrics(log *slog.Logger, queue string) func(fifo.BatchMetrics) {
	return func(m fifo.BatchMetrics) {
		parked, dropped := m.Count(fifo.Parked), m.Count(fifo.Dropped)
		if parked == 0 && dropped == 0 {
			return
		}
		values := map[string]int{MetricParked: parked, MetricDropped: dropped}
		attrs := []slog.Attr{slog.Any("_aws", emfDirective(values, time.Now())), slog.String("Queue", queue)}
		for _, name := range metricNames {
			if v, ok := values[name]; ok {
				attrs = append(attrs, slog.Int(name, v))
			}
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, "quarantine: metrics", attrs...)
	}
}

// LogHeldGroups logs the number of held groups of queue as an EMF record
// (see LoggedBatchMetrics).
func LogHeldGroups(ctx context.Context, log *slog.Logger, queue string, held int) {
	log.LogAttrs(ctx, slog.LevelInfo, "quarantine: held groups",
		slog.Any("_aws", emfDirective(map[string]int{MetricHeldGroups: held}, time.Now())),
		slog.String("Queue", queue), slog.Int(MetricHeldGroups, held))
}

// HeldGroups writes the number of held groups of queue as one EMF line.
func HeldGroups(w io.Writer, queue string, held int, now time.Time) error {
	return writeEMF(w, queue, map[string]int{MetricHeldGroups: held}, now)
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

var metricNames = []string{MetricParked, MetricDropped, MetricHeldGroups}

// emfDirective is the _aws member of an EMF document carrying values.
func emfDirective(values map[string]int, now time.Time) map[string]any {
	metrics := make([]emfMetric, 0, len(values))
	for _, name := range metricNames {
		if _, ok := values[name]; ok {
			metrics = append(metrics, emfMetric{Name: name, Unit: "Count"})
		}
	}
	return map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": MetricsNamespace, "Dimensions": [][]string{{"Queue"}}, "Metrics": metrics,
		}},
	}
}

func writeEMF(w io.Writer, queue string, values map[string]int, now time.Time) error {
	doc := map[string]any{"Queue": queue, "_aws": emfDirective(values, now)}
	for name, v := range values {
		doc[name] = v
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}
