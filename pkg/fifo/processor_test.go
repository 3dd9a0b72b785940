package fifo_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// waitOrFail waits for ch, failing the test if it takes longer than a
// generous bound: a channel that never closes is a deadlock, not a slow machine.
func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestLanesKeepBatchOrderAndRunInParallel(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "a2", "c1", "b2", "a3", "c2")
	var rec recorder
	// Every lane's first message waits until all three lanes have started:
	// this only completes if the lanes run at the same time.
	var arrived sync.WaitGroup
	arrived.Add(3)
	allArrived := make(chan struct{})
	go func() { arrived.Wait(); close(allArrived) }()

	var running [3]atomic.Int32
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		lane := msg.MessageId[0] - 'a'
		if running[lane].Add(1) != 1 {
			t.Errorf("lane %c runs two handlers at once", msg.MessageId[0])
		}
		defer running[lane].Add(-1)
		rec.Start(msg.MessageId)
		if msg.MessageId[1] == '1' {
			arrived.Done()
			waitOrFail(t, allArrived, "all lanes to start")
		}
		return nil
	}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	perLane := map[byte][]string{}
	for _, id := range rec.Started() {
		perLane[id[0]] = append(perLane[id[0]], id)
	}
	require.Equal(t, []string{"a1", "a2", "a3"}, perLane['a'])
	require.Equal(t, []string{"b1", "b2"}, perLane['b'])
	require.Equal(t, []string{"c1", "c2"}, perLane['c'])
}

func TestMessagesWithoutGroupAreTheirOwnLanes(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "-x", "-y", "-z")
	var arrived sync.WaitGroup
	arrived.Add(3)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		arrived.Done()
		waitOrFail(t, all, "all standard messages to start")
		return nil
	}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
}

func TestConcurrencyBoundsLanesAtOnce(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "c1", "d1", "e1", "a2", "b2")
	var now, peak atomic.Int32
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		n := now.Add(1)
		defer now.Add(-1)
		for {
			m := peak.Load()
			if n <= m || peak.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	}, Concurrency: 2})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.LessOrEqual(t, peak.Load(), int32(2))
}

func TestBoundedConcurrencyStartsLongestLanesFirst(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "c1", "b2", "c2", "c3")
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		return nil
	}, Concurrency: 1})
	_, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []string{"c1", "c2", "c3", "b1", "b2", "a1"}, rec.Started())
}

func TestFailureReportsTheRestOfItsLaneWithoutStartingIt(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "a2", "b2", "a3", "b3")
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a2" {
			return errors.New("boom")
		}
		return nil
	}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []string{"a2", "a3"}, failedIDs(resp))
	require.NotContains(t, rec.Started(), "a3")
	require.Subset(t, rec.Started(), []string{"b1", "b2", "b3"}, "other lanes go on")
}

func TestStopOnFirstFailureStartsNothingNewAndReportsEverythingNotCompleted(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "a2", "b2", "c1")
	// a1 fails while b1 is running; b1 returns only once the failure is
	// logged, which happens after the processor has stopped. c1 would take
	// the slot a's lane frees, but must not start.
	var logs logBuffer
	a1Logged := make(chan struct{})
	var once sync.Once
	watch := &notifyWriter{w: &logs, match: `"message_id":"a1"`, fn: func() { once.Do(func() { close(a1Logged) }) }}
	b1Started := make(chan struct{})
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		switch msg.MessageId {
		case "a1":
			waitOrFail(t, b1Started, "b1 to start")
			return errors.New("a1 fails")
		case "b1":
			close(b1Started)
			waitOrFail(t, a1Logged, "a1's failure to be logged")
		}
		return nil
	}, StopOnFirstFailure: true, Concurrency: 2, Logger: watch.Logger()})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	// b1 was running and succeeded: acknowledged. Nothing else started.
	require.ElementsMatch(t, []string{"a1", "b1"}, rec.Started())
	require.Equal(t, []string{"a1", "a2", "b2", "c1"}, failedIDs(resp))
}

// notifyWriter calls fn whenever a log line containing match is written.
type notifyWriter struct {
	w     *logBuffer
	match string
	fn    func()
}

func (n *notifyWriter) Write(p []byte) (int, error) {
	k, err := n.w.Write(p)
	if strings.Contains(string(p), n.match) {
		n.fn()
	}
	return k, err
}

