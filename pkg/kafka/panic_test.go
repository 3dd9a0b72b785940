package kafka_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// processReturns runs p.Process on a goroutine of its own, so that a
// runtime.Goexit that escaped into Process's goroutine shows as Process
// not returning, and returns its results.
func processReturns(t *testing.T, p *kafka.Processor, specs ...string) (kafka.EventResponse, error) {
	t.Helper()
	var resp kafka.EventResponse
	var err error
	returned := make(chan struct{})
	go func() {
		resp, err = p.Process(context.Background(), records(t, specs...))
		close(returned) // not deferred: a Goexit in Process must not close it
	}()
	select {
	case <-returned:
	case <-time.After(time.Hour): // the bubble's time: only reached if Process never returns
		t.Fatal("Process did not return")
	}
	return resp, err
}

// A panic or a runtime.Goexit anywhere the processor calls code it does
// not control, for a record, fails that record (and the rest of its lane),
// never the invocation; other lanes go on.
func TestPanicsAndGoexitsFailTheirRecord(t *testing.T) {
	t.Parallel()
	boom := func() { panic("boom") }
	cases := map[string]struct {
		cfg    func(logs *logBuffer) kafka.Config
		failed []string
		in     string // the error logged for t-0/1
	}{
		"handler panics": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": boom})}
		}, []string{"t-0/1", "t-0/2"}, "handler panicked: boom"},
		"handler panics with nil": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": func() { panic(nil) }})} //nolint:govet // a nil panic must be caught too
		}, []string{"t-0/1", "t-0/2"}, "handler panicked: panic called with nil argument"},
		"handler calls Goexit": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": runtime.Goexit})}
		}, []string{"t-0/1", "t-0/2"}, "handler panicked: called runtime.Goexit"},
		"the handler's error panics": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": panickingError{}})}
		}, []string{"t-0/1", "t-0/2"}, "handler's error panicked: Error bug"},
		"dead-letter send panics": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": kafka.Permanent(errors.New("bad"))}),
				DeadLetter: &deadLetters{do: boom}}
		}, []string{"t-0/1", "t-0/2"}, "dead-letter send panicked: boom"},
		"dead-letter send calls Goexit": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": kafka.Permanent(errors.New("bad"))}),
				DeadLetter: &deadLetters{do: runtime.Goexit}}
		}, []string{"t-0/1", "t-0/2"}, "dead-letter send panicked: called runtime.Goexit"},
		"lane key panics": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: noop, LaneKey: laneKeyDoing("t-0/1", boom)}
		}, []string{"t-0/1", "t-0/2", "t-0/3"}, "lane key panicked: boom"},
		"lane key calls Goexit": {func(*logBuffer) kafka.Config {
			return kafka.Config{Handler: noop, LaneKey: laneKeyDoing("t-0/1", runtime.Goexit)}
		}, []string{"t-0/1", "t-0/2", "t-0/3"}, "lane key panicked: called runtime.Goexit"},
		"the logger panics on a completed record's line": {func(logs *logBuffer) kafka.Config {
			return kafka.Config{Handler: noop, Logger: slog.New(lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
				if recordOf(r) == "t-0/1" && r.Level == slog.LevelDebug {
					panic("log bug")
				}
			}})}
		}, []string{"t-0/1", "t-0/2"}, "logger panicked: log bug"},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var logs logBuffer
				cfg := tc.cfg(&logs)
				if cfg.Logger == nil {
					cfg.Logger = logs.Logger()
				}
				var rec recorder
				inner := cfg.Handler
				cfg.Handler = func(ctx context.Context, r kafka.Record) error {
					rec.Start(name(r))
					return inner(ctx, r)
				}
				// t-0/1, t-0/2 and t-0/3 share key a but for t-0/3's null key;
				// t-1/1 is another partition.
				resp, err := processReturns(t, newProcessor(t, cfg), "t-0/1:a", "t-0/2:a", "t-0/3", "t-1/1:a")
				require.NoError(t, err)
				require.Equal(t, tc.failed, failed(resp))
				require.Contains(t, rec.Started(), "t-1/1", "other partitions go on")
				require.NotContains(t, rec.Started(), "t-0/2", "the rest of the lane does not start")
				line := logs.line(t, "t-0/1")
				require.Equal(t, "ERROR", line["level"])
				require.Equal(t, "panicked", line["outcome"])
				require.Contains(t, line["error"], tc.in)
			})
		})
	}
}

// panickingError is an error whose Error method panics.
type panickingError struct{}

func (panickingError) Error() string { panic("Error bug") }

// laneKeyDoing is a LaneKey that calls do for record at, and gives the
// record key otherwise.
func laneKeyDoing(at string, do func()) func(kafka.Record) (string, bool) {
	return func(r kafka.Record) (string, bool) {
		if name(r) == at {
			do()
		}
		return string(r.Key), r.Key != nil
	}
}

