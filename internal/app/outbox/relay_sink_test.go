package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// sinkFunc is a func as an outbox.Sink.
type sinkFunc func(ctx context.Context, msgs []outbox.Message, trace string) []error

func (f sinkFunc) Send(ctx context.Context, msgs []outbox.Message, trace string) []error {
	return f(ctx, msgs, trace)
}

func relayOn(t *testing.T, s outbox.Sink) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(outbox.RelayConfig{Sink: s})
	require.NoError(t, err)
	return r
}

func TestNewRelayRefusesANilSink(t *testing.T) {
	t.Parallel()
	r, err := outbox.NewRelay(outbox.RelayConfig{})
	require.ErrorIs(t, err, outbox.ErrInvalidConfig)
	require.ErrorContains(t, err, "Sink")
	require.Nil(t, r)
}

// The relay hands a sink one round at a time: at most one message per
// job, and a job's next message only after the sink acknowledged the one
// before. What a transport does inside a round cannot reorder a job.
func TestRelayHandsTheSinkOneMessagePerJobPerRound(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	b := history("job-43", jobs.EventStarted)
	var rounds [][]string
	acked := map[string]int64{}
	resp, err := relayOn(t, sinkFunc(func(_ context.Context, msgs []outbox.Message, _ string) []error {
		var round []string
		seen := map[string]bool{}
		for _, m := range msgs {
			require.False(t, seen[m.JobID], "two messages of %s in one round", m.JobID)
			seen[m.JobID] = true
			if v, ok := acked[m.JobID]; ok {
				require.Equal(t, v+1, m.Version, "%s before its job's previous version was acknowledged", m.OutboxID)
			}
			round = append(round, m.OutboxID)
		}
		for _, m := range msgs {
			acked[m.JobID] = m.Version
		}
		rounds = append(rounds, round)
		return make([]error, len(msgs))
	})).Handle(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1], a[2], a[3]}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, [][]string{{"job-42/v0", "job-43/v0"}, {"job-42/v1", "job-43/v1"}, {"job-42/v2"}, {"job-42/v3"}}, rounds)
}

// A sink that answers a round with another number of results than it had
// messages has told nothing of any: none counts as published, and the
// batch is retried from the first.
func TestRelayCountsAMessageWithoutAResultAsNotPublished(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted)
	b := history("job-43", jobs.EventStarted)
	for name, answer := range map[string]func(n int) []error{
		"none":     func(int) []error { return nil },
		"one less": func(n int) []error { return make([]error, n-1) },
		"one more": func(n int) []error { return make([]error, n+1) },
	} {
		calls := 0
		resp, err := relayOn(t, sinkFunc(func(_ context.Context, msgs []outbox.Message, _ string) []error {
			calls++
			return answer(len(msgs))
		})).Handle(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1]}})
		require.NoError(t, err, name)
		require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures, name)
		require.Equal(t, 1, calls, "%s: no job goes on past a message of unknown outcome", name)
	}
}

// A sink's error stops only its message's job; the response names the
// earliest record not published.
func TestRelayStopsOnlyTheJobOfAMessageTheSinkFailed(t *testing.T) {
	t.Parallel()
	a := history("job-42", jobs.EventStarted, jobs.EventProgress)
	b := history("job-43", jobs.EventStarted, jobs.EventProgress)
	var published []string
	resp, err := relayOn(t, sinkFunc(func(_ context.Context, msgs []outbox.Message, _ string) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if m.OutboxID == "job-43/v1" {
				errs[i] = errors.New("refused")
				continue
			}
			published = append(published, m.OutboxID)
		}
		return errs
	})).Handle(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{a[0], b[0], a[1], b[1], a[2], b[2]}})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: b[1].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Equal(t, []string{"job-42/v0", "job-43/v0", "job-42/v1", "job-42/v2"}, published)
}
