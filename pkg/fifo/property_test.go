package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"pgregory.net/rapid"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

type behaviour int

const (
	succeed behaviour = iota
	fail
	panics
	permanent
)

type modelMsg struct {
	id      string
	group   string // "" for a standard queue
	does    behaviour
	latency time.Duration
	// logPanics: the logger panics on this message's line when it
	// succeeded or was dead-lettered, which fails it.
	logPanics bool

	// Under a quarantine:
	kind     msgKind
	epoch    int64  // a copy's epoch
	key      string // the parked message a copy stands for
	receives int    // its ApproximateReceiveCount
	// What Done does for a copy: fail, or release the hold.
	doneFails, doneReleases bool
}

// msgKind is what the quarantine's Check says a message is.
type msgKind int

const (
	ordinary msgKind = iota
	redriven         // a redriven copy (of epoch modelMsg.epoch)
	toDrop           // a message Check says to drop
)

type modelRun struct {
	msgs        []modelMsg
	strict      bool
	concurrency int
	dlq         bool // a dead-letter queue is configured
	dlqFails    bool // its client returns an error
	dlqPanics   bool // its client panics

	quarantine bool                 // a quarantine is configured (never with a dead-letter queue)
	holds      map[string]fifo.Hold // by group, what Check says
	parkFails  map[string]bool      // by group: Park returns an error
}

const modelThreshold = 3 // the quarantine's threshold of receives

// copyKeys are the parked messages a copy may stand for and a draining
// hold may name next: the first, mostly (rapid favours it), so that copies
// run; the second, out of order.
var copyKeys = []string{"k1", "k2"}

// lanes returns the batch's lanes, each a list of message indexes in batch
// order, in the order the processor takes them: batch order of their first
// message, longest first when the concurrency bound is below their number.
func (r modelRun) lanes() [][]int {
	var lanes [][]int
	byGroup := map[string]int{}
	for i, m := range r.msgs {
		if k, ok := byGroup[m.group]; ok && m.group != "" {
			lanes[k] = append(lanes[k], i)
			continue
		}
		byGroup[m.group] = len(lanes)
		lanes = append(lanes, []int{i})
	}
	if r.concurrency > 0 && r.concurrency < len(lanes) {
		slices.SortStableFunc(lanes, func(a, b []int) int { return cmp.Compare(len(b), len(a)) })
	}
	return lanes
}

func (r modelRun) acknowledged(m modelMsg) bool {
	return !m.logPanics && (m.does == succeed || r.deadLettered(m))
}

// deadLettered reports whether m, once started, reaches the dead-letter queue.
func (r modelRun) deadLettered(m modelMsg) bool {
	return m.does == permanent && r.dlq && !r.dlqFails && !r.dlqPanics
}

// expect is the reference model. started is nil when the model decides
// which messages start (every mode but StopOnFirstFailure with parallel
// lanes, where that depends on timing); otherwise it is the observed set,
// and the model decides only the response.
func (r modelRun) expect(started map[string]bool) (failed []string, wantStarted map[string]bool) {
	wantStarted = map[string]bool{}
	sequential := r.strict && r.concurrency == 1
	stopped := false
	for _, lane := range r.lanes() {
		laneFailed := false
		for _, i := range lane {
			m := r.msgs[i]
			run := !laneFailed && (!sequential || !stopped)
			if r.strict && !sequential {
				run = run && started[m.id]
			}
			if run {
				wantStarted[m.id] = true
				if !r.acknowledged(m) {
					laneFailed, stopped = true, true
				}
			}
		}
	}
	for _, m := range r.msgs {
		if !wantStarted[m.id] || !r.acknowledged(m) {
			failed = append(failed, m.id)
		}
	}
	return failed, wantStarted
}