func (n *notifyWriter) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(n, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestStopOnFirstFailureWithOneSlotIsSequential(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "a1", "b1", "a2", "c1")
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "b1" {
			return errors.New("b1 fails")
		}
		return nil
	}, StopOnFirstFailure: true, Concurrency: 1})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	// Longest lane first: a1, a2, then b1 fails and c1 never starts.
	require.Equal(t, []string{"a1", "a2", "b1"}, rec.Started())
	require.Equal(t, []string{"b1", "c1"}, failedIDs(resp))
}

// Deadline tests run in a synctest bubble: on the wall clock a loaded
// machine can delay a lane's start past the margin and skip a message the
// test expects to run.
func TestNoMessageStartsInsideTheDeadlineMargin(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ev := batchOf(t, "a1", "a2", "b1")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var rec recorder
		p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
			rec.Start(msg.MessageId)
			if msg.MessageId == "a1" {
				// Use up time until less than the margin remains.
				dl, _ := ctx.Deadline()
				time.Sleep(time.Until(dl) - 500*time.Millisecond)
			}
			return nil
		}, DeadlineMargin: 1500 * time.Millisecond, ResponseReserve: 100 * time.Millisecond})
		resp, err := p.Process(ctx, ev)
		require.NoError(t, err)
		require.Equal(t, []string{"a2"}, failedIDs(resp))
		require.ElementsMatch(t, []string{"a1", "b1"}, rec.Started())
	})
}

// The Lambda deadline is wall-clock time, which can step back. Once a
// message is skipped for the deadline, the rest of its lane is skipped
// without another look at the clock.
func TestADeadlineSkipSkipsTheRestOfItsLaneWhenTheClockStepsBack(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour) // far enough for the handlers' real context
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var left atomic.Int64 // what the clock says remains before the deadline
	left.Store(int64(time.Minute))
	clock := func() time.Time { return deadline.Add(-time.Duration(left.Load())) }

	var logs logBuffer
	stepBack := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if lanestest.Attr(r, "message_id") == "a2" && lanestest.Attr(r, "outcome") == fifo.SkippedDeadline.String() {
			left.Store(int64(time.Minute)) // the clock steps back once a2 is skipped
		}
	}}
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a1" {
			left.Store(int64(500 * time.Millisecond)) // a1 used up the time, inside the 1 s margin
		}
		return nil
	}, Now: clock, Logger: slog.New(stepBack)})
	resp, err := p.Process(ctx, batchOf(t, "a1", "a2", "a3"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1"}, rec.Started())
	require.Equal(t, []string{"a2", "a3"}, failedIDs(resp))
	require.Equal(t, "skipped_deadline", logLine(t, &logs, "a2")["outcome"])
	require.Equal(t, "skipped_deadline", logLine(t, &logs, "a3")["outcome"])
}

func TestExpiredOrCancelledContextStartsNothing(t *testing.T) {
	t.Parallel()
	expired, cancel1 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel1()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for name, ctx := range map[string]context.Context{"expired": expired, "cancelled": cancelled} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			var logs logBuffer
			p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
				calls.Add(1)
				return nil
			}, Logger: logs.Logger()})
			resp, err := p.Process(ctx, batchOf(t, "a1", "b1", "-x"))
			require.NoError(t, err)
			require.Equal(t, []string{"a1", "b1", "x"}, failedIDs(resp))
			require.Zero(t, calls.Load())
			for _, id := range []string{"a1", "b1", "x"} {
				require.Equal(t, "skipped_deadline", logLine(t, &logs, id)["outcome"], id)
			}
		})
	}
}

func TestHandlerContextEndsBeforeTheDeadlineAndWhenProcessReturns(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var seen context.Context
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		seen = ctx
		return nil
	}, ResponseReserve: 300 * time.Millisecond})
	_, err := p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	got, ok := seen.Deadline()
	require.True(t, ok)
	require.Equal(t, deadline.Add(-300*time.Millisecond), got)
	require.ErrorIs(t, seen.Err(), context.Canceled, "the handler's context ends when Process returns")

	// Without a deadline the handler still gets a context cancelled on return.
	_, err = p.Process(context.Background(), batchOf(t, "a1"))
	require.NoError(t, err)
	require.ErrorIs(t, seen.Err(), context.Canceled)
}

func TestHandlerRespectingItsContextIsReportedAndProcessReturnsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		deadline := time.Now().Add(800 * time.Millisecond)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
			if msg.MessageId == "a1" {
				<-ctx.Done() // a long task interrupted by the response reserve
				return ctx.Err()
			}
			return nil
		}, DeadlineMargin: 500 * time.Millisecond, ResponseReserve: 400 * time.Millisecond})
		resp, err := p.Process(ctx, batchOf(t, "a1", "a2", "b1"))
		require.NoError(t, err)
		require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
		require.Equal(t, deadline.Add(-400*time.Millisecond), time.Now(),
			"the partial response is returned at the response reserve, before the invocation deadline")
	})
}

