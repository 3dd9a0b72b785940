package quarantine_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The simulation drives producers, a FIFO queue that follows SQS's rules
// (group lock, receive counts, redrive to a dead-letter queue after
// maxReceiveCount receives, deduplication by id), the fifo processor with
// the quarantine on a MemoryStore, failing handlers, crashes between
// steps, writes applied whose answer is lost, and operator redrives, all
// from one seed, and adversaries: operators who redrive a group again
// while one of its copies runs, or discard a parked message (between
// batches, or while its copy runs: refused), and producers who forge a
// copy of a parked message (its body, sequence and epoch, their own
// nonce). Its invariants: per group, no message is processed before an
// older one that is neither processed nor discarded, unless SQS's
// dead-letter queue took that message itself (only when the quarantine's
// store fails; a dead-lettered redriven copy excuses nothing); a
// discarded message never runs; a message runs once unless a crash, a
// lost answer or a producer's second send gives it a rightful second run;
// and at the end, once the causes are fixed and every group redriven,
// every message was processed, discarded or (the backstop) dead-lettered.

var (
	simSeed  = flag.Uint64("seed", 0, "run the quarantine simulation with this seed only")
	simSeeds = flag.Int("seeds", 300, "how many seeds the quarantine simulation runs")
)

const (
	simQueueARN   = "arn:aws:sqs:eu-west-1:123456789012:sim.fifo"
	simQueueURL   = "http://127.0.0.1:1/123456789012/sim.fifo"
	simThreshold  = 3
	simMaxReceive = 5
)

func TestSimulationKeepsEveryGroupInOrder(t *testing.T) {
	seeds := make([]uint64, 0, *simSeeds)
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := range *simSeeds {
			seeds = append(seeds, uint64(i)+1)
		}
	}
	var total simStats
	for _, seed := range seeds {
		err := simulate(seed, func(w *simWorld) error {
			total.add(w.stats)
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./pkg/quarantine -run TestSimulationKeepsEveryGroupInOrder -seed %d -v", seed, err, seed)
		}
	}
	t.Logf("%d seeds: %+v", len(seeds), total)
	if *simSeed == 0 {
		// The seeds must reach every path the invariant is about.
		for name, n := range map[string]int{
			"parked": total.Parked, "dropped": total.Dropped, "copies run": total.CopiesRun,
			"re-holds": total.Reholds, "releases": total.Releases, "crashes": total.Crashes, "dead-lettered": total.DeadLettered,
			"forged copies": total.Forged, "discards": total.Discarded,
		} {
			if n == 0 {
				t.Errorf("no seed had %s", name)
			}
		}
	}
}

type simStats struct {
	Parked, Dropped, CopiesRun, Reholds, Releases, Crashes, DeadLettered, Forged, Discarded int
}

func (s *simStats) add(o simStats) {
	s.Parked += o.Parked
	s.Dropped += o.Dropped
	s.CopiesRun += o.CopiesRun
	s.Reholds += o.Reholds
	s.Releases += o.Releases
	s.Crashes += o.Crashes
	s.DeadLettered += o.DeadLettered
	s.Forged += o.Forged
	s.Discarded += o.Discarded
}

// simMsg is a message in the simulated queue.
type simMsg struct {
	id, group, body, dedup string
	seq                    uint64
	receives               int
	attrs                  map[string]events.SQSMessageAttribute
}

// simQueue is a FIFO queue with SQS's rules, in memory.
type simQueue struct {
	mu       sync.Mutex
	msgs     []*simMsg // in sequence order
	inFlight map[string]bool
	dedup    map[string]bool
	dlq      []*simMsg
	seq      uint64
	ids      int
}

func newSimQueue() *simQueue {
	return &simQueue{inFlight: map[string]bool{}, dedup: map[string]bool{}, seq: 18_000_000_000_000_000_000 - 1}
}

