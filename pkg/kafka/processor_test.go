package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

// byLane groups started records by the lane their spec names: the
// partition and the key ("t-0:a"), "t-0:" for the null key.
func byLane(ev events.KafkaEvent, started []string) map[string][]string {
	keyOf := map[string]string{}
	for tp, recs := range ev.Records {
		for _, r := range recs {
			k := ""
			if r.Key != "" {
				k = r.Key
			}
			keyOf[tp+"/"+itoa(r.Offset)] = tp + ":" + k
		}
	}
	out := map[string][]string{}
	for _, s := range started {
		out[keyOf[s]] = append(out[keyOf[s]], s)
	}
	return out
}

// A lane is a partition and a key: the same key in two partitions is two
// lanes, a partition's null-key records are one lane; every lane runs in
// offset order, and the lanes run at the same time (each lane's first
// record waits for every lane to have started: this completes only if
// they do).
func TestALaneIsAPartitionAndAKeyAndLanesRunInParallel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ev := records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4", "t-0/5:b", "t-0/6", "t-1/1:a", "t-1/2:a", "t-0/7:a")
		heads := map[string]bool{"t-0/1": true, "t-0/2": true, "t-0/4": true, "t-1/1": true}
		var arrived sync.WaitGroup
		arrived.Add(len(heads))
		all := make(chan struct{})
		go func() { arrived.Wait(); close(all) }()
		var rec recorder
		var mu sync.Mutex
		running := map[string]bool{}
		var m kafka.BatchMetrics
		p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
			lane := r.TopicPartition() + ":" + string(r.Key)
			mu.Lock()
			if running[lane] {
				t.Errorf("lane %s runs two records at once", lane)
			}
			running[lane] = true
			mu.Unlock()
			rec.Start(name(r))
			if heads[name(r)] {
				arrived.Done()
				<-all
			}
			time.Sleep(time.Millisecond)
			mu.Lock()
			running[lane] = false
			mu.Unlock()
			return nil
		}, Metrics: func(bm kafka.BatchMetrics) { m = bm }})
		resp, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		require.Equal(t, map[string][]string{
			"t-0:YQ==": {"t-0/1", "t-0/3", "t-0/7"},
			"t-0:Yg==": {"t-0/2", "t-0/5"},
			"t-0:":     {"t-0/4", "t-0/6"},
			"t-1:YQ==": {"t-1/1", "t-1/2"},
		}, byLane(ev, rec.Started()))
		require.Equal(t, 4, m.Lanes)
	})
}

// Config.LaneKey replaces the record key: here a header, and records
// without it (ok false) go to their partition's null-key lane. A constant
// key makes each partition one lane: sequential per partition.
func TestLaneKeyChoosesTheLane(t *testing.T) {
	t.Parallel()
	ev := records(t, "t-0/1:x", "t-0/2:x", "t-0/3:x", "t-0/4:y", "t-1/1:x")
	ev.Records["t-0"][0].Headers = []map[string]events.JSONNumberBytes{{"job": []byte("j1")}}
	ev.Records["t-0"][2].Headers = []map[string]events.JSONNumberBytes{{"job": []byte("j2")}}
	header := func(r kafka.Record) (string, bool) {
		for _, h := range r.Headers {
			if h.Key == "job" {
				return string(h.Value), true
			}
		}
		return "", false
	}
	lanes := func(key func(kafka.Record) (string, bool)) (int, []string) {
		var m kafka.BatchMetrics
		var rec recorder
		p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil), LaneKey: key, Concurrency: 1,
			Metrics: func(bm kafka.BatchMetrics) { m = bm }})
		_, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		return m.Lanes, rec.Started()
	}
	n, order := lanes(header)
	require.Equal(t, 4, n, "j1, j2 and the null-key lane of t-0 (2 and 4, whatever their record keys), the null-key lane of t-1")
	require.Equal(t, []string{"t-0/2", "t-0/4", "t-0/1", "t-0/3", "t-1/1"}, order, "the longest lane first, then batch order")
	n, _ = lanes(func(kafka.Record) (string, bool) { return "", true })
	require.Equal(t, 2, n, "one lane per partition")
	n, _ = lanes(func(kafka.Record) (string, bool) { return "", false })
	require.Equal(t, 2, n, "every record in its partition's null-key lane")
	n, _ = lanes(nil)
	require.Equal(t, 3, n, "the record keys: x and y in t-0, x in t-1")
}