func drawRun(t *rapid.T) modelRun {
	n := rapid.IntRange(1, 10).Draw(t, "messages")
	groups := rapid.IntRange(1, 10).Draw(t, "groups")
	fifoQueue := rapid.Bool().Draw(t, "fifo")
	r := modelRun{
		strict:   rapid.Bool().Draw(t, "strict"),
		dlq:      rapid.Bool().Draw(t, "dlq"),
		dlqFails: rapid.Bool().Draw(t, "dlqFails"),
	}
	r.dlqPanics = !r.dlqFails && rapid.IntRange(0, 3).Draw(t, "dlqPanics") == 0
	r.concurrency = rapid.IntRange(0, n).Draw(t, "concurrency")
	r.quarantine = fifoQueue && rapid.Bool().Draw(t, "quarantine")
	if r.quarantine {
		groups = min(groups, 3) // longer lanes, which the holds change
		r.dlq = false
		r.holds, r.parkFails = map[string]fifo.Hold{}, map[string]bool{}
		for g := range groups {
			group := fmt.Sprintf("g%d", g)
			r.holds[group] = fifo.Hold{
				// Draining first: rapid favours the first values.
				State: rapid.SampledFrom([]fifo.HoldState{fifo.Draining, fifo.NotHeld, fifo.Held}).Draw(t, "hold"),
				Epoch: int64(rapid.IntRange(1, 2).Draw(t, "holdEpoch")),
				Next:  rapid.SampledFrom(copyKeys).Draw(t, "holdNext"),
			}
			r.parkFails[group] = rapid.IntRange(0, 5).Draw(t, "parkFails") == 5 // rapid favours small values
		}
	}
	for i := range n {
		m := modelMsg{
			id:        fmt.Sprintf("m%02d", i),
			does:      behaviour(rapid.IntRange(0, 9).Draw(t, "does") % 4), // half succeed
			latency:   time.Duration(rapid.IntRange(0, 2000).Draw(t, "latency_us")) * time.Microsecond,
			logPanics: rapid.IntRange(0, 7).Draw(t, "logPanics") == 0,
		}
		if fifoQueue {
			m.group = fmt.Sprintf("g%d", rapid.IntRange(0, groups-1).Draw(t, "group"))
		}
		if m.does > permanent {
			m.does = succeed
		}
		m.receives = 1
		if r.quarantine {
			// Copies mostly where the group drains, so that they run.
			draining := r.holds[m.group].State == fifo.Draining
			switch k := rapid.IntRange(0, 5).Draw(t, "kind"); {
			case k == 0 || k <= 2 && draining:
				m.kind = redriven
				m.epoch = r.holds[m.group].Epoch // mostly the hold's
				m.key = rapid.SampledFrom(copyKeys).Draw(t, "key")
				if rapid.IntRange(0, 3).Draw(t, "otherEpoch") == 3 {
					m.epoch = 3 - m.epoch
				}
				if rapid.Bool().Draw(t, "copySucceeds") {
					m.does = succeed // what a redrive is for, mostly
				}
				m.doneFails = rapid.IntRange(0, 3).Draw(t, "doneFails") == 3
				m.doneReleases = rapid.Bool().Draw(t, "doneReleases")
			case k == 5:
				m.kind = toDrop
			}
			// Mostly a first receive, sometimes at or past the threshold.
			m.receives = max(1, rapid.IntRange(-3, modelThreshold+1).Draw(t, "receives"))
		}
		r.msgs = append(r.msgs, m)
	}
	return r
}

func TestProcessorMatchesReferenceModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		ev := events.SQSEvent{}
		byID := map[string]modelMsg{}
		for _, m := range r.msgs {
			attrs := map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}
			if m.group != "" {
				attrs["MessageGroupId"] = m.group
			}
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.id, Body: m.id, Attributes: attrs, EventSourceARN: testQueueARN})
			byID[m.id] = m
		}

		var (
			mu          sync.Mutex
			started     = map[string]bool{}
			startOrder  = map[string][]string{} // lane key -> ids in start order
			running     = map[string]int{}
			overlap     []string
			now, peak   atomic.Int32
			laneOfStd   = func(m modelMsg) string { return cmp.Or(m.group, "std:"+m.id) }
			dlqMessages = &fakeDLQ{}
			order       = &eventOrder{ended: map[string]int64{}, panicsFor: map[string]bool{}}
		)
		if r.dlqFails {
			dlqMessages.err = errors.New("dlq down")
		}
		if r.dlqPanics {
			dlqMessages.panics = "dlq client bug"
		}
		for _, m := range r.msgs {
			order.panicsFor[m.id] = m.logPanics
		}
		q := r.fakeQuarantine()
		var forbidden []string // messages that started although their group's hold forbade it
		h := func(ctx context.Context, msg events.SQSMessage) error {
			m := byID[msg.MessageId]
			lane := laneOfStd(m)
			if r.quarantine {
				hold := q.HoldOf(m.group)
				mayRun := m.receives < modelThreshold &&
					(m.kind == ordinary && hold.State == fifo.NotHeld ||
						m.kind == redriven && hold.State == fifo.Draining && hold.Epoch == m.epoch && hold.Next == m.key)
				if !mayRun {
					mu.Lock()
					forbidden = append(forbidden, fmt.Sprintf("%s (%+v, group %+v)", m.id, m, hold))
					mu.Unlock()
				}
			}
			mu.Lock()
			started[m.id] = true
			startOrder[lane] = append(startOrder[lane], m.id)
			running[lane]++
			if running[lane] > 1 {
				overlap = append(overlap, m.id)
			}
			mu.Unlock()
			c := now.Add(1)
			for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
			}
			time.Sleep(m.latency)
			now.Add(-1)
			mu.Lock()
			running[lane]--
			mu.Unlock()
			order.end(m.id)
			switch m.does {
			case fail:
				return errors.New("fail")
			case panics:
				panic("panic " + m.id)
			case permanent:
				return fifo.Permanent(errors.New("permanent"))
			}
			return nil
		}
		cfg := fifo.Config{Handler: h, Concurrency: r.concurrency, Logger: slog.New(order), StopOnFirstFailure: r.strict}
		if r.dlq {
			cfg.DeadLetter = &fifo.DeadLetterQueue{Client: dlqMessages, QueueURL: dlqURL}
		}
		if r.quarantine {
			cfg.Quarantine, cfg.QuarantineThreshold = q, modelThreshold
		}
		p, err := fifo.New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		resp, err := p.Process(context.Background(), ev)
		if err != nil {
			t.Fatalf("Process: %v", err)
		}

		if len(overlap) > 0 {
			t.Fatalf("a lane ran two handlers at once: %v", overlap)
		}
		if r.concurrency > 0 && int(peak.Load()) > r.concurrency {
			t.Fatalf("%d handlers ran at once, bound is %d", peak.Load(), r.concurrency)
		}
		for lane, ids := range startOrder {
			var want []string
			for _, m := range r.msgs {
				if laneOfStd(m) == lane && started[m.id] {
					want = append(want, m.id)
				}
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("lane %s started %v, want batch order %v", lane, ids, want)
			}
		}
		if r.quarantine {
			if len(forbidden) > 0 {
				t.Fatalf("started while their group's hold forbade it: %v", forbidden)
			}
			r.checkQuarantined(t, q, started, resp)
			return
		}
		wantFailed, wantStarted := r.expect(started)
		if !maps.Equal(started, wantStarted) {
			t.Fatalf("started %v, model started %v", keys(started), keys(wantStarted))
		}
		if got := failedIDs(resp); len(got)+len(wantFailed) > 0 && !slices.Equal(got, wantFailed) {
			t.Fatalf("reported %v, model reports %v", got, wantFailed)
		}
		if r.strict && r.concurrency != 1 {
			// Timing decides how far other lanes got, but a strict run with no
			// failure at all must have run everything.
			anyFailed := false
			for id := range started {
				if !r.acknowledged(byID[id]) {
					anyFailed = true
				}
			}
			if !anyFailed && len(started) != len(r.msgs) {
				t.Fatalf("strict run without a failure started only %v", keys(started))
			}
			// The processor stops before it logs a failure. A lane checks
			// the stop after its previous handler returned, so a message
			// whose predecessor returned after that log must not start.
			if stop, ok := order.firstFailure(); ok {
				var prev = map[string]string{}
				for _, m := range r.msgs {
					lane := laneOfStd(m)
					if p, has := prev[lane]; has && started[m.id] && order.endedAt(p) > stop {
						t.Fatalf("strict: %s started although %s, before it in its lane, returned after the stop", m.id, p)
					}
					prev[lane] = m.id
				}
			}
		}
		var wantDLQ int
		for id := range started {
			if r.deadLettered(byID[id]) {
				wantDLQ++
			}
		}
		if got := len(dlqMessages.Sent()); got != wantDLQ {
			t.Fatalf("%d messages dead-lettered, want %d", got, wantDLQ)
		}
	})
}

// eventOrder puts handler returns and the processor's failure log lines on
// one sequence. It is the processor's slog handler, and panics on the line
// of a message in panicsFor that succeeded or was dead-lettered.
type eventOrder struct {
	mu        sync.Mutex
	seq       int64
	ended     map[string]int64
	failure   int64           // sequence of the first failure log line; 0: none
	panicsFor map[string]bool // read-only during Process
}

func (e *eventOrder) end(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	e.ended[id] = e.seq
}

func (e *eventOrder) endedAt(id string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended[id]
}

func (e *eventOrder) firstFailure() (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure, e.failure != 0
}

func (e *eventOrder) Enabled(context.Context, slog.Level) bool { return true }
func (e *eventOrder) WithAttrs([]slog.Attr) slog.Handler       { return e }
func (e *eventOrder) WithGroup(string) slog.Handler            { return e }

