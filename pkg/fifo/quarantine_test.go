package fifo_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// qCall is one call the processor made to a fakeQuarantine: Key is the
// group, Items the message ids (check's and park's messages, done's copy).
type qCall = lanestest.Call

// fakeQuarantine is a scripted fifo.Quarantine that records every call.
//
// Check returns view. Park and Done then follow each group's hold from
// there, as a store would: Park with hold makes it Held (keeping its
// epoch), Park without leaves it, and Done sets it to after[copy id] when
// the test gave one, else leaves it. script, when set, sees every call
// first (concurrently, from the lanes): an error it returns is the call's
// error, and it may panic or call runtime.Goexit instead.
//
// The fake also checks what the interface promises and what the processor
// promises about its calls; RequireSound fails the test on a breach.
type fakeQuarantine struct {
	lanestest.CallLog
	view   fifo.QuarantineView
	after  map[string]fifo.Hold
	script func(c qCall) error

	// Each group's hold and lane order, guarded by the CallLog's lock.
	lanestest.HeldKeys[string, fifo.Hold]
}

func ids(msgs []*events.SQSMessage) []string {
	return lanestest.Names(msgs, func(m *events.SQSMessage) string { return m.MessageId })
}

func groupOf(m *events.SQSMessage) string { return m.Attributes["MessageGroupId"] }

func (q *fakeQuarantine) Check(ctx context.Context, msgs []*events.SQSMessage) (fifo.QuarantineView, error) {
	c := &qCall{Method: "check", Items: ids(msgs), CtxErr: ctx.Err()}
	err := q.Do(c, q.script, func() {
		groups := make([]string, len(msgs))
		for i, m := range msgs {
			if groups[i] = groupOf(m); groups[i] == "" {
				q.Violate("check got %s, which has no group", m.MessageId)
			}
		}
		q.Checked(&q.CallLog, c.Items, groups, q.view.Holds)
	}, func() {})
	if err != nil {
		return fifo.QuarantineView{}, err
	}
	return q.view, nil
}

func (q *fakeQuarantine) Park(ctx context.Context, group string, msgs []*events.SQSMessage, cause error, hold bool) (fifo.Hold, error) {
	c := &qCall{Method: "park", Key: group, Items: ids(msgs), Cause: cause, Hold: hold, CtxErr: ctx.Err()}
	var got fifo.Hold
	err := q.Do(c, q.script, func() {
		q.InLaneOrder(&q.CallLog, group, c.Items)
		for _, m := range msgs {
			if d, ok := q.view.Messages[m.MessageId]; ok {
				q.Violate("park got %s, which check said to handle as %+v", m.MessageId, d)
			}
		}
		switch cur := q.Holds[group]; {
		case len(msgs) == 0 && !hold:
			q.Violate("park of group %s with neither messages nor hold", group)
		case hold && cause == nil:
			q.Violate("park of group %s holds it without a cause", group)
		case !hold && cur.State == fifo.NotHeld:
			q.Violate("park of group %s without hold, but the group is not held", group)
		case !hold && cause != nil:
			q.Violate("park of group %s without hold has cause %v", group, cause)
		}
	}, func() {
		if hold {
			q.Holds[group] = fifo.Hold{State: fifo.Held, Epoch: q.Holds[group].Epoch, Next: q.Holds[group].Next}
		}
		got = q.Holds[group]
	})
	return got, err
}

func (q *fakeQuarantine) Done(ctx context.Context, group string, msg *events.SQSMessage) (fifo.Hold, error) {
	c := &qCall{Method: "done", Key: group, Items: []string{msg.MessageId}, CtxErr: ctx.Err()}
	var got fifo.Hold
	err := q.Do(c, q.script, func() {
		q.InLaneOrder(&q.CallLog, group, c.Items)
		d := q.view.Messages[msg.MessageId]
		if cur := q.Holds[group]; !d.Copy || cur.State != fifo.Draining || cur.Epoch != d.Epoch || cur.Next != d.Key {
			q.Violate("done for %s (%+v) while group %s is %+v", msg.MessageId, d, group, cur)
		}
	}, func() {
		if h, ok := q.after[msg.MessageId]; ok {
			q.Holds[group] = h
		}
		got = q.Holds[group]
	})
	return got, err
}

// HoldOf is group's hold as the calls so far left it.
func (q *fakeQuarantine) HoldOf(group string) fifo.Hold {
	q.Lock()
	defer q.Unlock()
	return q.Holds[group]
}

func held(epoch int64) fifo.Hold     { return fifo.Hold{State: fifo.Held, Epoch: epoch} }
func draining(epoch int64) fifo.Hold { return fifo.Hold{State: fifo.Draining, Epoch: epoch} }

func copyOf(epoch int64) fifo.Disposition { return fifo.Disposition{Copy: true, Epoch: epoch} }

// errPanics makes the test handler panic; errGoexit makes it call
// runtime.Goexit.
var (
	errPanics = lanestest.ErrPanics
	errGoexit = lanestest.ErrGoexit
)

// qRun is what one Process call under a quarantine did.
type qRun struct {
	resp    events.SQSEventResponse
	started []string // handler starts, in order (lanes may interleave)
	metrics fifo.BatchMetrics
	logs    *logBuffer
}

// outcomes returns each message's outcome, from the metrics hook.
func (r qRun) outcomes() map[string]fifo.Outcome {
	out := map[string]fifo.Outcome{}
	for _, m := range r.metrics.Messages {
		out[m.MessageID] = m.Outcome
	}
	return out
}

// lines returns the log lines about message id, in order.
func (r qRun) lines(t *testing.T, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range r.logs.Records(t) {
		if rec["message_id"] == id {
			out = append(out, rec)
		}
	}
	return out
}

// startedIn returns the handler starts of group, in order.
func (r qRun) startedIn(group string) []string {
	out := []string{}
	for _, id := range r.started {
		if strings.HasPrefix(id, group) {
			out = append(out, id)
		}
	}
	return out
}

const testThreshold = 3