// A failure fails the rest of its lane, reported and not started; other
// lanes of its partition go on. The response names every record not
// completed, in topic-partition then offset order: the failed one, its
// lane's later ones, nothing completed.
func TestAFailureFailsTheRestOfItsLaneOnly(t *testing.T) {
	t.Parallel()
	ev := records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:b", "t-0/5:a", "t-1/1:a", "t-0/6")
	var rec recorder
	var logs logBuffer
	p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, map[string]any{"t-0/3": errors.New("boom")}), Logger: logs.Logger()})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/3", "t-0/5"}, failed(resp))
	require.NotContains(t, rec.Started(), "t-0/5")
	require.Subset(t, rec.Started(), []string{"t-0/1", "t-0/2", "t-0/3", "t-0/4", "t-0/6", "t-1/1"})
	require.Equal(t, "WARN", logs.line(t, "t-0/3")["level"])
	require.Equal(t, "boom", logs.line(t, "t-0/3")["error"])
	require.Equal(t, "skipped_after_failure", logs.line(t, "t-0/5")["outcome"])
}

func TestStopOnFirstFailureStartsNothingMore(t *testing.T) {
	t.Parallel()
	ev := records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:c", "t-1/1:a")
	var rec recorder
	p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, map[string]any{"t-0/2": errors.New("boom")}),
		StopOnFirstFailure: true, Concurrency: 1})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	// The longest lane (a of t-0) first, then b, which fails: c and t-1's
	// lane never start.
	require.Equal(t, []string{"t-0/1", "t-0/3", "t-0/2"}, rec.Started())
	require.Equal(t, []string{"t-0/2", "t-0/4", "t-1/1"}, failed(resp))
}

// With parallel lanes, a failure stops what has not started; what runs
// finishes and, if it succeeds, is completed.
func TestStopOnFirstFailureLetsRunningRecordsFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ev := records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "t-0/4:b", "t-0/5:c")
		var rec recorder
		p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
			rec.Start(name(r))
			switch name(r) {
			case "t-0/1":
				time.Sleep(time.Second)
				return errors.New("boom")
			case "t-0/2":
				time.Sleep(2 * time.Second) // running when t-0/1 fails
			}
			return nil
		}, StopOnFirstFailure: true, Concurrency: 2})
		resp, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"t-0/1", "t-0/2"}, rec.Started())
		require.Equal(t, []string{"t-0/1", "t-0/3", "t-0/4", "t-0/5"}, failed(resp))
	})
}

// peakLanes runs lanes lanes of one record each, each taking a second of
// the bubble's clock, and returns how many ran at once at most.
func peakLanes(t *testing.T, concurrency, lanes int) int32 {
	var now, peak atomic.Int32
	synctest.Test(t, func(t *testing.T) {
		var specs []string
		for i := range lanes {
			specs = append(specs, "t-0/"+itoa(int64(i))+":k"+itoa(int64(i)))
		}
		p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
			n := now.Add(1)
			for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
			}
			time.Sleep(time.Second)
			now.Add(-1)
			return nil
		}, Concurrency: concurrency})
		resp, err := p.Process(context.Background(), records(t, specs...))
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
	})
	return peak.Load()
}

func TestConcurrencyBoundsTheLanesAtExactlyItsValue(t *testing.T) {
	t.Parallel()
	require.Equal(t, int32(3), peakLanes(t, 3, 7))
	require.Equal(t, int32(3), peakLanes(t, 3, 3))
	require.Equal(t, int32(1), peakLanes(t, 1, 2))
	require.Equal(t, int32(7), peakLanes(t, 0, 7))
}

// Deadline tests run in a synctest bubble: time is the bubble's.
func TestNoRecordStartsInsideTheDeadlineMarginAtExactlyItsValue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const margin = 1500 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var rec recorder
		p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
			rec.Start(name(r))
			switch name(r) {
			case "t-0/1": // leaves exactly the margin: t-0/2 starts
				time.Sleep(3*time.Second - margin)
			case "t-1/1": // leaves a nanosecond less: t-1/2 does not
				time.Sleep(3*time.Second - margin + time.Nanosecond)
			}
			return nil
		}, DeadlineMargin: margin, ResponseReserve: 100 * time.Millisecond})
		resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:a", "t-1/1:a", "t-1/2:a", "t-1/3:a"))
		require.NoError(t, err)
		require.Equal(t, []string{"t-1/2", "t-1/3"}, failed(resp))
		require.ElementsMatch(t, []string{"t-0/1", "t-0/2", "t-1/1"}, rec.Started())
	})
}