func (q *simQueue) send(group, body, dedup string, attrs map[string]events.SQSMessageAttribute) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dedup[dedup] {
		return // SQS drops a repeat within its deduplication window
	}
	q.dedup[dedup] = true
	q.seq++
	q.ids++
	q.msgs = append(q.msgs, &simMsg{id: "m" + strconv.Itoa(q.ids), group: group, body: body, dedup: dedup, seq: q.seq, attrs: attrs})
}

// SendMessage is the redrive's sender.
func (q *simQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attrs := map[string]events.SQSMessageAttribute{}
	for k, v := range in.MessageAttributes {
		attrs[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	q.send(aws.ToString(in.MessageGroupId), aws.ToString(in.MessageBody), aws.ToString(in.MessageDeduplicationId), attrs)
	return &sqs.SendMessageOutput{}, nil
}

// receive returns up to 10 messages as Lambda's FIFO poller does: whole
// heads of groups that have nothing in flight, in order. A message
// received more than maxReceiveCount times goes to the dead-letter queue
// instead.
func (q *simQueue) receive(rng *rand.Rand) []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	busy := map[string]bool{}
	for _, m := range q.msgs {
		if q.inFlight[m.id] {
			busy[m.group] = true
		}
	}
	var out []events.SQSMessage
	taken := map[string]bool{}
	skip := map[string]bool{}
	for i := 0; i < len(q.msgs) && len(out) < 10; i++ {
		m := q.msgs[i]
		if busy[m.group] || skip[m.group] {
			continue
		}
		if !taken[m.group] && rng.IntN(4) == 0 {
			skip[m.group] = true // not every group is in every batch
			continue
		}
		if m.receives >= simMaxReceive {
			q.dlq = append(q.dlq, m)
			q.msgs = slices.Delete(q.msgs, i, i+1)
			i--
			continue
		}
		m.receives++
		q.inFlight[m.id] = true
		taken[m.group] = true
		out = append(out, events.SQSMessage{
			MessageId: m.id, Body: m.body, EventSourceARN: simQueueARN, MessageAttributes: m.attrs,
			Attributes: map[string]string{
				"MessageGroupId": m.group, "SequenceNumber": strconv.FormatUint(m.seq, 10),
				"MessageDeduplicationId": m.dedup, "ApproximateReceiveCount": strconv.Itoa(m.receives),
			},
		})
	}
	return out
}

// settle applies a batch response: acknowledged messages are deleted,
// the others become visible again. A crash acknowledges nothing.
func (q *simQueue) settle(batch []events.SQSMessage, failed map[string]bool, crashed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, b := range batch {
		delete(q.inFlight, b.MessageId)
		if crashed || failed[b.MessageId] {
			continue
		}
		q.msgs = slices.DeleteFunc(q.msgs, func(m *simMsg) bool { return m.id == b.MessageId })
	}
}

// flakyStore applies a write and loses its answer, or fails it before it
// is applied, now and then.
type flakyStore struct {
	quarantine.Store
	rng  *rand.Rand
	mu   *sync.Mutex
	odds int // one write in odds goes wrong; 0: never
	// outage counts the writes still to fail in a run of failures (the
	// table throttles its writes, say, while reads go on): long enough
	// for a redriven copy that cannot be held again to reach the
	// dead-letter queue, with the copies after it still to come.
	outage int
	// touch is told of the body of a parked message whose Done went
	// wrong: its copy ran, and may rightly run again.
	touch func(body string)
}

var errLost = errors.New("sim: the answer was lost")

func (f *flakyStore) fault() (before, after bool) {
	if f.odds == 0 {
		return false, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outage > 0 {
		f.outage--
		return true, false
	}
	if f.rng.IntN(f.odds*6) == 0 {
		f.outage = 4 + f.rng.IntN(16)
		return true, false
	}
	switch f.rng.IntN(f.odds) {
	case 0:
		return true, false
	case 1:
		return false, true
	}
	return false, false
}

func (f *flakyStore) Park(ctx context.Context, queue, group string, items []quarantine.Parked, hold bool, cause string, now time.Time) (quarantine.HoldRecord, error) {
	before, after := f.fault()
	if before {
		return quarantine.HoldRecord{}, errLost
	}
	h, err := f.Store.Park(ctx, queue, group, items, hold, cause, now)
	if after && err == nil {
		return quarantine.HoldRecord{}, errLost
	}
	return h, err
}

func (f *flakyStore) Done(ctx context.Context, queue, group, seq string, epoch int64, now time.Time) (quarantine.HoldRecord, error) {
	before, after := f.fault()
	if before || after {
		_, items, _ := f.Read(ctx, queue, nil, []quarantine.ItemKey{{Group: group, Sequence: seq}})
		f.touch(items[quarantine.ItemKey{Group: group, Sequence: seq}].Body)
	}
	if before {
		return quarantine.HoldRecord{}, errLost
	}
	h, err := f.Store.Done(ctx, queue, group, seq, epoch, now)
	if after && err == nil {
		return quarantine.HoldRecord{}, errLost
	}
	return h, err
}

// fate is how a message's handler behaves.
type fate struct {
	transient int  // fails this many times first
	poison    bool // fails permanently until fixed
}

type simWorld struct {
	rng     *rand.Rand
	queue   *simQueue
	store   *quarantine.MemoryStore
	q       *quarantine.Quarantine
	proc    *fifo.Processor
	op      *quarantine.Operator
	opCfg   quarantine.OperatorConfig // op's, for an operator with its own Progress
	mu      sync.Mutex
	fates   map[string]*fate // by body
	fixed   map[string]bool
	done    map[string][]int // per group, the message numbers processed, in order
	highest map[string]int   // per group, the highest number processed
	sent    map[string]int   // per group, messages sent
	err     error
	trace   []string
	stats   simStats
	// reliable: the quarantine's store never fails in this run, so no
	// message may be skipped at all: not even one that SQS dead-lettered
	// itself.
	reliable bool
	// copiesRun and reholds count, within the current batch, redriven
	// copies that succeeded and that failed again.
	copiesRun, reholds int
	// runs counts each body's successful runs; touched are the bodies a
	// crash, a lost answer or a producer's forged copy may rightly run
	// again; discarded those an operator discarded (never run).
	runs      map[string]int
	touched   map[string]bool
	discarded map[string]bool
	forged    map[string]bool
	seed      uint64
}

func (w *simWorld) touch(body string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.touched[body] = true
}

// roll is a deterministic draw for message m's k-th receive: lanes run
// one at a time, but a handler must not consume the scheduler's stream.
func (w *simWorld) roll(m *events.SQSMessage, n uint64) uint64 {
	h := w.seed*0x9e3779b97f4a7c15 ^ uint64(len(m.MessageId))
	for _, c := range m.MessageId + "#" + m.Attributes["ApproximateReceiveCount"] {
		h = h*1099511628211 ^ uint64(c)
	}
	return h % n
}

func (w *simWorld) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf(format, args...))
}

