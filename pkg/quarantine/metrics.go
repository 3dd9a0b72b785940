package quarantine

import (
	"encoding/json"
	"io"
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

// HeldGroups writes the number of held groups of queue as one EMF line.
func HeldGroups(w io.Writer, queue string, held int, now time.Time) error {
	return writeEMF(w, queue, map[string]int{MetricHeldGroups: held}, now)
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

func writeEMF(w io.Writer, queue string, values map[string]int, now time.Time) error {
	doc := map[string]any{"Queue": queue}
	metrics := make([]emfMetric, 0, len(values))
	for _, name := range []string{MetricParked, MetricDropped, MetricHeldGroups} {
		if v, ok := values[name]; ok {
			metrics = append(metrics, emfMetric{Name: name, Unit: "Count"})
			doc[name] = v
		}
	}
	doc["_aws"] = map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": MetricsNamespace, "Dimensions": [][]string{{"Queue"}}, "Metrics": metrics,
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	return err
}