// runQuarantine processes ev under q (threshold testThreshold) with a
// handler that returns does[id] (errPanics: it panics), logging and
// collecting metrics, and checks the fake's contract. Each adjust changes
// the processor's Config first.
func runQuarantine(t *testing.T, q *fakeQuarantine, ev events.SQSEvent, does map[string]error, adjust ...func(*fifo.Config)) qRun {
	t.Helper()
	var rec recorder
	r := qRun{logs: &logBuffer{}}
	cfg := fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		return lanestest.Act(msg.MessageId, does[msg.MessageId])
	}, Quarantine: q, QuarantineThreshold: testThreshold, Logger: r.logs.Logger(), Metrics: func(m fifo.BatchMetrics) { r.metrics = m }}
	for _, a := range adjust {
		a(&cfg)
	}
	var err error
	r.resp, err = newProcessor(t, cfg).Process(context.Background(), ev)
	require.NoError(t, err)
	r.started = rec.Started()
	q.RequireSound(t)
	return r
}

// withReceives sets the ApproximateReceiveCount of the messages named.
func withReceives(ev events.SQSEvent, counts map[string]string) events.SQSEvent {
	for i := range ev.Records {
		if n, ok := counts[ev.Records[i].MessageId]; ok {
			ev.Records[i].Attributes["ApproximateReceiveCount"] = n
		}
	}
	return ev
}

// A permanent failure holds its group and parks the message with every
// later message of its lane, in one Park call, in lane order; the lane's
// earlier messages and the other lanes are untouched.
func TestQuarantinePermanentFailureParksTheRestOfItsLane(t *testing.T) {
	t.Parallel()
	malformed := fifo.Permanent(errors.New("malformed body"))
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, batchOf(t, "a1", "b1", "a2", "-x", "a3", "b2", "a4"), map[string]error{"a2": malformed})

	require.Empty(t, r.resp.BatchItemFailures, "parked messages are acknowledged")
	require.Equal(t, []string{"a1", "a2"}, r.startedIn("a"), "a3 and a4 are parked without running")
	require.Equal(t, []string{"b1", "b2"}, r.startedIn("b"))
	require.Contains(t, r.started, "x")
	require.Equal(t, []string{"check a1 b1 a2 a3 b2 a4"}, q.Of(""), "check gets the grouped messages, in batch order")
	require.Equal(t, []string{"park a2 a3 a4 hold"}, q.Of("a"))
	require.ErrorIs(t, q.Nth(t, "a", 0).Cause, malformed, "the group is held because of the handler's error")
	require.Empty(t, q.Of("b"))
	require.Equal(t, map[string]fifo.Outcome{
		"a1": fifo.Succeeded, "b1": fifo.Succeeded, "a2": fifo.Parked, "x": fifo.Succeeded,
		"a3": fifo.Parked, "b2": fifo.Succeeded, "a4": fifo.Parked,
	}, r.outcomes())
}

// A hold made by a lane's first message parks the rest of the lane in the
// same batch, in the same call. A copy or a message Check said to drop,
// in between, is not parked: it is dropped.
func TestQuarantineHoldByTheFirstMessageParksTheWholeLane(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: fifo.QuarantineView{Messages: map[string]fifo.Disposition{
		"ac1": copyOf(1),
		"ad":  {Drop: true, Reason: "a copy of a parked message already processed"},
	}}}
	r := runQuarantine(t, q, batchOf(t, "a1", "a2", "ac1", "b1", "ad", "a3"),
		map[string]error{"a1": fifo.Permanent(errors.New("unknown command"))})

	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"a1"}, r.startedIn("a"))
	require.Equal(t, []string{"park a1 a2 a3 hold"}, q.Of("a"))
	require.Equal(t, map[string]fifo.Outcome{
		"a1": fifo.Parked, "a2": fifo.Parked, "ac1": fifo.Dropped, "b1": fifo.Succeeded, "ad": fifo.Dropped, "a3": fifo.Parked,
	}, r.outcomes())
}

// A message whose receive count has reached the threshold is parked, with
// the rest of its lane, before it runs: it has failed that often already.
func TestQuarantineThresholdParksBeforeTheMessageRuns(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	ev := withReceives(batchOf(t, "a1", "a2", "a3", "b1", "b2", "c1"), map[string]string{
		"a2": "3", // the threshold
		"b1": "2", // below it: it runs
		"c1": "7", // above it
	})
	r := runQuarantine(t, q, ev, nil)

	require.Empty(t, r.resp.BatchItemFailures)
	require.ElementsMatch(t, []string{"a1", "b1", "b2"}, r.started)
	require.Equal(t, []string{"park a2 a3 hold"}, q.Of("a"))
	require.Equal(t, []string{"park c1 hold"}, q.Of("c"))
	require.Empty(t, q.Of("b"))
	cause := q.Nth(t, "a", 0).Cause
	require.ErrorIs(t, cause, fifo.ErrQuarantineThreshold)
	require.Contains(t, cause.Error(), "3 receives, threshold 3")
	require.ErrorIs(t, q.Nth(t, "c", 0).Cause, fifo.ErrQuarantineThreshold)
	require.Equal(t, fifo.Parked, r.outcomes()["a2"])
	require.Zero(t, r.metrics.Messages[1].Duration, "a2 never ran")
}

// A threshold of 2 parks a message on its second receive.
func TestQuarantineThresholdOfTwo(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	var ran atomic.Int32
	p := newProcessor(t, fifo.Config{
		Handler:             func(context.Context, events.SQSMessage) error { ran.Add(1); return nil },
		Quarantine:          q,
		QuarantineThreshold: 2,
	})
	resp, err := p.Process(context.Background(), withReceives(batchOf(t, "a1"), map[string]string{"a1": "2"}))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Zero(t, ran.Load())
	require.Equal(t, []string{"park a1 hold"}, q.Of("a"))
}