// A panic is logged with the stack of the code that panicked.
func TestAPanicIsLoggedWithItsStack(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": func() { panic("kaboom") }}), Logger: logs.Logger()})
	_, err := p.Process(context.Background(), records(t, "t-0/1:a"))
	require.NoError(t, err)
	require.Contains(t, logs.line(t, "t-0/1")["stack"], "helpers_test.go", "the stack names the panicking handler")
}

// A lane key function that fails for a record fails every later record of
// its partition, whatever their keys (any of them may share its lane), and
// nothing of the partition before it: those records' lanes are known. The
// next partition's keys are asked again.
func TestALaneKeyPanicFailsTheRestOfItsPartition(t *testing.T) {
	t.Parallel()
	var rec recorder
	var asked atomic.Int32
	key := laneKeyDoing("t-0/3", func() { panic("key bug") })
	p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil), LaneKey: func(r kafka.Record) (string, bool) {
		asked.Add(1)
		return key(r)
	}})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:c", "t-0/5", "t-1/1:a", "t-1/2:b"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/3", "t-0/4", "t-0/5"}, failed(resp))
	require.ElementsMatch(t, []string{"t-0/1", "t-0/2", "t-1/1", "t-1/2"}, rec.Started())
	require.Equal(t, int32(5), asked.Load(), "asked for t-0/1 to t-0/3, then t-1's two")

	// Under StopOnFirstFailure it is the batch's first failure: nothing starts.
	rec = recorder{}
	p = newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil), LaneKey: key, StopOnFirstFailure: true})
	resp, err = p.Process(context.Background(), records(t, "t-0/1:a", "t-0/3:a", "t-1/1:a"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1", "t-0/3", "t-1/1"}, failed(resp))
	require.Empty(t, rec.Started())
}

// Runtime.Goexit and panics outside a record (the metrics hook, the
// batch's log line, the logger derived for the batch) neither keep
// Process from returning nor change the response.
func TestPanicsAndGoexitsOutsideARecordChangeNothing(t *testing.T) {
	t.Parallel()
	handler := handlerOf(nil, map[string]any{"t-0/2": errors.New("fails")})
	onBatchLine := func(do func()) *slog.Logger {
		return slog.New(lanestest.HookHandler{Fn: func(r slog.Record) {
			if r.Message == "kafka: batch" || r.Message == "kafka: metrics hook panicked" {
				do()
			}
		}})
	}
	cases := map[string]kafka.Config{
		"metrics hook panics":        {Metrics: func(kafka.BatchMetrics) { panic("hook bug") }},
		"metrics hook calls Goexit":  {Metrics: func(kafka.BatchMetrics) { runtime.Goexit() }},
		"batch line panics":          {Logger: onBatchLine(func() { panic("log bug") })},
		"batch line calls Goexit":    {Logger: onBatchLine(runtime.Goexit)},
		"deriving the logger exits":  {Logger: slog.New(lanestest.HookHandler{Fn: func(slog.Record) {}, ExitOnWith: true})},
		"hook and its log line fail": {Metrics: func(kafka.BatchMetrics) { panic("hook bug") }, Logger: onBatchLine(runtime.Goexit)},
	}
	for title, cfg := range cases {
		t.Run(title, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				cfg.Handler = handler
				resp, err := processReturns(t, newProcessor(t, cfg), "t-0/1:a", "t-0/2:b", "t-0/3:b")
				require.NoError(t, err)
				require.Equal(t, []string{"t-0/2", "t-0/3"}, failed(resp))
			})
		})
	}

	t.Run("the refused batch's log line calls Goexit", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			p := newProcessor(t, kafka.Config{Handler: handler, Logger: slog.New(lanestest.HookHandler{Fn: func(slog.Record) { runtime.Goexit() }})})
			_, err := processReturns(t, p, "t-0/1:a", "t-0/1:a")
			require.ErrorIs(t, err, kafka.ErrInvalidBatch)
		})
	})
}

// The hook's panic is logged, with its stack.
func TestAPanickingMetricsHookIsLogged(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, kafka.Config{Handler: noop, Metrics: func(kafka.BatchMetrics) { panic("hook bug") }, Logger: logs.Logger()})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	last := logs.last(t)
	require.Equal(t, "kafka: metrics hook panicked", last["msg"])
	require.Equal(t, "hook bug", last["panic"])
	require.Contains(t, last["stack"], "panic_test.go")
}