func (e *eventOrder) Handle(_ context.Context, r slog.Record) error {
	o := lanestest.Attr(r, "outcome")
	if e.panicsFor[lanestest.Attr(r, "message_id")] && (o == fifo.Succeeded.String() || o == fifo.DeadLettered.String()) {
		panic("logger bug")
	}
	failed := o == fifo.Failed.String() || o == fifo.Panicked.String()
	if failed {
		e.mu.Lock()
		e.seq++
		if e.failure == 0 {
			e.failure = e.seq
		}
		e.mu.Unlock()
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// fakeQuarantine is the quarantine the run drew: Check tells the drawn holds
// and what the copies and the messages to drop are; Park fails for the
// groups drawn so, Done for the copies drawn so, and a copy drawn to
// release the hold releases it.
func (r modelRun) fakeQuarantine() *fakeQuarantine {
	q := &fakeQuarantine{
		view:  fifo.QuarantineView{Holds: r.holds, Messages: map[string]fifo.Disposition{}},
		after: map[string]fifo.Hold{},
	}
	doneFails := map[string]bool{}
	for _, m := range r.msgs {
		switch m.kind {
		case redriven:
			q.view.Messages[m.id] = fifo.Disposition{Copy: true, Epoch: m.epoch, Key: m.key}
			if m.doneReleases {
				q.after[m.id] = fifo.Hold{}
			}
			doneFails[m.id] = m.doneFails
		case toDrop:
			q.view.Messages[m.id] = fifo.Disposition{Drop: true, Reason: "drawn"}
		}
	}
	q.script = func(c qCall) error {
		switch {
		case c.Method == "park" && r.parkFails[c.Key]:
			return errors.New("park fails")
		case c.Method == "done" && doneFails[c.Items[0]]:
			return errors.New("done fails")
		}
		return nil
	}
	return q
}

// checkQuarantined checks a run under a quarantine. The reference model
// does not follow holds; the invariants do: the fake checked the calls'
// contract and lane order, the handler that nothing ran that its group's
// hold forbade, and here, that acknowledged messages of a group are a
// prefix of its lane (after a message that is received again nothing is
// parked or dropped ahead of it), and that a message is acknowledged only
// if it succeeded (a copy's success recorded with Done), was parked, or was
// dropped.
func (r modelRun) checkQuarantined(t *rapid.T, q *fakeQuarantine, started map[string]bool, resp events.SQSEventResponse) {
	if v := q.Violations(); len(v) > 0 {
		t.Fatalf("the processor broke the quarantine's contract: %v", v)
	}
	calls := q.Snapshot()
	var all []string
	for _, m := range r.msgs {
		all = append(all, m.id)
	}
	if len(calls) == 0 || calls[0].String() != "check "+strings.Join(all, " ") {
		t.Fatalf("the first call is not one check of the whole batch: %v", calls)
	}
	parked, reheld, doneOK, doneCalled := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range calls[1:] {
		ok := c.Ended && c.Err == nil
		switch {
		case c.Method == "park" && len(c.Items) == 0:
			reheld[c.Key] = reheld[c.Key] || ok
		case c.Method == "park":
			for _, id := range c.Items {
				parked[id] = ok
			}
		case c.Method == "done":
			doneCalled[c.Items[0]], doneOK[c.Items[0]] = true, ok
		default:
			t.Fatalf("unexpected call %v", c)
		}
	}
	reported := map[string]bool{}
	for _, id := range failedIDs(resp) {
		reported[id] = true
	}
	for _, lane := range r.lanes() {
		var first string // the first message of the lane received again
		for _, i := range lane {
			m := r.msgs[i]
			if first != "" && !reported[m.id] {
				t.Fatalf("%s was acknowledged although %s, before it in its group, is received again", m.id, first)
			}
			if first == "" && reported[m.id] {
				first = m.id
			}
		}
	}
	for _, m := range r.msgs {
		acked, ran := !reported[m.id], started[m.id]
		succeeded := ran && m.does == succeed && !m.logPanics
		switch {
		case parked[m.id] && (!acked || m.kind != ordinary):
			t.Fatalf("%s (%+v) was parked, but acknowledged %v", m.id, m, acked)
		case doneCalled[m.id] != (m.kind == redriven && succeeded):
			t.Fatalf("%s (%+v, ran %v): Done called %v", m.id, m, ran, doneCalled[m.id])
		case succeeded && m.kind == ordinary && !acked:
			t.Fatalf("%s succeeded but is received again", m.id)
		case succeeded && m.kind == redriven && acked != doneOK[m.id]:
			t.Fatalf("copy %s succeeded; Done ok %v, acknowledged %v", m.id, doneOK[m.id], acked)
		case ran && m.does == permanent && !r.parkFails[m.group] && !acked:
			t.Fatalf("%s failed permanently and could be parked, but is received again", m.id)
		}
		if !acked {
			continue
		}
		var why bool
		switch {
		case ran && m.kind == ordinary:
			why = succeeded || m.does == permanent && parked[m.id]
		case ran:
			why = succeeded && doneOK[m.id] || m.does == permanent && reheld[m.group]
		default:
			why = parked[m.id] || m.kind != ordinary // parked, or dropped
		}
		if !why {
			t.Fatalf("%s (%+v, ran %v) was acknowledged, but neither succeeded, nor was parked or dropped", m.id, m, ran)
		}
	}
}
