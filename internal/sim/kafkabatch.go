package sim

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// consumeKafka has m run a batch, as one of its pollers does, and reports
// whether it did anything (an invocation, or records given up without
// one): the next span of a batch BisectBatchOnFunctionError split, or
// records fetched from the committed offset of one or more of a poller's
// partitions that have nothing in flight, are not waiting to be retried
// and no bisection holds.
func (w *World) consumeKafka(m *mapping) bool {
	ctx := context.Background()
	w.expire(ctx, m)
	owners, fetchable := w.fetchable(m)
	spans := m.readySpans(w.clock.Now())
	n := len(owners) + len(spans)
	if n == 0 {
		return false
	}
	i := w.rng.IntN(n)
	if i >= len(owners) {
		return w.runSpan(ctx, m, spans[i-len(owners)])
	}
	return w.fetchBatch(ctx, m, owners[i], fetchable[owners[i]])
}

// fetchable returns, per poller of m, the partitions it may fetch now,
// and the pollers that have any, in partition order. With a batching
// window, a poller is left out until its batch is ready, as pkg/localesm
// makes one: its oldest record arrived the window ago, or kafkaBatchSize
// records wait.
func (w *World) fetchable(m *mapping) ([]string, map[string][]int) {
	now := w.clock.Now()
	var owners []string
	parts := map[string][]int{}
	for p := range m.topic.Partitions() {
		if m.inflight[p] != nil || m.split[p] != nil || m.group.LagOf(p) == 0 || now.Before(m.retryAt[p]) {
			continue
		}
		o, _ := m.group.Owner(p)
		if parts[o] == nil {
			owners = append(owners, o)
		}
		parts[o] = append(parts[o], p)
	}
	if w.kafka.esm.window == 0 {
		return owners, parts
	}
	return slices.DeleteFunc(owners, func(o string) bool { return now.Before(w.windowEnd(m, parts[o])) }), parts
}

// windowEnd is when the batch of partitions ps is ready under the
// batching window: at once when kafkaBatchSize records wait, else the
// window after its oldest record arrived.
func (w *World) windowEnd(m *mapping, ps []int) time.Time {
	var oldest time.Time
	var waiting int64
	for _, p := range ps {
		from := m.group.Committed(p)
		waiting += m.topic.Partition(p).Visible(from)
		if r := m.topic.Partition(p).next(from); r != nil && (oldest.IsZero() || r.Arrived.Before(oldest)) {
			oldest = r.Arrived
		}
	}
	if waiting >= kafkaBatchSize {
		return time.Time{}
	}
	return oldest.Add(w.kafka.esm.window)
}

// take is how many records a batch takes from a partition.
type take struct{ p, n int }

// takes picks the partitions of ps a batch takes records from, and how
// many each. Without a batching window, what a poll returned: some of the
// partitions, each a few records. With one, as pkg/localesm gathers a
// batch: the partitions by their oldest record, kafkaBatchSize records
// in all.
func (w *World) takes(m *mapping, ps []int) []take {
	var out []take
	if w.kafka.esm.window == 0 {
		w.rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		ps = ps[:1+w.rng.IntN(len(ps))]
		slices.Sort(ps)
		for _, p := range ps {
			out = append(out, take{p, 1 + w.rng.IntN(kafkaBatchSize)})
		}
		return out
	}
	arrived := func(p int) time.Time { return m.topic.Partition(p).next(m.group.Committed(p)).Arrived }
	slices.SortFunc(ps, func(a, b int) int { return cmp.Or(arrived(a).Compare(arrived(b)), cmp.Compare(a, b)) })
	left := kafkaBatchSize
	for _, p := range ps {
		n := min(left, int(m.topic.Partition(p).Visible(m.group.Committed(p))))
		out = append(out, take{p, n})
		if left -= n; left == 0 {
			break
		}
	}
	return out
}