func (w *simWorld) handle(ctx context.Context, msg events.SQSMessage) error {
	_, isCopy := quarantine.ParseCopy(&msg)
	switch {
	case isCopy && w.roll(&msg, 6) == 0:
		// The operator redrives the group again while this copy runs.
		rep, err := w.op.Redrive(ctx, msg.Attributes["MessageGroupId"], false)
		w.mu.Lock()
		w.logf("redrive %s mid-copy epoch=%d sent=%d state=%s err=%v", msg.Attributes["MessageGroupId"], rep.Epoch, rep.Sent, rep.State, err)
		w.mu.Unlock()
	case isCopy && w.roll(&msg, 6) == 1:
		// The operator tries to discard this very message while its copy
		// runs (refused: the group drains).
		c, _ := quarantine.ParseCopy(&msg)
		_, _, err := w.op.Discard(ctx, msg.Attributes["MessageGroupId"], quarantine.SeqNumber(c.Sequence))
		w.mu.Lock()
		if err == nil {
			w.discarded[msg.Body] = true
		}
		w.logf("discard %s mid-copy: %v", msg.Body, err)
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	g, n := parseBody(msg.Body)
	f := w.fates[msg.Body]
	switch {
	case f.poison && !w.fixed[msg.Body]:
		if isCopy {
			w.reholds++
		}
		return fifo.Permanent(fmt.Errorf("poison %s", msg.Body))
	case f.transient > 0:
		f.transient--
		return fmt.Errorf("transient %s", msg.Body)
	}
	// The invariant, checked as it happens: every older message of the
	// group was processed, or is itself in the dead-letter queue (a
	// dead-lettered copy excuses nothing: its message stays parked).
	for k := 1; k < n; k++ {
		older := fmt.Sprintf("%s:%d", g, k)
		if !slices.Contains(w.done[g], k) && !w.discarded[older] && (w.reliable || !w.inDLQ(g, k)) {
			if w.err == nil {
				w.err = fmt.Errorf("group %s: message %d processed before message %d (processed so far: %v)", g, n, k, w.done[g])
			}
		}
	}
	if w.discarded[msg.Body] && !w.forged[msg.Body] && w.err == nil {
		w.err = fmt.Errorf("%s ran after an operator discarded it", msg.Body)
	}
	// And a message runs once, unless a crash, a lost answer or a
	// producer's second send gives it a rightful second run.
	w.runs[msg.Body]++
	if w.runs[msg.Body] > 1 && !w.touched[msg.Body] && w.reliable && w.err == nil {
		w.err = fmt.Errorf("%s ran %d times, though no crash or lost answer touched it", msg.Body, w.runs[msg.Body])
	}
	if isCopy {
		w.copiesRun++
	}
	w.done[g] = append(w.done[g], n)
	w.highest[g] = max(w.highest[g], n)
	return nil
}

// inDLQ reports whether message n of group g itself is in the dead-letter
// queue (not a redriven copy of it: the copy's parked message stays
// parked, and must still run in its place).
func (w *simWorld) inDLQ(g string, n int) bool {
	w.queue.mu.Lock()
	defer w.queue.mu.Unlock()
	body := fmt.Sprintf("%s:%d", g, n)
	for _, m := range w.queue.dlq {
		if m.body == body && !strings.HasPrefix(m.dedup, "fifoworker-redrive.") {
			return true
		}
	}
	return false
}

// count is the processor's metrics hook.
func (w *simWorld) count(m fifo.BatchMetrics) {
	w.stats.Parked += m.Count(fifo.Parked)
	w.stats.Dropped += m.Count(fifo.Dropped)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats.CopiesRun += w.copiesRun
	w.stats.Reholds += w.reholds
	w.copiesRun, w.reholds = 0, 0
}

func parseBody(body string) (string, int) {
	g, n, _ := strings.Cut(body, ":")
	k, _ := strconv.Atoi(n)
	return g, k
}

// simulate runs one seed; check, if set, inspects the world at the end.
func simulate(seed uint64, check func(*simWorld) error) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := &simWorld{
		rng: rng, queue: newSimQueue(), store: quarantine.NewMemoryStore(),
		fates: map[string]*fate{}, fixed: map[string]bool{}, done: map[string][]int{}, highest: map[string]int{}, sent: map[string]int{},
		runs: map[string]int{}, touched: map[string]bool{}, discarded: map[string]bool{}, forged: map[string]bool{}, seed: seed,
	}
	var mu sync.Mutex
	flaky := &flakyStore{Store: w.store, rng: rand.New(rand.NewPCG(seed+1, seed)), mu: &mu, touch: w.touch}
	reliable := rng.IntN(2) == 0
	w.reliable = reliable
	if !reliable {
		flaky.odds = 8
	}
	q, err := quarantine.New(quarantine.Config{Store: flaky, QueueARN: simQueueARN})
	if err != nil {
		return err
	}
	w.q = q
	// One lane at a time: an operator's redrive from inside a handler, and
	// the order of the queue's sends, then replay exactly from the seed.
	proc, err := fifo.New(fifo.Config{Handler: w.handle, Quarantine: w.q, QuarantineThreshold: simThreshold, Metrics: w.count, Concurrency: 1})
	if err != nil {
		return err
	}
	w.proc = proc
	w.opCfg = quarantine.OperatorConfig{Store: w.store, Queue: "sim.fifo", QueueURL: simQueueURL, Sender: w.queue, Bodies: memBodies{}}
	if w.op, err = quarantine.NewOperator(w.opCfg); err != nil {
		return err
	}
	groups := []string{"g1", "g2", "g3", "g4"}[:1+rng.IntN(4)]
	steps := 60 + rng.IntN(120)
	for range steps {
		switch r := rng.IntN(100); {
		case r < 40:
			w.produce(groups[rng.IntN(len(groups))])
		case r < 85:
			w.consume()
		default:
			w.redrive(false)
		}
		if w.err != nil {
			return fmt.Errorf("%w\ntrace:\n%s", w.err, strings.Join(w.trace, "\n"))
		}
	}
	// The end: the stores stop failing, every cause is fixed, and every
	// group is redriven until nothing is held or in the queue.
	flaky.odds = 0
	w.mu.Lock()
	for body := range w.fates {
		w.fixed[body] = true
	}
	w.mu.Unlock()
	for round := 0; ; round++ {
		if round > 200 {
			return fmt.Errorf("did not settle: %d messages queued\ntrace:\n%s", len(w.queue.msgs), strings.Join(w.trace, "\n"))
		}
		w.redrive(true)
		for len(w.queue.msgs) > 0 {
			w.consume()
		}
		holds, err := w.store.Holds(context.Background(), "sim.fifo")
		if err != nil {
			return err
		}
		if len(holds) == 0 && len(w.queue.msgs) == 0 {
			break
		}
	}
	if w.err != nil {
		return fmt.Errorf("%w\ntrace:\n%s", w.err, strings.Join(w.trace, "\n"))
	}
	for g, n := range w.sent {
		for k := 1; k <= n; k++ {
			if !slices.Contains(w.done[g], k) && !w.discarded[fmt.Sprintf("%s:%d", g, k)] && (reliable || !w.inDLQ(g, k)) {
				return fmt.Errorf("group %s: message %d is not processed (reliable store: %v; in the dead-letter queue: %v)\ntrace:\n%s", g, k, reliable, w.inDLQ(g, k), strings.Join(w.trace, "\n"))
			}
		}
	}
	w.stats.DeadLettered = len(w.queue.dlq)
	for _, g := range groups {
		if h, err := w.store.Hold(context.Background(), "sim.fifo", g); err == nil && h.State == quarantine.StateReleased {
			w.stats.Releases++
		}
	}
	if check != nil {
		return check(w)
	}
	return nil
}

