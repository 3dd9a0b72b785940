package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A processor reuses the room of a batch done with (see
// TestABatchAfterAnotherStartsClean): nothing of a batch is left to the
// next. A lane key function's panic stops its own batch under
// StopOnFirstFailure, not the next one.
func TestALaneKeyPanicStopsOnlyItsOwnBatch(t *testing.T) {
	t.Parallel()
	p := newProcessor(t, kafka.Config{Handler: noop, StopOnFirstFailure: true, Concurrency: 1,
		LaneKey: func(r kafka.Record) (string, bool) {
			if name(r) == "t-0/1" {
				panic("lane key bug")
			}
			return string(r.Key), r.Key != nil
		}})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-1/1:b"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1", "t-1/1"}, failed(resp), "the panic stops the batch")
	resp, err = p.Process(context.Background(), records(t, "t-0/2:a", "t-1/2:b"))
	require.NoError(t, err)
	require.Empty(t, failed(resp), "the next batch runs")
}

// A record of a batch after another logs nothing of the record at its
// index in the one before: no error, reason, wait or duration.
func TestABatchAfterAnotherLogsNothingOfIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		q := &fakeQuarantine{view: kafka.QuarantineView{
			Records: dispositions(t, map[string]kafka.Disposition{"t-0/2": {Drop: true, Reason: "seen before"}}),
		}}
		p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
			time.Sleep(time.Second)
			return errors.New("busy")
		}, Quarantine: q, QuarantineThreshold: testThreshold, Logger: logs.Logger(), Concurrency: 1})
		_, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:b"))
		require.NoError(t, err)
		first := logs.line(t, "t-0/1")
		require.Contains(t, first["error"], "busy")
		require.InDelta(t, float64(time.Second), first["duration"], 0)
		require.Equal(t, "seen before", logs.line(t, "t-0/2")["reason"])

		// The same indexes, null keys (no quarantine check), nothing runs.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = p.Process(ctx, records(t, "t-0/11", "t-0/12"))
		require.NoError(t, err)
		for _, rec := range []string{"t-0/11", "t-0/12"} {
			line := logs.line(t, rec)
			require.Equal(t, "skipped_deadline", line["outcome"], rec)
			require.NotContains(t, line, "error", rec)
			require.NotContains(t, line, "reason", rec)
			require.InDelta(t, 0, line["duration"], 0, rec)
			require.InDelta(t, 0, line["wait"], 0, rec)
		}
	})
}

// Process calls on one processor at once each answer for their own batch,
// with the batches' room going back and forth between them.
func TestConcurrentProcessCallsAnswerForTheirOwnBatches(t *testing.T) {
	t.Parallel()
	var does sync.Map // record name -> what its handler does
	p := newProcessor(t, kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
		switch d, _ := does.Load(name(r)); d {
		case "fails":
			return errors.New("fails")
		case "panics":
			panic("handler bug")
		case "exits":
			runtime.Goexit()
		}
		runtime.Gosched()
		return nil
	}, Concurrency: 3})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for batch := range 100 {
				specs, want := randomBatch(r, fmt.Sprintf("w%db%d", w, batch), &does)
				resp, err := p.Process(context.Background(), records(t, specs...))
				got := failed(resp)
				slices.Sort(got)
				if err != nil || !slices.Equal(want, got) {
					t.Errorf("batch %v: reported %v (%v), want %v", specs, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// randomBatch returns the specs of a batch of up to three partitions of
// topic, each record succeeding, failing, panicking or calling
// runtime.Goexit (noted in does), and what Process must report: each
// record that does not succeed and the rest of its lane, sorted.
func randomBatch(r *rand.Rand, topic string, does *sync.Map) (specs, want []string) {
	want = []string{}
	for part := range 1 + r.IntN(3) {
		failedLane := map[string]bool{}
		for off := range r.IntN(25) {
			rec := fmt.Sprintf("%s-%d/%d", topic, part, off)
			spec, lane := rec, "null"
			if r.IntN(4) > 0 {
				lane = fmt.Sprintf("k%d", r.IntN(5))
				spec += ":" + lane
			}
			if d := []string{"fails", "panics", "exits"}[r.IntN(3)]; r.IntN(4) == 0 {
				does.Store(rec, d)
				failedLane[lane] = true
			}
			if failedLane[lane] {
				want = append(want, rec)
			}
			specs = append(specs, spec)
		}
	}
	slices.Sort(want)
	return specs, want
}
