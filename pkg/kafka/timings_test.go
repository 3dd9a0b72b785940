package kafka_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// The clock is read for the records' timings when something reads them: a
// Logger alone (no metrics hook) logs each record's wait and duration.
func TestALoggerAloneGetsTheTimings(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
			time.Sleep(3 * time.Millisecond)
			return nil
		}, Logger: logs.Logger()})
		_, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a"))
		require.NoError(t, err)
		second := logs.line(t, "t-0/2")
		require.InDelta(t, float64(3*time.Millisecond), second["duration"], 0)
		require.InDelta(t, float64(3*time.Millisecond), second["wait"], 0, "t-0/2 waited for t-0/1")
	})
}

// A processor reuses the room of a batch done with for the next one: a
// batch after another, smaller or larger, with other keys, starts clean.
func TestABatchAfterAnotherStartsClean(t *testing.T) {
	t.Parallel()
	var got kafka.BatchMetrics
	p := newProcessor(t, kafka.Config{
		Handler: handlerOf(nil, map[string]any{"t-0/2": errors.New("busy"), "u-1/7": errors.New("busy")}),
		Metrics: func(m kafka.BatchMetrics) { got = m },
	})
	for _, tc := range []struct {
		specs  []string
		failed []string
		lanes  int
	}{
		{[]string{"t-0/1:a", "t-0/2:a", "t-0/3:a", "t-0/4:b", "t-1/1:a", "t-1/2"}, []string{"t-0/2", "t-0/3"}, 4},
		{[]string{"u-0/5:x", "u-0/6:y"}, []string{}, 2},
		{[]string{"u-1/7:z", "u-1/8:z", "u-1/9", "v-0/1:z", "v-0/2:z", "v-0/3:q", "v-0/4:q", "v-0/5"}, []string{"u-1/7", "u-1/8"}, 5},
		{[]string{"t-0/2"}, []string{"t-0/2"}, 1},
	} {
		resp, err := p.Process(context.Background(), records(t, tc.specs...))
		require.NoError(t, err)
		require.Equal(t, tc.failed, failed(resp), tc.specs)
		require.Len(t, got.Records, len(tc.specs))
		require.Equal(t, tc.lanes, got.Lanes, tc.specs)
		require.Equal(t, len(tc.specs)-len(tc.failed), got.Count(kafka.Succeeded), tc.specs)
	}
}

// A record that never started has no Wait, as RecordMetrics says, in the
// metrics and in its log line, however long it waited for its lane:
// refused before it runs (another partition count, without a quarantine),
// or skipped for the deadline.
func TestARecordThatNeverStartedHasNoWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     kafka.Config
		outcome kafka.Outcome
	}{
		{"refused", kafka.Config{PartitionCount: 6}, kafka.Failed},
		{"skipped for the deadline", kafka.Config{DeadlineMargin: 59500 * time.Millisecond}, kafka.SkippedDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var logs logBuffer
				var got kafka.BatchMetrics
				cfg := tc.cfg
				cfg.Handler = func(context.Context, kafka.Record) error {
					time.Sleep(time.Second) // then less than the margin is left
					return nil
				}
				cfg.Logger, cfg.Metrics = logs.Logger(), func(m kafka.BatchMetrics) { got = m }
				ev := withHeader(records(t, "t-0/1:a", "t-0/2:a"), kafka.PartitionCountHeader, "7", "t-0/2")
				resp, err := newProcessor(t, cfg).Process(ctx, ev)
				require.NoError(t, err)
				require.Equal(t, []string{"t-0/2"}, failed(resp))
				require.Len(t, got.Records, 2)
				require.Equal(t, time.Second, got.Records[0].Duration, "t-0/1 ran")
				require.Equal(t, tc.outcome, got.Records[1].Outcome)
				require.Zero(t, got.Records[1].Wait, "t-0/2 never started")
				require.Zero(t, got.Records[1].Duration)
				require.InDelta(t, 0, logs.line(t, "t-0/2")["wait"], 0, "t-0/2 never started")
			})
		})
	}
}