func (w *simWorld) produce(g string) {
	w.sent[g]++
	body := fmt.Sprintf("%s:%d", g, w.sent[g])
	f := &fate{}
	switch r := w.rng.IntN(20); {
	case r < 2:
		f.poison = true
	case r < 5:
		f.transient = 1 + w.rng.IntN(simMaxReceive)
	}
	w.mu.Lock()
	w.fates[body] = f
	w.mu.Unlock()
	w.logf("send %s poison=%v transient=%d", body, f.poison, f.transient)
	w.queue.send(g, body, "d-"+body, nil)
	if w.rng.IntN(8) == 0 {
		w.forge(g)
	}
	if w.rng.IntN(10) == 0 {
		w.queue.send(g, body, "d-"+body, nil) // a producer's retry: dropped by deduplication
	}
}

func (w *simWorld) consume() {
	batch := w.queue.receive(w.rng)
	if len(batch) == 0 {
		return
	}
	resp, err := w.proc.Process(context.Background(), events.SQSEvent{Records: batch})
	crashed := err != nil || w.rng.IntN(12) == 0 // the invocation dies before its answer counts
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var ids []string
	for _, m := range batch {
		mark := ""
		if failed[m.MessageId] {
			mark = "!"
		}
		ids = append(ids, m.Body+"#"+m.Attributes["ApproximateReceiveCount"]+mark)
	}
	w.logf("batch %v crashed=%v", ids, crashed)
	if crashed {
		w.stats.Crashes++
		for _, m := range batch {
			w.touch(m.Body)
		}
	}
	w.queue.settle(batch, failed, crashed)
}