func TestProcessWaitsForAHandlerThatIgnoresItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var finished atomic.Bool
		p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
			time.Sleep(500 * time.Millisecond) // past the deadline, ignoring ctx
			finished.Store(true)
			return nil
		}, DeadlineMargin: 100 * time.Millisecond, ResponseReserve: 50 * time.Millisecond})
		_, err := p.Process(ctx, batchOf(t, "a1"))
		require.NoError(t, err)
		require.True(t, finished.Load(), "Process returned while a handler was still running")
	})
}

func TestPanicFailsTheMessageAndIsLoggedWithItsStack(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		switch msg.MessageId {
		case "a1":
			panic("kaboom")
		case "c1":
			panic(nil) //nolint:govet // a nil panic must be caught too
		}
		return nil
	}, Logger: logs.Logger()})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1", "c1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2", "c1"}, failedIDs(resp))

	var a1 map[string]any
	for _, r := range logs.Records(t) {
		if r["message_id"] == "a1" {
			a1 = r
		}
	}
	require.NotNil(t, a1)
	require.Equal(t, "ERROR", a1["level"])
	require.Equal(t, "panicked", a1["outcome"])
	require.Contains(t, a1["error"], "kaboom")
	require.Contains(t, a1["stack"], "processor_test.go", "the stack names the panicking handler")
}

func TestGoexitInAHandlerFailsItsLaneAndTheRestOfTheBatchStillRuns(t *testing.T) {
	t.Parallel()
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a1" {
			runtime.Goexit()
		}
		return nil
	}, Concurrency: 1})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1", "c1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
	require.Equal(t, []string{"a1", "b1", "c1"}, rec.Started())
}

// goexitHandler is a slog.Handler that ends its caller's goroutine with
// runtime.Goexit when it handles a record for which exit says so, or, with
// exitOnWith, when a logger is derived from it.
type goexitHandler struct {
	next       slog.Handler
	exit       func(r slog.Record) bool
	exitOnWith bool
}

func (h goexitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h goexitHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.exit != nil && h.exit(r) {
		runtime.Goexit()
	}
	return h.next.Handle(ctx, r)
}

func (h goexitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.exitOnWith {
		runtime.Goexit()
	}
	h.next = h.next.WithAttrs(as)
	return h
}

func (h goexitHandler) WithGroup(name string) slog.Handler {
	h.next = h.next.WithGroup(name)
	return h
}

// TestGoexitOutsideTheHandlerIsContained: runtime.Goexit in the metrics
// hook or in the logger, about the batch or about a message, neither keeps
// Process from returning nor loses a failure. On Process's own goroutine a
// Goexit would end Process without a response; on a message's line it fails
// the message and its lane, as a handler's Goexit does.
func TestGoexitOutsideTheHandlerIsContained(t *testing.T) {
	t.Parallel()
	handler := func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "b1" {
			return errors.New("b1 fails")
		}
		return nil
	}
	goexitLogger := func(logs *logBuffer, h goexitHandler) *slog.Logger {
		h.next = logs.Logger().Handler()
		return slog.New(h)
	}
	cases := []struct {
		name   string
		config func(logs *logBuffer) fifo.Config
		failed []string
	}{
		{"metrics hook", func(*logBuffer) fifo.Config {
			return fifo.Config{Handler: handler, Metrics: func(fifo.BatchMetrics) { runtime.Goexit() }}
		}, []string{"b1", "b2"}},
		{"log line of the batch", func(logs *logBuffer) fifo.Config {
			return fifo.Config{Handler: handler, Logger: goexitLogger(logs, goexitHandler{exit: func(r slog.Record) bool { return r.Message == "fifo: batch" }})}
		}, []string{"b1", "b2"}},
		{"logger derived for the batch", func(logs *logBuffer) fifo.Config {
			return fifo.Config{Handler: handler, Logger: goexitLogger(logs, goexitHandler{exitOnWith: true})}
		}, []string{"b1", "b2"}},
		{"log line of a message that succeeded", func(logs *logBuffer) fifo.Config {
			return fifo.Config{Handler: handler, Logger: goexitLogger(logs, goexitHandler{exit: func(r slog.Record) bool { return lanestest.Attr(r, "message_id") == "a1" }})}
		}, []string{"a1", "a2", "b1", "b2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var logs logBuffer
				p := newProcessor(t, tc.config(&logs))
				var resp events.SQSEventResponse
				var err error
				returned := make(chan struct{})
				go func() {
					resp, err = p.Process(context.Background(), batchOf(t, "a1", "a2", "b1", "b2"))
					close(returned) // not deferred: a Goexit in Process must not close it
				}()
				waitOrFail(t, returned, "Process to return")
				require.NoError(t, err)
				require.Equal(t, tc.failed, failedIDs(resp))
			})
		})
	}

	t.Run("log line of a refused batch", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			var logs logBuffer
			p := newProcessor(t, fifo.Config{Handler: handler, Logger: goexitLogger(&logs, goexitHandler{exit: func(slog.Record) bool { return true }})})
			var err error
			returned := make(chan struct{})
			go func() {
				_, err = p.Process(context.Background(), batchOf(t, "a1", "a1"))
				close(returned)
			}()
			waitOrFail(t, returned, "Process to return")
			require.ErrorIs(t, err, fifo.ErrInvalidBatch)
		})
	})
}