// A held group's messages are parked in one call, without a cause: they
// join what is parked. A copy of the hold's epoch is dropped (the group
// is not draining), so is a message Check said to drop.
func TestQuarantineHeldGroupParksEveryOrdinaryMessage(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: fifo.QuarantineView{
		Holds: map[string]fifo.Hold{"a": held(2)},
		Messages: map[string]fifo.Disposition{
			"ac1": copyOf(2),
			"ad":  {Drop: true, Reason: "a redelivery of a message parked before its group's hold was released"},
		},
	}}
	ev := withReceives(batchOf(t, "a1", "b1", "ac1", "a2", "ad", "a3"), map[string]string{"a3": "9"})
	r := runQuarantine(t, q, ev, map[string]error{"a1": errors.New("would fail")})

	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"b1"}, r.started)
	require.Equal(t, []string{"park a1 a2 a3"}, q.Of("a"), "a3's receive count does not matter: the group is held")
	require.NoError(t, q.Nth(t, "a", 0).Cause)
	require.Equal(t, map[string]fifo.Outcome{
		"a1": fifo.Parked, "b1": fifo.Succeeded, "ac1": fifo.Dropped, "a2": fifo.Parked, "ad": fifo.Dropped, "a3": fifo.Parked,
	}, r.outcomes())
}

// While a group drains, the copies of its epoch run in order, and each
// success is recorded with Done; an ordinary message before them, which
// arrived after the hold, is parked (behind the parked messages the
// copies stand for).
func TestQuarantineDrainingGroupRunsItsCopies(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: fifo.QuarantineView{
		Holds:    map[string]fifo.Hold{"a": draining(4)},
		Messages: map[string]fifo.Disposition{"ac1": copyOf(4), "ac2": copyOf(4)},
	}}
	r := runQuarantine(t, q, batchOf(t, "a4", "ac1", "b1", "ac2"), nil)

	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"ac1", "ac2"}, r.startedIn("a"))
	require.Equal(t, []string{"park a4", "done ac1", "done ac2"}, q.Of("a"))
	require.Equal(t, map[string]fifo.Outcome{
		"a4": fifo.Parked, "ac1": fifo.Succeeded, "b1": fifo.Succeeded, "ac2": fifo.Succeeded,
	}, r.outcomes())
}

// The processor follows the hold each Done returns: released, the lane's
// later ordinary messages run; still draining, they are parked, each Park
// taking the messages up to the next copy that runs.
func TestQuarantineFollowsTheHoldDoneReturns(t *testing.T) {
	t.Parallel()
	view := func() fifo.QuarantineView {
		return fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": draining(1)},
			Messages: map[string]fifo.Disposition{"ac1": copyOf(1), "ac2": copyOf(1)},
		}
	}
	batch := []string{"ac1", "a5", "a6", "ac2", "a7"}
	cases := []struct {
		name     string
		after    map[string]fifo.Hold
		calls    []string
		started  []string
		outcomes map[string]fifo.Outcome
	}{
		{
			name:    "the first Done releases",
			after:   map[string]fifo.Hold{"ac1": {}},
			calls:   []string{"done ac1"},
			started: []string{"ac1", "a5", "a6", "a7"},
			// ac2 comes after the release: its parked message is gone.
			outcomes: map[string]fifo.Outcome{"ac1": fifo.Succeeded, "a5": fifo.Succeeded, "a6": fifo.Succeeded, "ac2": fifo.Dropped, "a7": fifo.Succeeded},
		},
		{
			name:     "still draining",
			calls:    []string{"done ac1", "park a5 a6", "done ac2", "park a7"},
			started:  []string{"ac1", "ac2"},
			outcomes: map[string]fifo.Outcome{"ac1": fifo.Succeeded, "a5": fifo.Parked, "a6": fifo.Parked, "ac2": fifo.Succeeded, "a7": fifo.Parked},
		},
		{
			name:     "the second Done releases",
			after:    map[string]fifo.Hold{"ac2": {}},
			calls:    []string{"done ac1", "park a5 a6", "done ac2"},
			started:  []string{"ac1", "ac2", "a7"},
			outcomes: map[string]fifo.Outcome{"ac1": fifo.Succeeded, "a5": fifo.Parked, "a6": fifo.Parked, "ac2": fifo.Succeeded, "a7": fifo.Succeeded},
		},
		{
			name:     "an operator held the group again",
			after:    map[string]fifo.Hold{"ac1": held(1)},
			calls:    []string{"done ac1", "park a5 a6 a7"},
			started:  []string{"ac1"},
			outcomes: map[string]fifo.Outcome{"ac1": fifo.Succeeded, "a5": fifo.Parked, "a6": fifo.Parked, "ac2": fifo.Dropped, "a7": fifo.Parked},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{view: view(), after: tc.after}
			r := runQuarantine(t, q, batchOf(t, batch...), nil)
			require.Empty(t, r.resp.BatchItemFailures)
			require.Equal(t, tc.calls, q.Of("a"))
			require.Equal(t, tc.started, r.started)
			require.Equal(t, tc.outcomes, r.outcomes())
		})
	}
}

// A copy the processor cannot run is dropped, acknowledged without
// running, and its parked message stays parked: a copy of another epoch,
// or one whose group is not draining. So is a message Check said to drop.
func TestQuarantineDropsWhatItMustNotRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		holds  map[string]fifo.Hold
		d      fifo.Disposition
		reason string
	}{
		{"a copy of an earlier epoch", map[string]fifo.Hold{"a": draining(3)}, copyOf(2), "redriven copy of epoch 2 while the group is draining (epoch 3): its parked message stays parked"},
		{"a copy of a later epoch", map[string]fifo.Hold{"a": draining(3)}, copyOf(4), "redriven copy of epoch 4 while the group is draining (epoch 3)"},
		{"a copy while the group is held", map[string]fifo.Hold{"a": held(3)}, copyOf(3), "redriven copy of epoch 3 while the group is held (epoch 3)"},
		{"a copy while the group is not held", nil, copyOf(1), "redriven copy of epoch 1 while the group is not_held"},
		{"a message to drop, group not held", nil, fifo.Disposition{Drop: true, Reason: "already processed"}, "already processed"},
		{"a message to drop, group draining", map[string]fifo.Hold{"a": draining(3)}, fifo.Disposition{Drop: true, Reason: "discarded"}, "discarded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{view: fifo.QuarantineView{Holds: tc.holds, Messages: map[string]fifo.Disposition{"ax": tc.d}}}
			// A receive count past the threshold changes nothing for a
			// message that does not run.
			r := runQuarantine(t, q, withReceives(batchOf(t, "ax"), map[string]string{"ax": "5"}), nil)
			require.Empty(t, r.resp.BatchItemFailures)
			require.Empty(t, r.started)
			require.Empty(t, q.Of("a"))
			require.Equal(t, fifo.Dropped, r.outcomes()["ax"])
			lines := r.lines(t, "ax")
			require.Len(t, lines, 1)
			require.Equal(t, "INFO", lines[0]["level"])
			require.Equal(t, "dropped", lines[0]["outcome"])
			require.Contains(t, lines[0]["reason"], tc.reason)
		})
	}
}