// fetchBatch has owner fetch a batch of its partitions ps and run it. The
// batch closes before its event would cross MaxRequestSize; a record
// whose event alone would is never invoked: it goes to the on-failure
// destination (MaximumPayloadSizeExceeded). Each partition's leading run
// of records past MaximumRecordAge goes there too, before the rest is
// invoked (pkg/localesm's order: the batch is made, then aged, then
// invoked).
func (w *World) fetchBatch(ctx context.Context, m *mapping, owner string, ps []int) bool {
	b := newKBatch()
	size := newEventSize(b.ev)
	closed, fetched := false, 0
	for _, tk := range w.takes(m, ps) {
		from := m.group.Committed(tk.p)
		recs := m.topic.Partition(tk.p).Fetch(from, tk.n)
		tp := kafka.TopicPartition(m.topic.Name, int64(tk.p))
		n := 0
		for _, r := range recs {
			rs := recordEventSize(r)
			if !size.fits(size.grow(tp, rs)) {
				closed = true
				break
			}
			size.add(tp, rs)
			n++
		}
		_, epoch := m.group.Owner(tk.p)
		if closed && len(b.parts) == 0 && n == 0 {
			// The oldest record alone makes an event too large.
			return w.tooLarge(ctx, m, kpart{p: tk.p, epoch: epoch, from: from, recs: recs[:1]})
		}
		if n > 0 {
			b.parts = append(b.parts, kpart{p: tk.p, epoch: epoch, from: from, recs: recs[:n]})
			fetched += n
		}
		if closed {
			w.stats.SizeClosed++
			break
		}
	}
	if w.kafka.esm.window > 0 && !closed && fetched > 0 && fetched < kafkaBatchSize {
		w.stats.WindowEnded++
	}
	expired := 0
	b.parts, expired = w.expireLeading(ctx, m, b.parts)
	if len(b.parts) == 0 {
		return expired > 0
	}
	w.start(m, b, owner) //nolint:contextcheck // the invocation's context is its own, as Lambda's is
	return true
}

// runSpan runs the next span of bisection bs: its records past
// MaximumRecordAge first go to the on-failure destination, as before
// each of pkg/localesm's attempts.
func (w *World) runSpan(ctx context.Context, m *mapping, bs *bisection) bool {
	head := bs.todo[0]
	parts := make([]kpart, 0, len(head))
	for _, sp := range head {
		_, epoch := m.group.Owner(sp.p)
		parts = append(parts, kpart{p: sp.p, epoch: epoch, from: m.group.Committed(sp.p), recs: sp.recs})
	}
	parts, _ = w.expireLeading(ctx, m, parts)
	bs.todo[0] = parts
	if len(parts) == 0 {
		m.resplit(bs)
		return true
	}
	b := newKBatch()
	b.parts, b.split = parts, bs
	owner, _ := m.group.Owner(parts[0].p)
	w.start(m, b, owner) //nolint:contextcheck // the invocation's context is its own, as Lambda's is
	return true
}

func newKBatch() *kbatch {
	return &kbatch{
		ev:    events.KafkaEvent{EventSource: "aws:kafka", EventSourceARN: clusterARN, BootstrapServers: "b-1.sim:9098", Records: map[string][]events.KafkaRecord{}},
		lanes: map[laneID][]*LogRecord{}, next: map[laneID]int{},
	}
}

// start sends b's records to m's function in an invocation of its own,
// and checks the event is one Lambda sends: at most MaxRequestSize.
func (w *World) start(m *mapping, b *kbatch, owner string) {
	for _, kp := range b.parts {
		tp := kafka.TopicPartition(m.topic.Name, int64(kp.p))
		for _, r := range kp.recs {
			b.ev.Records[tp] = append(b.ev.Records[tp], eventRecord(r))
			b.lanes[laneOf(r)] = append(b.lanes[laneOf(r)], r)
			if m.deliveries[r]++; m.deliveries[r] > 1 {
				w.stats.RecordsRedelivered++
			}
		}
	}
	ctx, inv, cancel := w.invoke(m.kind, m.timeout)
	b.inv = inv
	for _, kp := range b.parts {
		m.inflight[kp.p] = b
	}
	m.running[inv] = b
	w.logf("%s %s (%s) fetches %s", m.kind, inv.id, owner, b.describe(m))
	if n := EventSize(b.ev); n > MaxRequestSize {
		w.violate("%s %s: its event is %d bytes, over MaxRequestSize (%d): Lambda refuses such a request", m.kind, inv.id, n, MaxRequestSize)
	}
	w.spawn(inv, func() {
		defer cancel()
		w.answerKafka(ctx, m, b)
	})
}

// recordEventSize is the length of r's record in an event
// (EventRecordSize), counted without encoding its value: a record too
// large for an event is never encoded.
func recordEventSize(r *LogRecord) int {
	n := EventRecordSize(eventRecordOf(r, false))
	if len(r.Value) > 0 {
		n += len(`,"value":""`) + base64.StdEncoding.EncodedLen(len(r.Value))
	}
	return n
}