// Not parallel: nothing else runs, so any goroutine left is Process's.
func TestNoGoroutineOutlivesProcess(t *testing.T) {
	defer goleak.VerifyNone(t)
	ev := batchOf(t, "a1", "b1", "c1", "a2", "b2", "-x", "-y", "d1", "d2", "e1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, cfg := range []fifo.Config{
		{},
		{Concurrency: 3},
		{StopOnFirstFailure: true},
		{DeadLetter: &fifo.DeadLetterQueue{Client: &fakeDLQ{}, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/dlq.fifo"}},
		{Quarantine: &fakeQuarantine{view: fifo.QuarantineView{Holds: map[string]fifo.Hold{"c": {State: fifo.Held}}}}, QuarantineThreshold: 3},
	} {
		cfg.Handler = func(ctx context.Context, msg events.SQSMessage) error {
			switch msg.MessageId {
			case "b1":
				return errors.New("fail")
			case "c1":
				panic("panic")
			case "d1":
				return fifo.Permanent(errors.New("malformed"))
			case "e1":
				runtime.Goexit()
			}
			time.Sleep(time.Millisecond)
			return nil
		}
		_, err := newProcessor(t, cfg).Process(ctx, ev)
		require.NoError(t, err)
		require.NoError(t, goleak.Find(), "goroutines left after Process returned")
	}
}

func TestPermanentErrorWithoutDeadLetterQueueIsAnOrdinaryFailure(t *testing.T) {
	t.Parallel()
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a1" {
			return fifo.Permanent(errors.New("malformed body"))
		}
		return nil
	}})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
	require.Equal(t, []string{"a1"}, rec.Started())
}

const dlqURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/commands-dlq.fifo"

func TestPermanentErrorIsDeadLetteredAndItsLaneContinues(t *testing.T) {
	t.Parallel()
	dlq := &fakeDLQ{}
	ev := batchOf(t, "a1", "a2", "b1")
	str := "v"
	ev.Records[0].MessageAttributes = map[string]events.SQSMessageAttribute{
		"tenant": {DataType: "String", StringValue: &str},
		"blob":   {DataType: "Binary", BinaryValue: []byte{1, 2, 3}},
	}
	ev.Records[0].Attributes["AWSTraceHeader"] = "Root=1-abc"
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "3"
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a1" {
			return fifo.Permanent(errors.New("malformed body:\x00 bad"))
		}
		return nil
	}, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a dead-lettered message is acknowledged")
	require.ElementsMatch(t, []string{"a1", "a2", "b1"}, rec.Started(), "its lane continues")

	sent := dlq.Sent()
	require.Len(t, sent, 1)
	in := sent[0]
	require.Equal(t, dlqURL, *in.QueueUrl)
	require.Equal(t, ev.Records[0].Body, *in.MessageBody)
	require.Equal(t, "a", *in.MessageGroupId)
	require.Equal(t, "a1", *in.MessageDeduplicationId)
	require.Equal(t, "v", *in.MessageAttributes["tenant"].StringValue)
	require.Equal(t, []byte{1, 2, 3}, in.MessageAttributes["blob"].BinaryValue)
	require.Equal(t, "Root=1-abc", *in.MessageSystemAttributes["AWSTraceHeader"].StringValue)
	var info fifo.DeadLetterInfo
	require.NoError(t, json.Unmarshal([]byte(*in.MessageAttributes[fifo.DeadLetterAttribute].StringValue), &info))
	require.Equal(t, "a1", info.SourceMessageID)
	require.Equal(t, testQueueARN, info.SourceQueueARN)
	require.Equal(t, 3, info.ReceiveCount)
	require.Equal(t, "permanent: malformed body:? bad", info.Error, "characters SQS refuses are replaced")
}

