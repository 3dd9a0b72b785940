package fifo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// panickingError is an error whose Error method panics.
type panickingError struct{}

func (panickingError) Error() string { panic("Error bug") }

// An error whose Error method panics fails its message as the handler's
// error (Panicked, PanicInHandlerError), and the message is still logged:
// its text is read while the outcome is decided, not first by the logger,
// whose panic would have lost the line.
func TestAnErrorWhoseErrorMethodPanicsIsTheHandlersError(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	var got fifo.BatchMetrics
	p := newProcessor(t, fifo.Config{Handler: func(_ context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "a1" {
			return panickingError{}
		}
		return nil
	}, Logger: logs.Logger(), Metrics: func(m fifo.BatchMetrics) { got = m }})
	resp, err := p.Process(context.Background(), batchOf(t, "a1", "a2", "b1"))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2"}, failedIDs(resp))
	require.Equal(t, fifo.Panicked, got.Messages[0].Outcome)
	line := logLine(t, &logs, "a1")
	require.Equal(t, "panicked", line["outcome"])
	require.Contains(t, line["error"], "handler's error panicked: Error bug")
}