// redrive fixes some held groups' causes and redrives them; an
// interrupted redrive sends only part of what is parked.
// forge sends, as a producer could, a message that claims to be a
// redriven copy of one of the group's parked messages (the newest: were
// it taken for a copy, it would run ahead of the older ones): its body,
// its sequence number, the hold's epoch, but a nonce of the producer's
// own.
func (w *simWorld) forge(g string) {
	h, err := w.store.Hold(context.Background(), "sim.fifo", g)
	if err != nil || h.State == quarantine.StateReleased {
		return
	}
	items, _ := w.store.Messages(context.Background(), "sim.fifo", g, quarantine.StatusParked, "", 0)
	if len(items) == 0 {
		return
	}
	p := items[len(items)-1]
	nonce := fmt.Sprintf("%032x", w.rng.Uint64())
	w.touch(p.Body) // the producer sent it twice: it may rightly run twice
	w.mu.Lock()
	w.forged[p.Body] = true // and its second send runs even if the first is discarded
	w.mu.Unlock()
	w.stats.Forged++
	w.logf("forge %s as a copy of epoch %d", p.Body, max(h.Epoch, 1))
	w.queue.send(g, p.Body, quarantine.Copy{Epoch: max(h.Epoch, 1), Nonce: nonce, Sequence: p.Sequence}.DeduplicationID(), nil)
}