// SQS deduplicates the dead-letter send by the source message id for five
// minutes only, and a message is received again after its visibility
// timeout (6 minutes): a message dead-lettered by an invocation that then
// timed out is dead-lettered again. Both copies carry the same identity, by
// which a reader of the dead-letter queue drops the repeat.
func TestARepeatedDeadLetteringCarriesTheSameIdentity(t *testing.T) {
	t.Parallel()
	dlq := &fakeDLQ{}
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "a1" {
			return fifo.Permanent(errors.New("malformed"))
		}
		return nil
	}, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	for receive := range 2 {
		ev := batchOf(t, "a1", "a2")
		ev.Records[0].Attributes["SequenceNumber"] = "18889999999999999001"
		ev.Records[0].Attributes["ApproximateReceiveCount"] = strconv.Itoa(receive + 1)
		resp, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		now.Add(int64(6 * time.Minute)) // the visibility timeout: past SQS's deduplication window
	}

	sent := dlq.Sent()
	require.Len(t, sent, 2)
	info := make([]map[string]any, 2)
	for i, in := range sent {
		require.NoError(t, json.Unmarshal([]byte(*in.MessageAttributes[fifo.DeadLetterAttribute].StringValue), &info[i]))
	}
	for _, field := range []string{"source_message_id", "source_queue_arn", "source_sequence_number"} {
		require.Equal(t, info[0][field], info[1][field], field)
	}
	require.Equal(t, "a1", info[0]["source_message_id"])
	require.Equal(t, testQueueARN, info[0]["source_queue_arn"])
	require.Equal(t, "18889999999999999001", info[0]["source_sequence_number"])
	require.Equal(t, *sent[0].MessageDeduplicationId, *sent[1].MessageDeduplicationId)
	require.Equal(t, *sent[0].MessageGroupId, *sent[1].MessageGroupId)
	require.Equal(t, *sent[0].MessageBody, *sent[1].MessageBody)
	// What describes one copy differs.
	require.NotEqual(t, info[0]["dead_lettered_at"], info[1]["dead_lettered_at"])
	require.EqualValues(t, 1, info[0]["receive_count"])
	require.EqualValues(t, 2, info[1]["receive_count"])

	var typed fifo.DeadLetterInfo
	require.NoError(t, json.Unmarshal([]byte(*sent[1].MessageAttributes[fifo.DeadLetterAttribute].StringValue), &typed))
	require.Equal(t, "18889999999999999001", typed.SourceSequenceNumber)
	require.Equal(t, time.Date(2026, 11, 30, 12, 6, 0, 0, time.UTC), typed.DeadLetteredAt)
}

func TestDeadLetterFailuresLoseNothing(t *testing.T) {
	t.Parallel()
	permanent := func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "a1" {
			return fifo.Permanent(errors.New("malformed"))
		}
		return nil
	}
	t.Run("send fails", func(t *testing.T) {
		t.Parallel()
		var logs logBuffer
		dlq := &fakeDLQ{err: errors.New("throttled")}
		p := newProcessor(t, fifo.Config{Handler: permanent, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}, Logger: logs.Logger()})
		resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1"))
		require.NoError(t, err)
		require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
		require.Contains(t, logLine(t, &logs, "a1")["error"], "throttled")
	})
	t.Run("FIFO source, standard dead-letter queue", func(t *testing.T) {
		t.Parallel()
		var logs logBuffer
		dlq := &fakeDLQ{}
		p := newProcessor(t, fifo.Config{
			Handler:    permanent,
			DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/dlq"},
			Logger:     logs.Logger(),
		})
		resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2"))
		require.NoError(t, err)
		require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
		require.Empty(t, dlq.Sent())
		require.Contains(t, logLine(t, &logs, "a1")["error"], "is not a FIFO queue")
	})
}

