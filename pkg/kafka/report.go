package kafka

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// logOutcome logs record i's outcome. A started record that failed under
// StopOnFirstFailure stops the batch first: whoever sees the log sees the
// stop. A panic in the logger fails the record, as a handler's panic does
// (a completed record becomes Panicked, and its lane fails with it), and
// the failure is logged, with its stack, if the logger still works. A
// runtime.Goexit in the logger fails the record too, without a log line:
// the lane's goroutine is replaced and the rest of the lane is skipped, as
// after a handler's Goexit.
func (b *batch) logOutcome(i int) {
	r := &b.results[i]
	exited := true
	defer func() {
		if !exited {
			return
		}
		if r.outcome.Completed() {
			r.outcome = Panicked
		}
		r.err = errors.Join(r.err, &PanicError{In: PanicInLogger, Value: goexitValue})
		if b.p.cfg.StopOnFirstFailure && r.outcome.Started() {
			b.running.Stop()
		}
	}()
	for again := false; ; again = true {
		if b.p.cfg.StopOnFirstFailure && r.outcome.Started() && !r.outcome.Completed() && !r.park {
			b.running.Stop()
		}
		pe := b.logRecord(i)
		if pe == nil || again {
			exited = false
			return // a logger that panics twice has nothing more to say
		}
		if r.outcome.Completed() {
			r.outcome = Panicked
		}
		r.err = errors.Join(r.err, pe)
	}
}

func (b *batch) logRecord(i int) *PanicError {
	if b.log == nil {
		return nil
	}
	return contained(PanicInLogger, func() {
		r, rec := &b.results[i], &b.records[i]
		ctx := context.Background()
		level := slog.LevelWarn
		switch r.outcome {
		case Panicked:
			level = slog.LevelError
		case Succeeded:
			level = slog.LevelDebug
		case Dropped:
			level = slog.LevelInfo
		}
		if !b.log.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("topic", rec.Topic),
			slog.Int64("partition", rec.Partition),
			slog.Int64("offset", rec.Offset),
			slog.String("outcome", r.outcome.String()),
			slog.Duration("duration", r.duration),
			slog.Duration("wait", r.wait),
		}
		if r.note != "" {
			attrs = append(attrs, slog.String("reason", r.note))
		}
		if r.err != nil {
			attrs = append(attrs, slog.String("error", r.err.Error()))
			var pe *PanicError
			if errors.As(r.err, &pe) && pe.Stack != nil {
				attrs = append(attrs, slog.String("stack", string(pe.Stack)))
			}
		}
		b.log.LogAttrs(ctx, level, "kafka: record", attrs...)
	})
}

// logContained logs with l, if there is one, about the batch, on Process's
// goroutine; a panic or a runtime.Goexit in the logger is dropped, as
// nothing is left to fail for it.
func logContained(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	if l != nil {
		_ = guarded(PanicInLogger, func() { l.LogAttrs(ctx, level, msg, attrs...) })
	}
}

// report logs the batch and calls the metrics hook, after every handler has
// returned.
func (b *batch) report(ctx context.Context, took time.Duration) {
	if b.log != nil {
		failed := 0
		for i := range b.results {
			if !b.results[i].outcome.Completed() {
				failed++
			}
		}
		logContained(ctx, b.log, slog.LevelInfo, "kafka: batch",
			slog.Int("records", len(b.records)), slog.Int("lanes", b.plan.Lanes()),
			slog.Int("failed", failed), slog.Duration("duration", took))
	}
	hook := b.p.cfg.Metrics
	if hook == nil {
		return
	}
	if b.handlerCx.Err() != nil {
		// The response reserve is spent (or the invocation cancelled): the
		// response must go now, a hook could make Lambda time the batch out.
		logContained(ctx, b.log, slog.LevelWarn, "kafka: metrics hook skipped: no time left before the deadline")
		return
	}
	m := BatchMetrics{Records: make([]RecordMetrics, len(b.records)), Lanes: b.plan.Lanes(), Duration: took}
	for i := range b.records {
		r := &b.results[i]
		m.Records[i] = RecordMetrics{
			TopicPartition: b.checked[i].id.TopicPartition,
			Offset:         b.checked[i].id.Offset,
			Outcome:        r.outcome,
			Wait:           r.wait,
			Duration:       r.duration,
		}
	}
	if pe := guarded(PanicInMetrics, func() { hook(m) }); pe != nil {
		logContained(ctx, b.log, slog.LevelError, "kafka: metrics hook panicked", slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
}
