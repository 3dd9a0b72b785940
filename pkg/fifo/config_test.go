package fifo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// newProcessor is fifo.New for a Config the test means to be valid.
func newProcessor(t testing.TB, cfg fifo.Config) *fifo.Processor {
	t.Helper()
	p, err := fifo.New(cfg)
	require.NoError(t, err)
	return p
}

// New refuses each Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field, and accepts each bound at exactly
// its value.
func TestNewRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	dl := &fifo.DeadLetterQueue{Client: &fakeDLQ{}, QueueURL: dlqURL}
	refused := map[string]struct {
		cfg   fifo.Config
		field string // the field's name, and for a bound its value
	}{
		"nil handler":           {fifo.Config{}, "Handler"},
		"negative concurrency":  {fifo.Config{Handler: noop, Concurrency: -1}, "Concurrency -1 is negative"},
		"negative margin":       {fifo.Config{Handler: noop, DeadlineMargin: -time.Nanosecond}, "DeadlineMargin -1ns is negative"},
		"negative reserve":      {fifo.Config{Handler: noop, ResponseReserve: -time.Nanosecond}, "ResponseReserve -1ns is negative"},
		"reserve over margin":   {fifo.Config{Handler: noop, DeadlineMargin: time.Second, ResponseReserve: time.Second + time.Nanosecond}, "ResponseReserve 1.000000001s exceeds the DeadlineMargin 1s"},
		"default reserve over":  {fifo.Config{Handler: noop, DeadlineMargin: fifo.DefaultResponseReserve - time.Nanosecond}, "ResponseReserve 200ms exceeds the DeadlineMargin 199.999999ms"},
		"reserve over default":  {fifo.Config{Handler: noop, ResponseReserve: fifo.DefaultDeadlineMargin + time.Nanosecond}, "ResponseReserve 1.000000001s exceeds the DeadlineMargin 1s"},
		"dead letter no client": {fifo.Config{Handler: noop, DeadLetter: &fifo.DeadLetterQueue{QueueURL: dlqURL}}, "DeadLetter.Client"},
		"dead letter no url":    {fifo.Config{Handler: noop, DeadLetter: &fifo.DeadLetterQueue{Client: &fakeDLQ{}}}, "DeadLetter.QueueURL"},
		"dead letter and quarantine": {
			fifo.Config{Handler: noop, DeadLetter: dl, Quarantine: q, QuarantineThreshold: 3}, "DeadLetter and Quarantine",
		},
		"threshold 0":            {fifo.Config{Handler: noop, Quarantine: q}, "QuarantineThreshold"},
		"threshold below least":  {fifo.Config{Handler: noop, Quarantine: q, QuarantineThreshold: fifo.MinQuarantineThreshold - 1}, "QuarantineThreshold"},
		"negative threshold":     {fifo.Config{Handler: noop, Quarantine: q, QuarantineThreshold: -3}, "QuarantineThreshold"},
		"threshold, no store":    {fifo.Config{Handler: noop, QuarantineThreshold: 3}, "QuarantineThreshold"},
		"threshold, dead letter": {fifo.Config{Handler: noop, DeadLetter: dl, QuarantineThreshold: 3}, "QuarantineThreshold 3 without a Quarantine"},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := fifo.New(tc.cfg)
			require.ErrorIs(t, err, fifo.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, p)
			require.Equal(t, err, tc.cfg.Validate(), "New says what Validate says")
		})
	}

	accepted := map[string]fifo.Config{
		"defaults":                    {Handler: noop},
		"concurrency 0, every lane":   {Handler: noop, Concurrency: 0},
		"concurrency 1":               {Handler: noop, Concurrency: 1},
		"reserve equal to the margin": {Handler: noop, DeadlineMargin: time.Second, ResponseReserve: time.Second},
		"least margin and reserve":    {Handler: noop, DeadlineMargin: time.Nanosecond, ResponseReserve: time.Nanosecond},
		"default margin, its reserve": {Handler: noop, ResponseReserve: fifo.DefaultDeadlineMargin},
		"margin at default reserve":   {Handler: noop, DeadlineMargin: fifo.DefaultResponseReserve},
		"least threshold":             {Handler: noop, Quarantine: q, QuarantineThreshold: fifo.MinQuarantineThreshold},
		"dead letter":                 {Handler: noop, DeadLetter: dl},
	}
	for name, cfg := range accepted {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, cfg.Validate())
			p, err := fifo.New(cfg)
			require.NoError(t, err)
			require.NotNil(t, p)
		})
	}
	require.Equal(t, 2, fifo.MinQuarantineThreshold, "a message is received once before it can fail")
}

// The defaults are today's: a second of margin, 200 ms of reserve.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Second, fifo.DefaultDeadlineMargin)
	require.Equal(t, 200*time.Millisecond, fifo.DefaultResponseReserve)

	// With 1.1 s left the default margin lets a message start, and the
	// default reserve gives its handler a context that ends 200 ms before
	// the deadline.
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	now := deadline.Add(-1100 * time.Millisecond)
	var got time.Time
	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, _ events.SQSMessage) error {
		got, _ = ctx.Deadline()
		return nil
	}, Now: func() time.Time { return now }})
	resp, err := p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, deadline.Add(-fifo.DefaultResponseReserve), got)

	// With 0.9 s left it does not.
	now = deadline.Add(-900 * time.Millisecond)
	resp, err = p.Process(ctx, batchOf(t, "a1"))
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
}

// The processor keeps its own copy of the dead-letter queue: a caller's
// later change to the struct it passed changes nothing.
func TestNewCopiesTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	dlq := &fakeDLQ{}
	dl := &fifo.DeadLetterQueue{Client: dlq, QueueURL: dlqURL}
	p := newProcessor(t, fifo.Config{Handler: func(context.Context, events.SQSMessage) error {
		return fifo.Permanent(errors.New("malformed"))
	}, DeadLetter: dl})
	dl.Client, dl.QueueURL = nil, ""
	resp, err := p.Process(context.Background(), batchOf(t, "a1"))
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Len(t, dlq.Sent(), 1)
	require.Equal(t, dlqURL, *dlq.Sent()[0].QueueUrl)
}