func TestDeadLetterEdgeCases(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	p := func(dlq *fakeDLQ) *fifo.Processor {
		return newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
			return fifo.Permanent(errors.New("malformed"))
		}, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}, Logger: logs.Logger()})
	}
	t.Run("standard source to a FIFO queue groups by message id", func(t *testing.T) {
		dlq := &fakeDLQ{}
		resp, err := p(dlq).Process(context.Background(), batchOf(t, "-x"))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		require.Equal(t, "x", *dlq.Sent()[0].MessageGroupId)
	})
	t.Run("ten attributes leave no room for the error attribute", func(t *testing.T) {
		dlq := &fakeDLQ{}
		ev := batchOf(t, "a1")
		ev.Records[0].Attributes["SequenceNumber"] = "18889999999999999001"
		ev.Records[0].MessageAttributes = map[string]events.SQSMessageAttribute{}
		v := "v"
		for i := range 10 {
			ev.Records[0].MessageAttributes[string(rune('a'+i))] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
		}
		resp, err := p(dlq).Process(context.Background(), ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		sent := dlq.Sent()[0]
		require.Len(t, sent.MessageAttributes, 10, "no attribute of the message is dropped")
		require.NotContains(t, sent.MessageAttributes, fifo.DeadLetterAttribute)
		require.Equal(t, "a1", *sent.MessageDeduplicationId, "the copy's only source identity")
		warn := logLine(t, logs, "a1")
		require.Equal(t, "fifo: dead-lettered without its cause: the message already has 10 attributes", warn["msg"])
		require.Equal(t, "18889999999999999001", warn["sequence_number"], "the sequence number the copy lacks is logged")
	})
}

// A dead-letter client that panics fails the message like a handler that
// panics: reported with the rest of its lane, logged with the stack; the
// batch goes on.
func TestAPanickingDeadLetterClientFailsItsMessage(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	var rec recorder
	dlq := &fakeDLQ{panics: "dlq client bug"}
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		if msg.MessageId == "a1" {
			return fifo.Permanent(errors.New("malformed"))
		}
		return nil
	}, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}, Logger: logs.Logger()})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
	require.ElementsMatch(t, []string{"a1", "b1"}, rec.Started())
	a1 := logLine(t, &logs, "a1")
	require.Equal(t, "ERROR", a1["level"])
	require.Equal(t, "panicked", a1["outcome"])
	require.Contains(t, a1["error"], "permanent: malformed")
	require.Contains(t, a1["error"], "dead-letter send panicked: dlq client bug")
	require.Contains(t, a1["stack"], "helpers_test.go", "the stack names the client")
	require.Equal(t, "skipped_after_failure", logLine(t, &logs, "a2")["outcome"])
}

// A logger that panics while logging a message fails that message like a
// handler's panic, even one whose handler succeeded: it is reported with
// the rest of its lane, and logged with the stack if the logger still works.
func TestAPanickingLoggerFailsTheMessageItWasLogging(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	var rec recorder
	flaky := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if lanestest.Attr(r, "message_id") == "a1" && lanestest.Attr(r, "outcome") == fifo.Succeeded.String() {
			panic("log bug")
		}
	}}
	var metrics fifo.BatchMetrics
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		return nil
	}, Logger: slog.New(flaky), Metrics: func(m fifo.BatchMetrics) { metrics = m }})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
	require.ElementsMatch(t, []string{"a1", "b1"}, rec.Started())
	a1 := logLine(t, &logs, "a1")
	require.Equal(t, "ERROR", a1["level"])
	require.Equal(t, "panicked", a1["outcome"])
	require.Contains(t, a1["error"], "logger panicked: log bug")
	require.Contains(t, a1["stack"], "lanestest/log.go", "the stack names the slog handler")
	require.Equal(t, fifo.Panicked, metrics.Messages[0].Outcome)
	require.Equal(t, fifo.SkippedAfterFailure, metrics.Messages[1].Outcome)
	require.Equal(t, fifo.Succeeded, metrics.Messages[2].Outcome)
}