// A redriven copy that fails permanently, or has reached the threshold,
// puts its group back on hold with a Park of no messages (its own parked
// message stays parked) and is acknowledged. The lane's later ordinary
// messages are then parked and its later copies dropped.
func TestQuarantineCopyThatFailsAgainHoldsTheGroupAgain(t *testing.T) {
	t.Parallel()
	view := func() fifo.QuarantineView {
		return fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": draining(2)},
			Messages: map[string]fifo.Disposition{"ac0": copyOf(2), "ac1": copyOf(2), "ac2": copyOf(2)},
		}
	}
	batch := []string{"ac0", "ac1", "a5", "ac2", "a6"}
	want := map[string]fifo.Outcome{"ac0": fifo.Succeeded, "ac1": fifo.Parked, "a5": fifo.Parked, "ac2": fifo.Dropped, "a6": fifo.Parked}

	t.Run("permanent failure", func(t *testing.T) {
		t.Parallel()
		again := fifo.Permanent(errors.New("still malformed"))
		q := &fakeQuarantine{view: view()}
		r := runQuarantine(t, q, batchOf(t, batch...), map[string]error{"ac1": again})
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"ac0", "ac1"}, r.started)
		require.Equal(t, []string{"done ac0", "park hold", "park a5 a6"}, q.Of("a"))
		require.ErrorIs(t, q.Nth(t, "a", 1).Cause, again)
		require.Equal(t, want, r.outcomes())
		require.Equal(t, held(2), q.HoldOf("a"))
		ac1 := r.lines(t, "ac1")
		require.Len(t, ac1, 2, "the handler's line, then the re-hold's")
		require.Equal(t, "failed", ac1[0]["outcome"])
		require.Equal(t, "parked", ac1[1]["outcome"])
		require.Equal(t, "redriven copy failed again: permanent: still malformed", ac1[1]["reason"])
	})
	t.Run("threshold", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view()}
		r := runQuarantine(t, q, withReceives(batchOf(t, batch...), map[string]string{"ac1": "3"}), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"ac0"}, r.started, "a copy at the threshold does not run")
		require.Equal(t, []string{"done ac0", "park hold", "park a5 a6"}, q.Of("a"))
		require.ErrorIs(t, q.Nth(t, "a", 1).Cause, fifo.ErrQuarantineThreshold)
		require.Equal(t, want, r.outcomes())
		ac1 := r.lines(t, "ac1")
		require.Len(t, ac1, 1)
		require.Equal(t, "parked", ac1[0]["outcome"])
		require.Contains(t, ac1[0]["reason"], "redriven copy failed again: fifo: the message reached the quarantine threshold")
	})
}

// Only the copy of the group's oldest parked message runs (Hold.Next). A
// copy of the epoch that stands for a later message came before the copy
// of an older one, which was lost (dead-lettered when the quarantine could
// not take it back): it must not run, or it would pass that message. It
// holds the group again, with a Park of no messages, as a copy that fails
// again does; the lane's later copies are dropped and its ordinary
// messages parked. Copies in order run, each following the Next that the
// previous one's Done returns.
func TestQuarantineCopyOutOfOrderHoldsTheGroupAgain(t *testing.T) {
	t.Parallel()
	keyed := func(key string) fifo.Disposition { return fifo.Disposition{Copy: true, Epoch: 3, Key: key} }
	next := func(key string) fifo.Hold { return fifo.Hold{State: fifo.Draining, Epoch: 3, Next: key} }
	view := func(hold fifo.Hold) fifo.QuarantineView {
		return fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": hold},
			Messages: map[string]fifo.Disposition{"ac1": keyed("s1"), "ac2": keyed("s2"), "ac3": keyed("s3")},
		}
	}

	t.Run("the oldest copy was lost", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(next("s1"))}
		r := runQuarantine(t, q, batchOf(t, "ac2", "ac3", "a7", "b1"), nil)
		require.Empty(t, r.resp.BatchItemFailures, "acknowledged: their parked messages stay parked")
		require.Equal(t, []string{"b1"}, r.started, "no copy ran")
		require.Equal(t, []string{"park hold", "park a7"}, q.Of("a"))
		cause := q.Nth(t, "a", 0).Cause
		require.ErrorIs(t, cause, fifo.ErrCopyOutOfOrder)
		require.Contains(t, cause.Error(), "the copy of s2 came while s1 is parked")
		require.Equal(t, fifo.Hold{State: fifo.Held, Epoch: 3, Next: "s1"}, q.HoldOf("a"))
		require.Equal(t, map[string]fifo.Outcome{
			"ac2": fifo.Parked, "ac3": fifo.Dropped, "a7": fifo.Parked, "b1": fifo.Succeeded,
		}, r.outcomes())
		ac2 := r.lines(t, "ac2")
		require.Len(t, ac2, 1, "it never ran")
		require.Equal(t, "parked", ac2[0]["outcome"])
		require.Contains(t, ac2[0]["reason"], "redriven copy out of order: fifo: a redriven copy arrived while an older message")
	})
	t.Run("in order, each Done naming the next", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(next("s1")), after: map[string]fifo.Hold{"ac1": next("s2"), "ac2": next("s3"), "ac3": {}}}
		r := runQuarantine(t, q, batchOf(t, "ac1", "ac2", "ac3", "a7"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"ac1", "ac2", "ac3", "a7"}, r.started, "released by the last copy, a7 runs")
		require.Equal(t, []string{"done ac1", "done ac2", "done ac3"}, q.Of("a"))
	})
	t.Run("a Done that does not move Next on", func(t *testing.T) {
		t.Parallel()
		// The store says s1 is still the oldest parked message after
		// ac1's Done (a message older than every copy was parked in the
		// meantime, say): ac2 must wait for it.
		q := &fakeQuarantine{view: view(next("s1")), after: map[string]fifo.Hold{"ac1": next("s0")}}
		r := runQuarantine(t, q, batchOf(t, "ac1", "ac2", "ac3"), nil)
		require.Equal(t, []string{"ac1"}, r.started)
		require.Equal(t, []string{"done ac1", "park hold"}, q.Of("a"))
		require.Equal(t, map[string]fifo.Outcome{"ac1": fifo.Succeeded, "ac2": fifo.Parked, "ac3": fifo.Dropped}, r.outcomes())
	})
	t.Run("the re-hold fails", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: view(next("s1")), script: func(c qCall) error {
			if c.Method == "park" {
				return errors.New("store down")
			}
			return nil
		}}
		r := runQuarantine(t, q, batchOf(t, "ac2", "ac3", "a7"), nil)
		require.Equal(t, []string{"ac2", "ac3", "a7"}, failedIDs(r.resp), "received again, in order; none ran")
		require.Empty(t, r.started)
	})
}

