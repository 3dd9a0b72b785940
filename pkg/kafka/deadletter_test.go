package kafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A permanent error sends the record to the dead-letter store with its
// cause; the record then counts as completed and its lane goes on.
func TestAPermanentErrorIsDeadLetteredAndItsLaneGoesOn(t *testing.T) {
	t.Parallel()
	var rec recorder
	cause := kafka.Permanent(errors.New("not JSON"))
	var m kafka.BatchMetrics
	var sentCtx context.Context
	dl := &deadLetters{}
	p := newProcessor(t, kafka.Config{
		Handler: handlerOf(&rec, map[string]any{"t-0/1": cause}),
		DeadLetter: kafka.DeadLetterFunc(func(ctx context.Context, r kafka.Record, c error) error {
			sentCtx = ctx
			return dl.Send(ctx, r, c)
		}),
		Metrics: func(bm kafka.BatchMetrics) { m = bm },
	})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "a dead-lettered record is completed")
	require.ElementsMatch(t, []string{"t-0/1", "t-0/2", "t-0/3"}, rec.Started(), "its lane goes on")
	require.Equal(t, []string{"t-0/1"}, dl.Sent())
	require.Equal(t, []error{cause}, dl.causes)
	require.Equal(t, kafka.DeadLettered, m.Records[0].Outcome)
	require.ErrorIs(t, sentCtx.Err(), context.Canceled, "Send runs under the handlers' context, which ends with Process")
}

// Nothing is lost: a permanent error without a dead-letter store, or whose
// send fails, is an ordinary failure, reported with the rest of its lane.
func TestAPermanentErrorThatIsNotDeadLetteredIsReported(t *testing.T) {
	t.Parallel()
	cause := kafka.Permanent(errors.New("not JSON"))
	for name, dl := range map[string]kafka.DeadLetter{
		"no dead-letter store": nil,
		"the send fails":       &deadLetters{err: errors.New("throttled")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			var logs logBuffer
			p := newProcessor(t, kafka.Config{Handler: handlerOf(&rec, map[string]any{"t-0/1": cause}), DeadLetter: dl, Logger: logs.Logger()})
			resp, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"))
			require.NoError(t, err)
			require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(resp))
			require.ElementsMatch(t, []string{"t-0/1", "t-0/3"}, rec.Started())
			line := logs.line(t, "t-0/1")
			require.Equal(t, "failed", line["outcome"])
			require.Contains(t, line["error"], "permanent: not JSON")
			if dl != nil {
				require.Contains(t, line["error"], "kafka: dead-letter t-0 offset 1: throttled")
			}
		})
	}
}

// Only a permanent error is dead-lettered.
func TestATransientErrorIsNotDeadLettered(t *testing.T) {
	t.Parallel()
	dl := &deadLetters{}
	p := newProcessor(t, kafka.Config{Handler: handlerOf(nil, map[string]any{"t-0/1": errors.New("timeout")}), DeadLetter: dl})
	resp, err := p.Process(context.Background(), records(t, "t-0/1:a"))
	require.NoError(t, err)
	require.Equal(t, []string{"t-0/1"}, failed(resp))
	require.Empty(t, dl.Sent())
}