// Every log call the processor makes, on a lane or for the batch, and the
// metrics hook, may panic: none of it ends the invocation. With a logger
// that always panics, every started message fails (its log line panicked),
// so everything is received again and nothing is lost.
func TestALoggerAndAMetricsHookThatAlwaysPanicCrashNothing(t *testing.T) {
	t.Parallel()
	var hookCalls atomic.Int32
	dlq := &fakeDLQ{}
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		switch msg.MessageId {
		case "b1":
			return errors.New("fail")
		case "c1":
			panic("handler bug")
		case "x":
			return fifo.Permanent(errors.New("malformed"))
		}
		return nil
	}, Logger: slog.New(lanestest.PanickingHandler{}), DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}, Metrics: func(fifo.BatchMetrics) { hookCalls.Add(1); panic("hook bug") }})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})

	resp, err := p.Process(ctx, batchOf(t, "a1", "a2", "b1", "b2", "c1", "-x"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2", "b1", "b2", "c1", "x"}, failedIDs(resp))
	require.Equal(t, int32(1), hookCalls.Load())
	// x reached the dead-letter queue before its log line panicked: it is
	// received again and dead-lettered again, a repeat its DeadLetterInfo
	// lets a reader drop.
	require.Len(t, dlq.Sent(), 1)

	ev := batchOf(t, "a1", "a1")
	_, err = p.Process(ctx, ev)
	require.ErrorIs(t, err, fifo.ErrInvalidBatch, "the refused batch's log line panicked")
}

func logLine(t *testing.T, logs *logBuffer, messageID string) map[string]any {
	t.Helper()
	for _, r := range logs.Records(t) {
		if r["message_id"] == messageID {
			return r
		}
	}
	t.Fatalf("no log line for message %s", messageID)
	return nil
}

func TestInvalidBatchesAreRefusedWhole(t *testing.T) {
	t.Parallel()
	cases := map[string]func(ev *events.SQSEvent){
		"duplicate message id": func(ev *events.SQSEvent) { ev.Records[2].MessageId = "a1" },
		"no message id":        func(ev *events.SQSEvent) { ev.Records[1].MessageId = "" },
		"different queues": func(ev *events.SQSEvent) {
			ev.Records[1].EventSourceARN = "arn:aws:sqs:eu-west-1:123456789012:other.fifo"
		},
	}
	for name, corrupt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev := batchOf(t, "a1", "b1", "a2")
			corrupt(&ev)
			var calls atomic.Int32
			var logs logBuffer
			p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
				calls.Add(1)
				return nil
			}, Logger: logs.Logger()})
			resp, err := p.Process(context.Background(), ev)
			require.ErrorIs(t, err, fifo.ErrInvalidBatch)
			require.Contains(t, err.Error(), name)
			var ibe *fifo.InvalidBatchError
			require.ErrorAs(t, err, &ibe)
			require.Empty(t, resp.BatchItemFailures)
			require.Zero(t, calls.Load(), "nothing of an invalid batch runs")
			require.Equal(t, "ERROR", logs.Records(t)[0]["level"])
		})
	}
}

func TestEmptyBatchGivesAnEmptyResponse(t *testing.T) {
	t.Parallel()
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		t.Error("handler called for an empty batch")
		return nil
	}})
	resp, err := p.Process(context.Background(), events.SQSEvent{})
	require.NoError(t, err)
	body, err := json.Marshal(resp)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures":[]}`, string(body))
}

func TestResponseNamesEachFailureOnceInBatchOrder(t *testing.T) {
	t.Parallel()
	ev := batchOf(t, "c1", "a1", "b1", "-x", "a2", "c2", "-y", "b2")
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		switch msg.MessageId {
		case "c1", "a1", "y":
			return errors.New("fail")
		}
		return nil
	}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []string{"c1", "a1", "a2", "c2", "y"}, failedIDs(resp))
}

func TestLogsOneRecordPerMessageWithTheHouseFields(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "b1" {
			return errors.New("nope")
		}
		return nil
	}, Logger: logs.Logger()})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	ev := batchOf(t, "a1", "b1", "b2")
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "4"
	_, err := p.Process(ctx, ev)
	require.NoError(t, err)

	a1 := logLine(t, &logs, "a1")
	require.Equal(t, "DEBUG", a1["level"])
	require.Equal(t, "a", a1["group_id"])
	require.EqualValues(t, 4, a1["receive_count"])
	require.Equal(t, "succeeded", a1["outcome"])
	require.Equal(t, "req-1", a1["aws_request_id"])
	require.Contains(t, a1, "duration")
	b1 := logLine(t, &logs, "b1")
	require.Equal(t, "WARN", b1["level"])
	require.Equal(t, "nope", b1["error"])
	require.Equal(t, "skipped_after_failure", logLine(t, &logs, "b2")["outcome"])

	recs := logs.Records(t)
	last := recs[len(recs)-1]
	require.Equal(t, "fifo: batch", last["msg"])
	require.EqualValues(t, 2, last["failed"])
	require.EqualValues(t, 2, last["lanes"])
}