// A transient failure, or a panic, is what it is without the quarantine:
// the message and the rest of its lane are reported, the lane's later
// messages do not run, and the quarantine hears nothing of it. That holds
// for a redriven copy too: it is received again.
func TestQuarantineTransientFailureIsAnOrdinaryFailure(t *testing.T) {
	t.Parallel()
	does := map[string]error{"a2": errors.New("busy"), "b1": errPanics, "ac1": errors.New("busy")}
	ev := func() events.SQSEvent { return batchOf(t, "a1", "b1", "a2", "c1", "b2", "a3", "-x", "ac1", "c2") }

	plain := &recorder{}
	var plainMetrics fifo.BatchMetrics
	base, err := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		plain.Start(msg.MessageId)
		if errors.Is(does[msg.MessageId], errPanics) {
			panic("handler bug")
		}
		return does[msg.MessageId]
	}, Concurrency: 1, Metrics: func(m fifo.BatchMetrics) { plainMetrics = m }}).Process(context.Background(), ev())
	require.NoError(t, err)

	q := &fakeQuarantine{}
	r := runQuarantine(t, q, ev(), does, func(c *fifo.Config) { c.Concurrency = 1 })
	require.Equal(t, []string{"b1", "a2", "b2", "a3", "ac1"}, failedIDs(base))
	require.Equal(t, failedIDs(base), failedIDs(r.resp))
	require.Equal(t, plain.Started(), r.started)
	for i := range plainMetrics.Messages {
		require.Equal(t, plainMetrics.Messages[i].Outcome, r.metrics.Messages[i].Outcome, r.metrics.Messages[i].MessageID)
	}
	require.Equal(t, []string{"check a1 b1 a2 c1 b2 a3 ac1 c2"}, q.Of(""))

	t.Run("a redriven copy", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": draining(1)},
			Messages: map[string]fifo.Disposition{"ac1": copyOf(1), "ac2": copyOf(1), "ad": {Drop: true}},
		}}
		for _, fails := range []error{errors.New("busy"), errPanics} {
			r := runQuarantine(t, q, batchOf(t, "ac1", "a5", "ad", "ac2"), map[string]error{"ac1": fails})
			require.Equal(t, []string{"ac1", "a5", "ad", "ac2"}, failedIDs(r.resp), "nothing after a failure is parked or dropped")
			require.Equal(t, []string{"ac1"}, r.started)
			require.Empty(t, q.Of("a"))
			require.Equal(t, fifo.SkippedAfterFailure, r.outcomes()["ad"])
			q = &fakeQuarantine{view: q.view}
		}
	})
}

// Messages without a group are not quarantined: Check does not see them,
// and a permanent failure among them is an ordinary failure, since nothing
// else handles it (a dead-letter queue cannot be configured with a
// quarantine).
func TestQuarantineLeavesMessagesWithoutAGroupAlone(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, withReceives(batchOf(t, "-x", "a1", "-y", "-z"), map[string]string{"z": "9"}),
		map[string]error{"x": fifo.Permanent(errors.New("malformed"))})
	require.Equal(t, []string{"x"}, failedIDs(r.resp))
	require.Equal(t, []string{"check a1"}, q.Of(""))
	require.ElementsMatch(t, []string{"x", "a1", "y", "z"}, r.started, "z runs whatever its receive count")
	require.Equal(t, fifo.Failed, r.outcomes()["x"])

	t.Run("a batch without groups is not checked", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: func(qCall) error { panic("the quarantine was called") }}
		r := runQuarantine(t, q, batchOf(t, "-x", "-y"), nil)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Empty(t, q.Of(""))
	})
}

// failing returns a script that makes every call to method fail as fault
// says ("error", "panic" or "goexit").
func failing(method, fault string) func(qCall) error { return lanestest.Failing(method, fault) }

// runFaulty is runQuarantine for a quarantine that may end a goroutine
// with runtime.Goexit: in a synctest bubble, with Process on a goroutine
// of its own, so that a Goexit that ends Process is a failure of the test
// and not the end of it.
func runFaulty(t *testing.T, q *fakeQuarantine, ev events.SQSEvent, does map[string]error, adjust ...func(*fifo.Config)) (r qRun) {
	t.Helper()
	lanestest.Returns(t, func(t *testing.T) { r = runQuarantine(t, q, ev, does, adjust...) })
	return r
}

// The error that failed a quarantine call, as logged, for each fault.
var faultText = lanestest.FaultText

// Without the holds nothing grouped may run: a Check that fails, panics or
// ends its goroutine fails every grouped message of the batch. Messages
// without a group run.
func TestQuarantineCheckFailureFailsEveryGroupedMessage(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{script: failing("check", fault)}
			r := runFaulty(t, q, batchOf(t, "a1", "b1", "-x", "a2"), nil)
			require.Equal(t, []string{"a1", "b1", "a2"}, failedIDs(r.resp))
			require.Equal(t, []string{"x"}, r.started)
			require.Equal(t, []string{"check a1 b1 a2"}, q.Of(""))
			for _, id := range []string{"a1", "b1", "a2"} {
				lines := r.lines(t, id)
				require.Len(t, lines, 1, id)
				require.Equal(t, "failed", lines[0]["outcome"])
				require.Contains(t, lines[0]["error"], "fifo: quarantine check: ")
				require.Contains(t, lines[0]["error"], faultText[fault])
			}
		})
	}
}