func (w *simWorld) redrive(all bool) {
	holds, _ := w.store.Holds(context.Background(), "sim.fifo")
	for _, h := range holds {
		if !all && w.rng.IntN(2) == 0 {
			continue
		}
		if !all && h.State == quarantine.StateHeld && w.rng.IntN(4) == 0 {
			// The operator gives up on the oldest parked message.
			items, _ := w.store.Messages(context.Background(), "sim.fifo", h.Group, quarantine.StatusParked, "", 1)
			if len(items) > 0 {
				_, _, err := w.op.Discard(context.Background(), h.Group, quarantine.SeqNumber(items[0].Sequence))
				if err == nil {
					w.mu.Lock()
					w.discarded[items[0].Body] = true
					w.mu.Unlock()
					w.stats.Discarded++
				}
				w.logf("discard %s: %v", items[0].Body, err)
			}
			continue
		}
		items, _ := w.store.Messages(context.Background(), "sim.fifo", h.Group, quarantine.StatusParked, "", 0)
		w.mu.Lock()
		for _, p := range items {
			if all || w.rng.IntN(3) > 0 {
				w.fixed[p.Body] = true
			}
		}
		w.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		cfg := w.opCfg
		if !all && w.rng.IntN(4) == 0 {
			stopAfter := w.rng.IntN(3)
			cfg.Progress = func(p quarantine.RedriveProgress) {
				if p.Sent > stopAfter {
					cancel()
				}
			}
		}
		op, err := quarantine.NewOperator(cfg)
		if err != nil {
			panic(err) // the simulation's own settings
		}
		rep, err := op.Redrive(ctx, h.Group, false)
		cancel()
		w.logf("redrive %s epoch=%d sent=%d state=%s err=%v", h.Group, rep.Epoch, rep.Sent, rep.State, err)
	}
}
