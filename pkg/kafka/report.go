package kafka

import (
	"log/slog"
	"time"
)

// AppendAttrs appends the attributes that name record i in its log line
// (lanes.Items).
func (b *batch) AppendAttrs(attrs []slog.Attr, i int) []slog.Attr {
	rec := &b.records[i]
	return append(attrs,
		slog.String("topic", rec.Topic),
		slog.Int64("partition", rec.Partition),
		slog.Int64("offset", rec.Offset),
	)
}

// ReportMetrics calls the metrics hook with the batch's metrics
// (lanes.Reporter; lanes.Batch.Report guards it).
func (b *batch) ReportMetrics(took time.Duration) {
	m := BatchMetrics{Records: make([]RecordMetrics, len(b.records)), Lanes: b.Plan.Lanes(), Duration: took}
	for i := range b.records {
		r := &b.Results[i]
		m.Records[i] = RecordMetrics{
			TopicPartition: b.checked[i].id.TopicPartition,
			Offset:         b.checked[i].id.Offset,
			Outcome:        r.Outcome,
			Wait:           r.Wait,
			Duration:       r.Duration,
		}
	}
	b.p.cfg.Metrics(m)
}