// A Park that fails, panics or ends its goroutine fails the messages it was
// given (none is acknowledged, so nothing is lost), and the rest of the
// lane is skipped; other lanes go on.
func TestQuarantineParkFailure(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			t.Run("holding", func(t *testing.T) {
				t.Parallel()
				q := &fakeQuarantine{script: failing("park", fault)}
				malformed := fifo.Permanent(errors.New("malformed"))
				r := runFaulty(t, q, batchOf(t, "a1", "a2", "b1", "a3"), map[string]error{"a2": malformed})
				require.Equal(t, []string{"a2", "a3"}, failedIDs(r.resp))
				require.Equal(t, []string{"park a2 a3 hold"}, q.Of("a"))
				require.ElementsMatch(t, []string{"a1", "a2", "b1"}, r.started)
				require.Equal(t, fifo.Failed, r.outcomes()["a2"])
				require.Equal(t, fifo.Failed, r.outcomes()["a3"])
				a2 := r.lines(t, "a2")
				require.Equal(t, "failed", a2[len(a2)-1]["outcome"])
				require.Contains(t, a2[len(a2)-1]["error"], "permanent: malformed", "the handler's error is kept")
				require.Contains(t, a2[len(a2)-1]["error"], faultText[fault])
				a3 := r.lines(t, "a3")
				require.Len(t, a3, 1)
				require.Contains(t, a3[0]["error"], faultText[fault])
			})
			t.Run("draining", func(t *testing.T) {
				t.Parallel()
				q := &fakeQuarantine{script: failing("park", fault), view: fifo.QuarantineView{
					Holds:    map[string]fifo.Hold{"a": draining(1)},
					Messages: map[string]fifo.Disposition{"ac1": copyOf(1), "ac2": copyOf(1)},
				}}
				r := runFaulty(t, q, batchOf(t, "a4", "ac1", "b1", "ac2"), nil)
				require.Equal(t, []string{"a4", "ac1", "ac2"}, failedIDs(r.resp))
				require.Equal(t, []string{"park a4"}, q.Of("a"))
				require.Equal(t, []string{"b1"}, r.started, "no copy runs after a message before it was not parked")
				require.Equal(t, fifo.Failed, r.outcomes()["a4"])
				require.Equal(t, fifo.SkippedAfterFailure, r.outcomes()["ac1"])
			})
			t.Run("re-holding", func(t *testing.T) {
				t.Parallel()
				q := &fakeQuarantine{script: failing("park", fault), view: fifo.QuarantineView{
					Holds:    map[string]fifo.Hold{"a": draining(1)},
					Messages: map[string]fifo.Disposition{"ac1": copyOf(1)},
				}}
				r := runFaulty(t, q, batchOf(t, "ac1", "a5"), map[string]error{"ac1": fifo.Permanent(errors.New("malformed"))})
				require.Equal(t, []string{"ac1", "a5"}, failedIDs(r.resp))
				require.Equal(t, []string{"park hold"}, q.Of("a"))
				require.Equal(t, fifo.Failed, r.outcomes()["ac1"])
				ac1 := r.lines(t, "ac1")
				require.Contains(t, ac1[len(ac1)-1]["error"], faultText[fault])
			})
		})
	}
}

// A copy whose success cannot be recorded is reported, to run again: its
// parked message must not stay parked after it ran, nor run after a later
// message of its group, so the rest of the lane is skipped too.
func TestQuarantineDoneFailureReportsTheCopy(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"error", "panic", "goexit"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			q := &fakeQuarantine{script: failing("done", fault), view: fifo.QuarantineView{
				Holds:    map[string]fifo.Hold{"a": draining(1)},
				Messages: map[string]fifo.Disposition{"ac1": copyOf(1), "ac2": copyOf(1)},
			}}
			r := runFaulty(t, q, batchOf(t, "ac1", "b1", "ac2", "a5"), nil)
			require.Equal(t, []string{"ac1", "ac2", "a5"}, failedIDs(r.resp))
			require.Equal(t, []string{"done ac1"}, q.Of("a"))
			require.Equal(t, []string{"ac1"}, r.startedIn("a"))
			require.Equal(t, fifo.Failed, r.outcomes()["ac1"])
			ac1 := r.lines(t, "ac1")
			require.Len(t, ac1, 2, "the handler's line, then the failure to record it")
			require.Equal(t, "succeeded", ac1[0]["outcome"])
			require.Equal(t, "failed", ac1[1]["outcome"])
			require.Contains(t, ac1[1]["error"], "the redriven copy ran, but recording it failed: "+faultText[fault])
		})
	}
}