// With a logger that always panics, every started record fails (its log
// line panicked): everything is delivered again and nothing is lost.
func TestALoggerThatAlwaysPanicsCrashesNothing(t *testing.T) {
	t.Parallel()
	dl := &deadLetters{}
	p := newProcessor(t, kafka.Config{Handler: handlerOf(nil, map[string]any{
		"t-0/2": errors.New("fail"), "t-0/3": func() { panic("handler bug") }, "t-0/4": kafka.Permanent(errors.New("bad")),
	}), Logger: slog.New(lanestest.PanickingHandler{}), DeadLetter: dl, Metrics: func(kafka.BatchMetrics) { panic("hook bug") }})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:b", "t-0/3:c", "t-0/4:d", "t-0/5:d"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/3", "t-0/4", "t-0/5"}, failed(resp))
	require.Equal(t, []string{"t-0/4"}, dl.Sent(), "sent before its log line panicked: a redelivery sends it again")
	_, err = p.Process(ctx, records(t, "t-0/1:a", "t-0/1:a"))
	require.ErrorIs(t, err, kafka.ErrInvalidBatch, "the refused batch's log line panicked")
}

// Not parallel: nothing else runs, so any goroutine left is Process's.
func TestNoGoroutineOutlivesProcess(t *testing.T) {
	defer goleak.VerifyNone(t)
	specs := []string{"t-0/1:a", "t-0/2:b", "t-0/3:c", "t-0/4:a", "t-0/5", "t-0/6", "t-1/1:d", "t-1/2:d", "t-1/3:e", "t-2/1:k"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, cfg := range []kafka.Config{
		{},
		{Concurrency: 3},
		{StopOnFirstFailure: true},
		{DeadLetter: &deadLetters{}},
		{LaneKey: laneKeyDoing("t-2/1", runtime.Goexit), Metrics: func(kafka.BatchMetrics) { runtime.Goexit() }},
		{Logger: slog.New(lanestest.HookHandler{Fn: func(r slog.Record) {
			if recordOf(r) == "t-0/1" {
				runtime.Goexit()
			}
		}})},
	} {
		cfg.Handler = handlerOf(nil, map[string]any{
			"t-0/2": errors.New("fail"), "t-0/3": func() { panic("panic") },
			"t-1/1": kafka.Permanent(errors.New("bad")), "t-1/3": runtime.Goexit,
		})
		_, err := newProcessor(t, cfg).Process(ctx, records(t, specs...))
		require.NoError(t, err)
		require.NoError(t, goleak.Find(), "goroutines left after Process returned")
	}
}

// A handler's Goexit ends its lane's goroutine: the rest of the lane is
// never resumed, and counts as skipped after a failure; another goroutine
// takes the other lanes.
func TestAGoexitSkipsTheRestOfItsLane(t *testing.T) {
	t.Parallel()
	var m kafka.BatchMetrics
	var rec recorder
	p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, map[string]any{"t-0/1": runtime.Goexit}), Concurrency: 1,
		Metrics: func(bm kafka.BatchMetrics) { m = bm }})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-1/1:a"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(resp))
	require.Equal(t, []string{"t-0/1", "t-0/3", "t-1/1"}, rec.Started())
	var outcomes []kafka.Outcome
	for _, r := range m.Records {
		outcomes = append(outcomes, r.Outcome)
	}
	require.Equal(t, []kafka.Outcome{kafka.Panicked, kafka.SkippedAfterFailure, kafka.Succeeded, kafka.Succeeded}, outcomes)
}

// A logger that calls runtime.Goexit on the line of a record that
// succeeded fails that record, and the rest of its lane, as a handler's
// Goexit would: it cannot be known to be logged.
func TestALoggerGoexitOnARecordsLineFailsIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var m kafka.BatchMetrics
		p := newProcessor(t, kafka.Config{Handler: noop, Logger: goexitOnTheLineOf("t-0/1"), Metrics: func(bm kafka.BatchMetrics) { m = bm }})
		resp, err := processReturns(t, p, "t-0/1:a", "t-0/2:a", "t-0/3:b")
		require.NoError(t, err)
		require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(resp))
		require.Equal(t, kafka.Panicked, m.Records[0].Outcome)
	})
}

// A logger's Goexit on a record's line is that record's failure: under
// StopOnFirstFailure it stops the batch, as a handler's Goexit would.
func TestALoggerGoexitStopsTheBatchUnderStopOnFirstFailure(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil), Logger: goexitOnTheLineOf("t-0/1"), StopOnFirstFailure: true, Concurrency: 1})
		resp, err := processReturns(t, p, "t-0/1:a", "t-0/2:a", "t-0/3:b") // a's lane first: it is longest
		require.NoError(t, err)
		require.Equal(t, []string{"t-0/1", "t-0/2", "t-0/3"}, failed(resp))
		require.Equal(t, []string{"t-0/1"}, rec.Started(), "t-0/3 did not start after t-0/1 failed")
	})
}

// goexitOnTheLineOf is a logger that calls runtime.Goexit on the line of
// record "t-0/5".
func goexitOnTheLineOf(record string) *slog.Logger {
	return slog.New(lanestest.HookHandler{Fn: func(r slog.Record) {
		if recordOf(r) == record {
			runtime.Goexit()
		}
	}})
}
