package fifo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// The golden batch in events/ is a commands.fifo batch as Lambda delivers it.
// It must survive a decode/encode round trip unchanged, and the processor's
// response to it, with job-42's first command failing, is the golden response.
func TestGoldenCommandsBatch(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../events/sqs-commands-batch.json")
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	again, err := json.Marshal(ev)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(again), "round trip")

	p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		var cmd struct {
			CommandID string `json:"command_id"`
		}
		if err := json.Unmarshal([]byte(msg.Body), &cmd); err != nil {
			return fifo.Permanent(err)
		}
		if cmd.CommandID == "job-42/v0" {
			return errors.New("job-42 is busy")
		}
		return nil
	}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	got, err := json.Marshal(resp)
	require.NoError(t, err)
	want, err := os.ReadFile("../../events/sqs-commands-batch-response.json")
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