// The deadline is wall-clock time, which can step back: once a record is
// skipped for the deadline, the rest of its lane is skipped without
// another look at the clock.
func TestADeadlineSkipSkipsTheRestOfItsLaneWhenTheClockStepsBack(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var left atomic.Int64 // what the clock says remains before the deadline
	left.Store(int64(time.Minute))
	var logs logBuffer
	stepBack := lanestest.HookHandler{Next: logs.Logger().Handler(), Fn: func(r slog.Record) {
		if recordOf(r) == "t-0/2" {
			left.Store(int64(time.Minute)) // the clock steps back once t-0/2 is skipped
		}
	}}
	var rec recorder
	p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
		rec.Start(name(r))
		left.Store(int64(500 * time.Millisecond)) // inside the default 1 s margin
		return nil
	}, Now: func() time.Time { return deadline.Add(-time.Duration(left.Load())) }, Logger: slog.New(stepBack)})
	resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:a"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1"}, rec.Started())
	require.Equal(t, []string{"t-0/2", "t-0/3"}, failed(resp))
	require.Equal(t, "skipped_deadline", logs.line(t, "t-0/2")["outcome"])
	require.Equal(t, "skipped_deadline", logs.line(t, "t-0/3")["outcome"])
}

func TestAnExpiredOrCancelledContextStartsNothing(t *testing.T) {
	t.Parallel()
	expired, cancel1 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel1()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for name, ctx := range map[string]context.Context{"expired": expired, "cancelled": cancelled} {
		t.Run(name, func(t *testing.T) {
			var rec recorder
			p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil)})
			resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2", "t-1/1:b"))
			require.NoError(t, err)
			require.Equal(t, []string{"t-0/1", "t-0/2", "t-1/1"}, failed(resp))
			require.Empty(t, rec.Started())
		})
	}
}

// The handlers' context expires the response reserve before the
// deadline, and is cancelled when Process returns; Process returns at the
// reserve when a handler respects its context.
func TestTheHandlersContextEndsAtTheReserveAndWhenProcessReturns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		deadline := time.Now().Add(800 * time.Millisecond)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		var seen context.Context
		p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
			seen = ctx
			if _, ok := ctx.Deadline(); !ok {
				return nil
			}
			<-ctx.Done() // a long task interrupted by the response reserve
			return ctx.Err()
		}, DeadlineMargin: 500 * time.Millisecond, ResponseReserve: 400 * time.Millisecond})
		resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:a"))
		require.NoError(t, err)
		require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(resp))
		require.Equal(t, deadline.Add(-400*time.Millisecond), time.Now(), "the response leaves at the reserve")
		got, ok := seen.Deadline()
		require.True(t, ok)
		require.Equal(t, deadline.Add(-400*time.Millisecond), got)
		require.ErrorIs(t, seen.Err(), context.DeadlineExceeded)

		_, err = p.Process(context.Background(), records(t, "t-0/1:a"))
		require.NoError(t, err)
		require.ErrorIs(t, seen.Err(), context.Canceled, "without a deadline, cancelled when Process returns")
	})
}

func TestProcessWaitsForAHandlerThatIgnoresItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var finished atomic.Bool
		p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
			time.Sleep(500 * time.Millisecond) // past the deadline, ignoring ctx
			finished.Store(true)
			return nil
		}, DeadlineMargin: 100 * time.Millisecond, ResponseReserve: 50 * time.Millisecond})
		_, err := p.Process(ctx, records(t, "t-0/1:a"))
		require.NoError(t, err)
		require.True(t, finished.Load(), "Process returned while a handler was still running")
	})
}

// Config.Now, not the wall clock, judges the deadline.
func TestNowJudgesTheDeadline(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var now atomic.Int64
	now.Store(deadline.Add(-kafka.DefaultDeadlineMargin).UnixNano()) // exactly the margin left
	var rec recorder
	p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, nil), Now: func() time.Time { return time.Unix(0, now.Load()) }})
	resp, err := p.Process(ctx, records(t, "t-0/1:a"))
	require.NoError(t, err)
	require.Empty(t, failed(resp))

	now.Add(1) // a nanosecond less
	resp, err = p.Process(ctx, records(t, "t-0/1:a", "t-1/1:b"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1", "t-1/1"}, failed(resp))
	require.Equal(t, []string{"t-0/1"}, rec.Started())
}

func TestEmptyBatchGivesAnEmptyResponse(t *testing.T) {
	t.Parallel()
	var hooked bool
	p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
		t.Error("handler called for an empty batch")
		return nil
	}, Metrics: func(kafka.BatchMetrics) { hooked = true }})
	for _, ev := range []events.KafkaEvent{{}, {Records: map[string][]events.KafkaRecord{"t-0": {}}}} {
		resp, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		body, err := json.Marshal(resp)
		require.NoError(t, err)
		require.JSONEq(t, `{"batchItemFailures":[]}`, string(body))
	}
	require.False(t, hooked)
}