// A parked message is acknowledged, not a failure: under
// StopOnFirstFailure it stops nothing. A failure to park it does.
func TestQuarantineStopOnFirstFailure(t *testing.T) {
	t.Parallel()
	malformed := map[string]error{"a1": fifo.Permanent(errors.New("malformed"))}
	opts := func(c *fifo.Config) { c.StopOnFirstFailure, c.Concurrency = true, 1 } // a's lane first: it is longest

	t.Run("a parked permanent failure stops nothing", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{}
		r := runQuarantine(t, q, batchOf(t, "a1", "b1", "a2"), malformed, opts)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"a1", "b1"}, r.started)
		require.Equal(t, []string{"park a1 a2 hold"}, q.Of("a"))
	})
	t.Run("a re-held copy stops nothing", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": draining(1)},
			Messages: map[string]fifo.Disposition{"ac1": copyOf(1)},
		}}
		r := runQuarantine(t, q, batchOf(t, "ac1", "b1", "a2"), map[string]error{"ac1": fifo.Permanent(errors.New("malformed"))}, opts)
		require.Empty(t, r.resp.BatchItemFailures)
		require.Equal(t, []string{"ac1", "b1"}, r.started)
	})
	t.Run("a failure to park stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("park", "error")}
		r := runQuarantine(t, q, batchOf(t, "a1", "b1", "a2"), malformed, opts)
		require.Equal(t, []string{"a1", "b1", "a2"}, failedIDs(r.resp))
		require.Equal(t, []string{"a1"}, r.started)
		require.Equal(t, fifo.SkippedStopped, r.outcomes()["b1"])
	})
	t.Run("a failure to record a copy stops the batch", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{script: failing("done", "error"), view: fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"a": draining(1)},
			Messages: map[string]fifo.Disposition{"ac1": copyOf(1)},
		}}
		r := runQuarantine(t, q, batchOf(t, "ac1", "b1", "a2"), nil, opts)
		require.Equal(t, []string{"ac1", "b1", "a2"}, failedIDs(r.resp))
		require.Equal(t, []string{"ac1"}, r.started)
	})
	// After the stop nothing starts. A held group's lane is still parked:
	// that starts nothing, and parks it in order. But once a message of a
	// lane is skipped, nothing after it in the lane may be acknowledged:
	// parked while the message before it is received again, it would be
	// redriven, and run, before that message if an operator redrove the
	// group in the meantime.
	t.Run("after a failure", func(t *testing.T) {
		t.Parallel()
		q := &fakeQuarantine{view: fifo.QuarantineView{
			Holds:    map[string]fifo.Hold{"c": held(1), "d": draining(1)},
			Messages: map[string]fifo.Disposition{"dc1": copyOf(1), "bd": {Drop: true}},
		}}
		ev := withReceives(batchOf(t, "a1", "a2", "a3", "a4", "b1", "b2", "bd", "c1", "dc1", "d5"), map[string]string{"b2": "3"})
		r := runQuarantine(t, q, ev, map[string]error{"a1": errors.New("busy")}, opts)
		require.Equal(t, []string{"a1"}, r.started)
		require.Equal(t, []string{"a1", "a2", "a3", "a4", "b1", "b2", "bd", "dc1", "d5"}, failedIDs(r.resp))
		require.Equal(t, []string{"park c1"}, q.Of("c"))
		require.Empty(t, q.Of("b"), "b2, at the threshold, is not parked ahead of b1")
		require.Empty(t, q.Of("d"), "d5 is not parked ahead of dc1")
		for _, id := range []string{"b1", "b2", "bd", "dc1", "d5"} {
			require.Equal(t, fifo.SkippedStopped, r.outcomes()[id], id)
		}
	})
}

// Once less than the deadline margin remains, nothing starts: a copy that
// would run is skipped with the rest of its lane, which is then neither
// parked nor run. A held group's lane is still parked: that runs nothing.
func TestQuarantineDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour) // far enough for the real context
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var left atomic.Int64 // what the clock says remains before the deadline
	left.Store(int64(time.Minute))
	clock := func() time.Time { return deadline.Add(-time.Duration(left.Load())) }

	q := &fakeQuarantine{view: fifo.QuarantineView{
		Holds:    map[string]fifo.Hold{"a": draining(1), "c": held(1)},
		Messages: map[string]fifo.Disposition{"ac1": copyOf(1), "ac2": copyOf(1), "ad": {Drop: true}},
	}}
	var rec recorder
	r := qRun{logs: &logBuffer{}}
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "ac1" {
			left.Store(int64(500 * time.Millisecond)) // inside the 1 s margin
		}
		return nil
	}, Quarantine: q, QuarantineThreshold: testThreshold, Now: clock, Concurrency: 1, Logger: r.logs.Logger(), Metrics: func(m fifo.BatchMetrics) { r.metrics = m }})
	resp, err := p.Process(ctx, withReceives(batchOf(t, "ac1", "ac2", "ad", "a5", "c1", "b1", "b2"), map[string]string{"b2": "3"}))
	require.NoError(t, err)
	q.RequireSound(t)

	require.Equal(t, []string{"ac1"}, rec.Started())
	require.Equal(t, []string{"ac2", "ad", "a5", "b1", "b2"}, failedIDs(resp))
	require.Equal(t, []string{"done ac1"}, q.Of("a"))
	require.Equal(t, []string{"park c1"}, q.Of("c"))
	require.Empty(t, q.Of("b"), "b2 is not parked ahead of b1")
	for _, id := range []string{"ac2", "ad", "a5", "b1", "b2"} {
		require.Equal(t, fifo.SkippedDeadline, r.outcomes()[id], id)
	}
}

// Every message has one outcome in the metrics, and its log lines say
// what became of it: one line for a message that did not run, and for a
// message parked after it ran, the handler's line and then the parking's.
func TestQuarantineOutcomesInMetricsAndLogs(t *testing.T) {
	t.Parallel()
	var tick atomic.Int64 // a clock that moves a millisecond per reading
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	q := &fakeQuarantine{view: fifo.QuarantineView{
		Holds:    map[string]fifo.Hold{"c": held(1), "d": draining(2)},
		Messages: map[string]fifo.Disposition{"dc1": copyOf(2), "dc0": copyOf(1), "dd": {Drop: true, Reason: "processed before"}},
	}}
	ev := batchOf(t, "a1", "a2", "a3", "b1", "c1", "c2", "dc0", "dc1", "dd", "d6", "-x")
	r := runQuarantine(t, q, ev, map[string]error{"a2": fifo.Permanent(errors.New("malformed")), "b1": errors.New("busy")},
		func(c *fifo.Config) { c.Now, c.Concurrency = clock, 1 })

	require.Equal(t, []string{"b1"}, failedIDs(r.resp))
	want := map[string]fifo.Outcome{
		"a1": fifo.Succeeded, "a2": fifo.Parked, "a3": fifo.Parked,
		"b1": fifo.Failed,
		"c1": fifo.Parked, "c2": fifo.Parked,
		"dc0": fifo.Dropped, "dc1": fifo.Succeeded, "dd": fifo.Dropped, "d6": fifo.Parked,
		"x": fifo.Succeeded,
	}
	require.Equal(t, want, r.outcomes())
	require.Equal(t, 5, r.metrics.Count(fifo.Parked))
	require.Equal(t, 2, r.metrics.Count(fifo.Dropped))
	require.Equal(t, 5, r.metrics.Lanes)
	for _, m := range r.metrics.Messages {
		ran := slices.Contains(r.started, m.MessageID)
		require.Equal(t, ran, m.Duration > 0, "%s: a duration only if it ran", m.MessageID)
		require.Equal(t, ran, m.Wait > 0, "%s: a wait only if it ran", m.MessageID)
	}
	require.Equal(t, []string{"park a2 a3 hold"}, q.Of("a"))
	require.Equal(t, []string{"park c1 c2"}, q.Of("c"))
	require.Equal(t, []string{"done dc1", "park d6"}, q.Of("d"))

	// One line for each message, but two for a2, which ran and was parked.
	for id := range want {
		lines := r.lines(t, id)
		if id == "a2" {
			require.Len(t, lines, 2, id)
			continue
		}
		require.Len(t, lines, 1, id)
		require.Equal(t, want[id].String(), lines[0]["outcome"], id)
	}
	a2 := r.lines(t, "a2")
	require.Equal(t, "WARN", a2[0]["level"])
	require.Equal(t, "failed", a2[0]["outcome"], "first the handler's result")
	require.Equal(t, "permanent: malformed", a2[0]["error"])
	require.NotContains(t, a2[0], "reason")
	require.Equal(t, "WARN", a2[1]["level"])
	require.Equal(t, "parked", a2[1]["outcome"], "then what became of the message")
	require.Equal(t, "permanent: malformed", a2[1]["reason"])
	require.Equal(t, a2[0]["duration"], a2[1]["duration"], "the handler's duration, on both lines")
	require.Positive(t, a2[1]["duration"])

	require.Equal(t, "its group is held", r.lines(t, "a3")[0]["reason"])
	require.Equal(t, "its group is held", r.lines(t, "c1")[0]["reason"])
	require.Equal(t, "its group is draining", r.lines(t, "d6")[0]["reason"])
	require.NotContains(t, r.lines(t, "c1")[0], "error")
	require.Equal(t, "WARN", r.lines(t, "c1")[0]["level"])
	require.Equal(t, "processed before", r.lines(t, "dd")[0]["reason"])
	require.Equal(t, "INFO", r.lines(t, "dd")[0]["level"])

	recs := r.logs.Records(t)
	last := recs[len(recs)-1]
	require.Equal(t, "fifo: batch", last["msg"])
	require.EqualValues(t, 1, last["failed"], "parked and dropped messages are not failures")
}

