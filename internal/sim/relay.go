package sim

import (
	"fmt"
	"slices"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// record is one stream record: a transition's old and new image.
type record struct {
	prev *jobs.Job // nil for a creation
	cur  jobs.Job
	// lost: the relay gave up on it (its batch went to the on-failure
	// destination, or it expired in the stream): its messages are never
	// published.
	lost      bool
	published int // how often its messages were all accepted by SQS
}

// stream is a job's stream records, in version order, and the relay's
// position in it: records before next were published or lost.
type stream struct {
	records []*record
	next    int
}

// record appends the transition to its job's stream.
func (w *World) record(before *jobs.Job, after jobs.Job) {
	s := w.streams[after.ID]
	if s == nil {
		s = &stream{}
		w.streams[after.ID] = s
	}
	var prev *jobs.Job
	if before != nil {
		b := *before
		prev = &b
	}
	s.records = append(s.records, &record{prev: prev, cur: after})
}

// pendingStreams returns the jobs with records the relay has not
// published (with the outbox relay, rows in job_outbox), in the order the
// jobs were created.
func (w *World) pendingStreams() []string {
	if w.cfg.OutboxRelay {
		return w.outboxJobs()
	}
	var ids []string
	for _, id := range w.jobIDs {
		if s := w.streams[id]; s.next < len(s.records) {
			ids = append(ids, id)
		}
	}
	return ids
}

// relay publishes stream records as the relay function does, per job in
// version order: each record's messages (outbox.FromTransition, the
// relay's own codec) go to the commands or events queue with the job as
// the group and the outbox id as the deduplication id. A job stops at a
// send SQS refuses, to resume there. Some records are published again
// (the stream delivers a batch again after a failure), and with faults on
// a few are lost (the mapping gave up on their batch).
func (w *World) relay(all bool) {
	if w.cfg.OutboxRelay {
		w.drainOutbox(all)
		return
	}
	ids := w.pendingStreams()
	if len(ids) == 0 {
		return
	}
	if !all {
		w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		ids = ids[:1+w.rng.IntN(min(len(ids), 4))]
		slices.SortFunc(ids, func(a, b string) int { return w.created[a] - w.created[b] })
	}
	for _, id := range ids {
		s := w.streams[id]
		n := len(s.records) - s.next
		if !all {
			n = 1 + w.rng.IntN(n)
		}
		for range n {
			r := s.records[s.next]
			if w.faulty && w.rng.IntN(200) == 0 {
				r.lost = true
				w.stats.LostRecords++
				w.logf("relay: %s lost", jobs.OutboxID(id, r.cur.Version))
				s.next++
				continue
			}
			if !w.publish(r) {
				break
			}
			s.next++
			if w.rng.IntN(8) == 0 {
				// Delivered again: the stream retries a batch from a record
				// before this one.
				w.stats.Redelivered++
				s.next--
				if !all {
					break
				}
				if !w.publish(r) {
					break
				}
				s.next++
			}
		}
	}
}

// publish sends a record's messages; false when SQS refused one (the
// record is sent again later, whole: SQS drops what it already took
// within its deduplication window).
func (w *World) publish(r *record) bool {
	msgs, err := outbox.FromTransition(&r.cur, r.prev)
	if err != nil {
		w.violate("the relay cannot encode %s: %v", describe(&r.cur), err)
		return false
	}
	want := wantKinds(&r.cur)
	if len(msgs) != len(want) {
		w.violate("transition %s emitted %d messages, want %d", jobs.OutboxID(r.cur.ID, r.cur.Version), len(msgs), len(want))
		return false
	}
	if w.relayRefuses() {
		return false
	}
	var written []*LogRecord // with Kafka, this publish's records
	for i, m := range msgs {
		if !w.checkEmitted(m, r, want[i]) {
			return false
		}
		lr, ok := w.send(m)
		if !ok {
			w.endTransaction(written, false)
			return false
		}
		if lr != nil {
			written = append(written, lr)
		}
	}
	if !w.commitTransaction(written) {
		return false
	}
	r.published++
	return true
}

// wantKinds is what a transition emits, in order: a command for a creation,
// a command and an event for a nudge (a run message), an event otherwise.
func wantKinds(cur *jobs.Job) []outbox.Kind {
	switch {
	case cur.Version == 0:
		return []outbox.Kind{outbox.KindCommand}
	case cur.Outbox.Type == jobs.MessageRun:
		return []outbox.Kind{outbox.KindCommand, outbox.KindEvent}
	}
	return []outbox.Kind{outbox.KindEvent}
}

// checkEmitted checks a message the relay's codec emitted for r: of kind
// want, in the job's group, under the transition's outbox id.
func (w *World) checkEmitted(m outbox.Message, r *record, want outbox.Kind) bool {
	id := jobs.OutboxID(r.cur.ID, r.cur.Version)
	if m.Kind != want || m.GroupID != r.cur.ID || m.DeduplicationID != id || m.JobID != r.cur.ID || m.Version != r.cur.Version {
		w.violate("transition %s emitted %v in group %s under %q", id, m.Kind, m.GroupID, m.DeduplicationID)
		return false
	}
	return true
}

// relayRefuses reports (and logs) that the relay produces nothing now: the
// topics grew and its count is not deployed yet.
func (w *World) relayRefuses() bool {
	if w.kafka == nil || !w.kafka.change.relayRefuses() {
		return false
	}
	w.logf("relay: the topics have %d partitions, the relay's count is %d: nothing is produced until the count is deployed", w.kafka.change.to, w.kafka.change.relay)
	return true
}

// send sends one message to its queue or topic, unless the transport
// refuses it (false). With Kafka it returns the record written.
func (w *World) send(m outbox.Message) (*LogRecord, bool) {
	id := m.DeduplicationID
	q, bodies := w.commands, w.commandBodies
	if m.Kind == outbox.KindEvent {
		q, bodies = w.evts, w.eventBodies
	}
	if b, ok := bodies[id]; ok && b != string(m.Body) {
		w.violate("%s %s was published with two bodies:\n  %s\n  %s", m.Kind, id, b, m.Body)
	}
	bodies[id] = string(m.Body)
	if err := w.sendFault(); err != nil {
		w.logf("relay: %s %s refused: %v", m.Kind, id, err)
		return nil, false
	}
	if w.kafka != nil {
		lr, err := w.kafka.topicOf(m.Kind == outbox.KindCommand).ProduceOver(w.kafka.change.relay, []byte(m.GroupID), m.Body, w.kafka.partitionCount())
		if err != nil {
			w.fail(fmt.Errorf("the relay's produce: %w", err))
			return nil, false
		}
		w.kafka.relayed = append(w.kafka.relayed, lr)
		w.logf("relay: %s %s → %s-%d offset %d", m.Kind, id, lr.Topic, lr.Partition, lr.Offset)
		return lr, true
	}
	mid, fresh := q.Send(m.GroupID, string(m.Body), m.DeduplicationID, nil)
	if !fresh {
		w.stats.Deduplicated++
	}
	w.logf("relay: %s %s → %s %s (new: %v)", m.Kind, id, q.Name, mid, fresh)
	return nil, true
}

// commitTransaction commits the relay's transaction over the records
// written, when it writes in transactions; a commit refused aborts it, and
// the record is published again later, whole.
func (w *World) commitTransaction(written []*LogRecord) bool {
	if w.kafka == nil || !w.kafka.txn || len(written) == 0 {
		return true
	}
	if err := w.sendFault(); err != nil {
		w.logf("relay: the transaction's commit refused: %v", err)
		w.endTransaction(written, false)
		return false
	}
	w.endTransaction(written, true)
	return true
}

// endTransaction ends the relay's transaction over the records written,
// when it writes in transactions: each partition written to gets the
// commit's or the abort's marker, an offset that holds no record, and an
// abort hides the records from consumers (read_committed, as Lambda's). A
// relay without transactions leaves what it wrote: a record published
// again after a refusal is a duplicate the consumers absorb.
func (w *World) endTransaction(written []*LogRecord, commit bool) {
	if w.kafka == nil || !w.kafka.txn || len(written) == 0 {
		return
	}
	marked := map[*Partition]bool{}
	for _, r := range written {
		p := w.kafka.topicOf(r.Topic == commandsTopic).Partition(r.Partition)
		if !commit {
			p.Abort(r)
			w.logf("relay: %s-%d offset %d aborted", r.Topic, r.Partition, r.Offset)
		}
		if !marked[p] {
			marked[p] = true
			p.Skip(1)
		}
	}
}

// eventOf is the event a published body holds, for the checks.
func eventOf(body string) (outbox.Event, error) {
	ev, err := outbox.DecodeEvent(body)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("an event the relay published does not decode: %w", err)
	}
	return ev, nil
}