func TestTheResponseHasTheItemIdentifierShape(t *testing.T) {
	t.Parallel()
	p := newProcessor(t, kafka.Config{Handler: handlerOf(nil, map[string]any{"my.topic-3/42": errors.New("no")})})
	resp, err := p.Process(context.Background(), records(t, "my.topic-3/41:a", "my.topic-3/42:a", "my.topic-3/43:a"))
	require.NoError(t, err)
	body, err := json.Marshal(resp)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures":[
		{"itemIdentifier":{"topic-partition":"my.topic-3","offset":42}},
		{"itemIdentifier":{"topic-partition":"my.topic-3","offset":43}}]}`, string(body))
}

func TestLogsOneLinePerRecordAndOnePerBatch(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	p := newProcessor(t, kafka.Config{Handler: handlerOf(nil, map[string]any{"t-1/7": errors.New("nope")}), Logger: logs.Logger()})
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	_, err := p.Process(ctx, records(t, "t-0/5:a", "t-1/7:b", "t-1/8:b"))
	require.NoError(t, err)

	ok := logs.line(t, "t-0/5")
	require.Equal(t, "DEBUG", ok["level"])
	require.Equal(t, "t", ok["topic"])
	require.EqualValues(t, 0, ok["partition"])
	require.EqualValues(t, 5, ok["offset"])
	require.Equal(t, "succeeded", ok["outcome"])
	require.Equal(t, "req-1", ok["aws_request_id"])
	require.Contains(t, ok, "duration")
	require.Contains(t, ok, "wait")
	bad := logs.line(t, "t-1/7")
	require.Equal(t, "WARN", bad["level"])
	require.Equal(t, "nope", bad["error"])
	require.Equal(t, "skipped_after_failure", logs.line(t, "t-1/8")["outcome"])

	last := logs.last(t)
	require.Equal(t, "kafka: batch", last["msg"])
	require.Equal(t, "INFO", last["level"])
	require.EqualValues(t, 3, last["records"])
	require.EqualValues(t, 2, last["failed"])
	require.EqualValues(t, 2, last["lanes"])
	require.Equal(t, "req-1", last["aws_request_id"])
}

func TestMetricsSeeEveryRecordAfterEveryHandlerReturned(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var running atomic.Int32
		var calls int
		var got kafka.BatchMetrics
		p := newProcessor(t, kafka.Config{
			Handler: func(ctx context.Context, r kafka.Record) error {
				running.Add(1)
				defer running.Add(-1)
				time.Sleep(2 * time.Millisecond)
				if name(r) == "t-0/1" {
					return errors.New("fail")
				}
				return nil
			},
			Metrics: func(m kafka.BatchMetrics) {
				calls++
				require.Zero(t, running.Load(), "the hook runs after the handlers")
				got = m
			},
		})
		_, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b", "t-0/4:b"))
		require.NoError(t, err)
		require.Equal(t, 1, calls)
		require.Equal(t, 2, got.Lanes)
		require.Equal(t, 2, got.Count(kafka.Succeeded))
		require.Equal(t, 1, got.Count(kafka.Failed))
		require.Equal(t, 1, got.Count(kafka.SkippedAfterFailure))
		b2 := got.Records[3]
		require.Equal(t, kafka.RecordMetrics{TopicPartition: "t-0", Offset: 4, Outcome: kafka.Succeeded,
			Wait: 2 * time.Millisecond, Duration: 2 * time.Millisecond}, b2, "t-0/4 waited for t-0/3")
		require.Zero(t, got.Records[1].Duration, "t-0/2 never ran")
		require.Equal(t, 4*time.Millisecond, got.Duration)
	})
}

func TestTheMetricsHookIsSkippedWhenNoTimeIsLeft(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		var logs logBuffer
		var called atomic.Bool
		p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
			<-ctx.Done() // runs into the response reserve
			return nil
		}, DeadlineMargin: 500 * time.Millisecond, ResponseReserve: 500 * time.Millisecond,
			Metrics: func(kafka.BatchMetrics) { called.Store(true) }, Logger: logs.Logger()})
		_, err := p.Process(ctx, records(t, "t-0/1:a"))
		require.NoError(t, err)
		require.False(t, called.Load(), "the hook ran with the response reserve spent")
		require.Equal(t, "kafka: metrics hook skipped: no time left before the deadline", logs.last(t)["msg"])
	})
}

func TestPermanentWrapsAndMatches(t *testing.T) {
	t.Parallel()
	base := errors.New("bad json")
	err := kafka.Permanent(base)
	require.True(t, kafka.IsPermanent(err))
	require.True(t, kafka.IsPermanent(errors.Join(errors.New("ctx"), err)))
	require.ErrorIs(t, err, base)
	require.Equal(t, "permanent: bad json", err.Error())
	require.False(t, kafka.IsPermanent(base))
	require.NoError(t, kafka.Permanent(nil))
}