// A logger that panics on a parked message's line fails that message, as
// on any line: it is received again, and parked again (parking is
// idempotent), which loses nothing.
func TestQuarantineAPanickingLoggerOnAParkedLine(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	flaky := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if lanestest.Attr(r, "message_id") == "a2" && lanestest.Attr(r, "outcome") == fifo.Parked.String() {
			panic("log bug")
		}
	}}
	q := &fakeQuarantine{view: fifo.QuarantineView{Holds: map[string]fifo.Hold{"a": held(1)}}}
	p := newProcessor(t, fifo.Config{
		Handler:             func(context.Context, events.SQSMessage) error { return nil },
		Quarantine:          q,
		QuarantineThreshold: testThreshold,
		Logger:              slog.New(flaky),
	})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "a3"))
	require.NoError(t, err)
	q.RequireSound(t)
	require.Equal(t, []string{"a2"}, failedIDs(resp))
	require.Equal(t, []string{"park a1 a2 a3"}, q.Of("a"))
	require.Contains(t, logLine(t, &logs, "a2")["error"], "logger panicked: log bug")
}

// A handler that ends its goroutine with runtime.Goexit fails its message
// and the rest of its lane under the quarantine as without it.
func TestQuarantineHandlerGoexit(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{view: fifo.QuarantineView{
		Holds:    map[string]fifo.Hold{"a": draining(1)},
		Messages: map[string]fifo.Disposition{"ac1": copyOf(1)},
	}}
	r := runFaulty(t, q, batchOf(t, "ac1", "a5", "b1"), map[string]error{"ac1": errGoexit})
	require.Equal(t, []string{"ac1", "a5"}, failedIDs(r.resp))
	require.Empty(t, q.Of("a"))
	require.Equal(t, fifo.Panicked, r.outcomes()["ac1"])
}

// The processor calls the quarantine with the handlers' context: it ends
// at the response reserve.
func TestQuarantineCallsGetTheHandlersContext(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var deadlines sync.Map
	q := &fakeQuarantine{}
	wrapped := &ctxQuarantine{Quarantine: q, seen: &deadlines}
	p := newProcessor(t, fifo.Config{
		Handler:             func(context.Context, events.SQSMessage) error { return fifo.Permanent(errors.New("malformed")) },
		Quarantine:          wrapped,
		QuarantineThreshold: testThreshold,
		ResponseReserve:     300 * time.Millisecond,
	})
	_, err := p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	for _, m := range []string{"check", "park"} {
		got, ok := deadlines.Load(m)
		require.True(t, ok, m)
		require.Equal(t, deadline.Add(-300*time.Millisecond), got, m)
	}
}

// ctxQuarantine notes the deadline of the context each method gets.
type ctxQuarantine struct {
	fifo.Quarantine
	seen *sync.Map
}

func (c *ctxQuarantine) note(ctx context.Context, method string) {
	dl, _ := ctx.Deadline()
	c.seen.Store(method, dl)
}

func (c *ctxQuarantine) Check(ctx context.Context, msgs []*events.SQSMessage) (fifo.QuarantineView, error) {
	c.note(ctx, "check")
	return c.Quarantine.Check(ctx, msgs)
}

func (c *ctxQuarantine) Park(ctx context.Context, group string, msgs []*events.SQSMessage, cause error, hold bool) (fifo.Hold, error) {
	c.note(ctx, "park")
	return c.Quarantine.Park(ctx, group, msgs, cause, hold)
}

func TestHoldStateAndOutcomeNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "not_held", fifo.NotHeld.String())
	require.Equal(t, "held", fifo.Held.String())
	require.Equal(t, "draining", fifo.Draining.String())
	require.Equal(t, "unknown", fifo.HoldState(9).String())
	require.Equal(t, "parked", fifo.Parked.String())
	require.Equal(t, "dropped", fifo.Dropped.String())
	require.True(t, fifo.Parked.Acknowledged())
	require.True(t, fifo.Dropped.Acknowledged())
	require.False(t, fifo.Parked.Started())
	require.False(t, fifo.Dropped.Started())
	require.Equal(t, "quarantine", fifo.PanicInQuarantine.String())
}
