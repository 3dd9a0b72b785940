package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// errAborted answers the messages of a round whose Kafka transaction was
// aborted: none of them is visible, so none is published.
var errAborted = errors.New("sim: the round's transaction was aborted")

// drainOutbox is the relay with Config.OutboxRelay: the real
// pgsource.Relay drains job_outbox through outboxSink. A step's drain is
// bounded at random (a few jobs, a few rows of each, a few rows in all);
// the settling drains everything.
func (w *World) drainOutbox(all bool) {
	cfg := pgsource.Config{DB: w.cfg.DB, Sink: outboxSink{w}, Now: w.clock.Now, Logger: slog.New(slog.DiscardHandler)}
	if !all {
		cfg.Jobs, cfg.RowsPerJob, cfg.MaxRows = 1+w.rng.IntN(4), 1+w.rng.IntN(3), 1+w.rng.IntN(8)
	}
	r, err := pgsource.New(cfg)
	if err != nil {
		w.fail(err)
		return
	}
	rep, err := r.Drain(context.Background())
	if err != nil {
		w.fail(fmt.Errorf("the outbox relay: %w", err))
		return
	}
	if rep.Rows > 0 || rep.Failed > 0 {
		w.logf("relay: drained %d rows (%d messages, %d passes, %d jobs stopped): %s", rep.Rows, rep.Messages, rep.Passes, rep.Failed, rep.Stop)
	}
}

// outboxJobs returns the jobs with rows in job_outbox, in the order the
// jobs were created.
func (w *World) outboxJobs() []string {
	rows, err := w.cfg.DB.QueryContext(context.Background(), `SELECT DISTINCT job_id FROM job_outbox`)
	if err != nil {
		w.fail(fmt.Errorf("read the outbox's jobs: %w", err))
		return nil
	}
	defer func() { _ = rows.Close() }()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			w.fail(fmt.Errorf("read the outbox's jobs: %w", err))
			return nil
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return w.created[a] - w.created[b] })
	return ids
}

// outboxSink is the sink the outbox relay publishes through: each message
// is checked against the journal's record of its transition and sent as
// publish sends a stream record's, with the stream relay's faults where
// they mean something for an outbox. A refused send fails the message
// (the relay stops its job, and the next drain publishes the row again); a
// send whose answer is lost is published and failed all the same (the next
// drain publishes it again: unlike a stream record lost, an outbox row
// waits until its messages are acknowledged); some messages are sent
// twice. With a transactional Kafka relay a round is one transaction: a
// failure in it aborts every message of the round.
type outboxSink struct{ w *World }

var _ outbox.Sink = outboxSink{}

func (s outboxSink) Send(_ context.Context, msgs []outbox.Message, _ string) []error {
	w := s.w
	errs := make([]error, len(msgs))
	if w.relayRefuses() {
		for i := range errs {
			errs[i] = errThrottled
		}
		return errs
	}
	var written []*LogRecord
	var done []*record // the records whose last message this round acknowledged
	for i, m := range msgs {
		r := w.recordOf(m)
		if r == nil {
			errs[i] = errAborted
			continue
		}
		want := wantKinds(&r.cur)
		if !slices.Contains(want, m.Kind) || !w.checkEmitted(m, r, m.Kind) {
			w.violate("the outbox relay published %v %s; the transition emits %v", m.Kind, m.DeduplicationID, want)
			errs[i] = errAborted
			continue
		}
		times := 1
		if w.rng.IntN(8) == 0 {
			times = 2 // sent again: the relay's retry after a lost answer
			w.stats.Redelivered++
		}
		for range times {
			lr, ok := w.send(m)
			if !ok {
				errs[i] = errThrottled
				break
			}
			if lr != nil {
				written = append(written, lr)
			}
		}
		if errs[i] == nil && w.faulty && w.rng.IntN(200) == 0 {
			w.stats.LostPublishes++
			w.logf("relay: the answer to %v %s lost: its row is published again", m.Kind, m.DeduplicationID)
			errs[i] = errTimeout
		}
		if errs[i] == nil && m.Kind == want[len(want)-1] {
			done = append(done, r)
		}
	}
	if w.kafka != nil && w.kafka.txn && len(written) > 0 {
		if slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
			w.endTransaction(written, false)
			done = nil
			for i := range errs {
				errs[i] = errAborted
			}
		} else if !w.commitTransaction(written) {
			done = nil
			for i := range errs {
				errs[i] = errAborted
			}
		}
	}
	for _, r := range done {
		r.published++
	}
	return errs
}

// recordOf is the journal's record of the transition m is of; nil (a
// violation) when the journal never saw it.
func (w *World) recordOf(m outbox.Message) *record {
	s := w.streams[m.JobID]
	if s == nil || m.Version < 0 || m.Version >= int64(len(s.records)) || s.records[m.Version].cur.Version != m.Version {
		w.violate("the outbox relay published %s, a transition the journal never saw", jobs.OutboxID(m.JobID, m.Version))
		return nil
	}
	return s.records[m.Version]
}