func TestMetricsHookSeesEveryMessageAfterEveryHandlerReturned(t *testing.T) {
	t.Parallel()
	var running atomic.Int32
	var calls int
	var got fifo.BatchMetrics
	p := newProcessor(t, fifo.Config{
		Handler: func(ctx context.Context, msg events.SQSMessage) error {
			running.Add(1)
			defer running.Add(-1)
			time.Sleep(2 * time.Millisecond)
			if msg.MessageId == "a1" {
				return errors.New("fail")
			}
			return nil
		},
		Metrics: func(m fifo.BatchMetrics) {
			calls++
			require.Zero(t, running.Load(), "the hook runs after the handlers")
			got = m
		},
	})
	_, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1", "b2"))
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Equal(t, 2, got.Lanes)
	require.Equal(t, 2, got.Count(fifo.Succeeded))
	require.Equal(t, 1, got.Count(fifo.Failed))
	require.Equal(t, 1, got.Count(fifo.SkippedAfterFailure))
	b2 := got.Messages[3]
	require.Equal(t, "b2", b2.MessageID)
	require.Equal(t, "b", b2.GroupID)
	require.Equal(t, 1, b2.ReceiveCount)
	require.GreaterOrEqual(t, b2.Duration, 2*time.Millisecond)
	require.GreaterOrEqual(t, b2.Wait, 2*time.Millisecond, "b2 waited for b1")
	require.Zero(t, got.Messages[1].Duration, "a2 never ran")
	require.GreaterOrEqual(t, got.Duration, 4*time.Millisecond)
}

func TestAPanickingMetricsHookIsRecovered(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, fifo.Config{
		Handler: func(ctx context.Context, msg events.SQSMessage) error { return nil },
		Metrics: func(fifo.BatchMetrics) { panic("hook bug") },
		Logger:  logs.Logger(),
	})
	resp, err := p.Process(context.Background(), batchOf(t, "a1"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	recs := logs.Records(t)
	require.Equal(t, "fifo: metrics hook panicked", recs[len(recs)-1]["msg"])
}

// The hook's panic is recovered; logging it may panic too, outside that
// recover, and must not end the invocation either.
func TestAPanicLoggingTheMetricsHooksPanicIsContained(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	flaky := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if r.Message == "fifo: metrics hook panicked" {
			panic("log bug")
		}
	}}
	p := newProcessor(t, fifo.Config{
		Handler: func(ctx context.Context, msg events.SQSMessage) error { return nil },
		Metrics: func(fifo.BatchMetrics) { panic("hook bug") },
		Logger:  slog.New(flaky),
	})
	resp, err := p.Process(context.Background(), batchOf(t, "a1"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "the response is decided before the hook runs")
	recs := logs.Records(t)
	require.Equal(t, "fifo: batch", recs[len(recs)-1]["msg"])
}

func TestPermanentWrapsAndMatches(t *testing.T) {
	t.Parallel()
	base := errors.New("bad json")
	err := fifo.Permanent(base)
	require.True(t, fifo.IsPermanent(err))
	require.True(t, fifo.IsPermanent(errors.Join(errors.New("ctx"), err)))
	require.ErrorIs(t, err, base)
	require.False(t, fifo.IsPermanent(base))
	require.NoError(t, fifo.Permanent(nil))
}

func TestMetricsHookIsSkippedWhenNoTimeIsLeft(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	var logs logBuffer
	var called atomic.Bool
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		<-ctx.Done() // runs into the response reserve
		return nil
	}, DeadlineMargin: 500 * time.Millisecond, ResponseReserve: 500 * time.Millisecond, Metrics: func(fifo.BatchMetrics) { called.Store(true) }, Logger: logs.Logger()})
	_, err := p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	require.False(t, called.Load(), "the hook ran with the response reserve spent")
	recs := logs.Records(t)
	require.Equal(t, "fifo: metrics hook skipped: no time left before the deadline", recs[len(recs)-1]["msg"])
}

// Config.Now, not the wall clock, decides whether a message may start
// before the deadline: with a deadline far off in wall-clock time but
// inside the margin on the given clock, nothing starts; moved back,
// everything runs.
func TestNowJudgesTheDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var now atomic.Int64
	now.Store(deadline.Add(-500 * time.Millisecond).UnixNano()) // inside the 1 s margin
	var rec recorder
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		rec.Start(msg.MessageId)
		return nil
	}, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	resp, err := p.Process(ctx, batchOf(t, "a1", "b1"))
	require.NoError(t, err)
	require.Empty(t, rec.Started())
	require.Equal(t, []string{"a1", "b1"}, failedIDs(resp))

	now.Store(deadline.Add(-time.Minute).UnixNano())
	resp, err = p.Process(ctx, batchOf(t, "a1", "b1"))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a1", "b1"}, rec.Started())
	require.Empty(t, failedIDs(resp))

	// Nil is time.Now: an hour is left.
	p = newProcessor(t, fifo.Config{Handler: func(context.Context, events.SQSMessage) error { return nil }, Now: nil})
	resp, err = p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	require.Empty(t, failedIDs(resp))
}