// fits reports whether the event can grow by grow bytes and stay at most
// MaxRequestSize.
func (z *eventSize) fits(grow int) bool { return z.total+grow <= MaxRequestSize }

// expireLeading gives up, in each of parts, the leading run of records
// older than MaximumRecordAge (by their timestamps) to the on-failure
// destination, as pkg/localesm does: a record exactly that old is still
// invoked, and the first record not expired ends the run, since Kafka
// timestamps need not rise with the offsets, so that no record is given
// up ahead of an earlier one still to run. It returns what is left to
// invoke, and how many records it gave up.
func (w *World) expireLeading(ctx context.Context, m *mapping, parts []kpart) ([]kpart, int) {
	age := w.kafka.esm.maxAge
	if age == 0 {
		return parts, 0
	}
	now := w.clock.Now()
	given := 0
	left := parts[:0]
	for _, kp := range parts {
		n := 0
		for n < len(kp.recs) && now.Sub(kp.recs[n].Time) > age {
			n++
		}
		if n > 0 {
			run := kp
			run.recs = kp.recs[:n]
			w.stats.Expired += n
			given += n
			if !w.giveUp(ctx, m, run, recordAgeExpired, nil) {
				continue
			}
			kp.recs, kp.from = kp.recs[n:], m.group.Committed(kp.p)
		}
		if len(kp.recs) > 0 {
			left = append(left, kp)
		}
	}
	return left, given
}

// tooLarge handles kp, one record whose event alone is over
// MaxRequestSize, which Lambda cannot invoke: past MaximumRecordAge it
// goes as expired, as pkg/localesm ages a batch before it looks at its
// size; otherwise as MaximumPayloadSizeExceeded.
func (w *World) tooLarge(ctx context.Context, m *mapping, kp kpart) bool {
	if left, n := w.expireLeading(ctx, m, []kpart{kp}); n > 0 || len(left) == 0 {
		return true
	}
	w.stats.TooLargeForEvent++
	w.giveUp(ctx, m, kp, payloadTooLarge, nil)
	return true
}

// giveUp sends kp's records, but those completed, to m's on-failure
// destination for why, and commits past them as kp's owner. Each record
// goes only after every earlier record of its partition was settled: the
// destination receives a partition's records in offset order. It reports
// whether the commit landed.
func (w *World) giveUp(ctx context.Context, m *mapping, kp kpart, why string, completed map[kafka.ItemIdentifier]bool) bool {
	for _, r := range kp.recs {
		if completed[kafka.ItemIdentifier{TopicPartition: kafka.TopicPartition(r.Topic, int64(r.Partition)), Offset: r.Offset}] {
			continue
		}
		w.checkGiveUp(ctx, m, r, why)
		m.onFailure = append(m.onFailure, &failedRecord{rec: r, why: why})
		m.excused[r] = true
		w.stats.OnFailure++
		w.logf("  %s-%d offset %d (key %s) goes to %s's on-failure destination: %s", r.Topic, r.Partition, r.Offset, r.Key, m.kind, why)
	}
	old, end := m.group.Committed(kp.p), kp.recs[len(kp.recs)-1].Offset+1
	if err := m.group.Commit(kp.p, kp.epoch, end); err != nil {
		w.fail(fmt.Errorf("the owner's commit past records given up: %w", err))
		return false
	}
	w.checkCommit(ctx, m, kp, old, end)
	return true
}

// checkGiveUp checks that record r goes to the on-failure destination
// only after every earlier record of its partition was settled (ran,
// was given up before it, or is gone or the quarantine's): the records
// before the committed offset are, by checkCommit's check, so only those
// from it up to r are read.
func (w *World) checkGiveUp(ctx context.Context, m *mapping, r *LogRecord, why string) {
	from := m.group.Committed(r.Partition)
	for _, o := range m.topic.Partition(r.Partition).Fetch(from, int(r.Offset-from)) {
		if o.Offset >= r.Offset {
			return
		}
		if !w.settled(ctx, m, o) {
			w.violate("%s: %s-%d offset %d (key %q) went to the on-failure destination (%s) before offset %d (key %q), which has not run",
				m.kind, r.Topic, r.Partition, r.Offset, r.Key, why, o.Offset, o.Key)
			return
		}
	}
}
