package sqsout_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
)

const (
	commandsURL = "http://127.0.0.1/000000000000/fifoworker-commands.fifo"
	eventsURL   = "http://127.0.0.1/000000000000/fifoworker-events.fifo"
)

// noSQS is a client the configuration tests never call.
type noSQS struct{}

func (noSQS) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	panic("not called")
}

// TestNewRelayRefusesAnInvalidConfig: a relay without a client, or with a
// queue that is not a FIFO queue, is an error naming the field.
func TestNewRelayRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := sqsout.Config{Client: noSQS{}, CommandsURL: commandsURL, EventsURL: eventsURL}
	for _, tc := range []struct {
		name  string
		edit  func(*sqsout.Config)
		field string // "" when the configuration is valid
	}{
		{"valid", func(*sqsout.Config) {}, ""},
		{"no client", func(c *sqsout.Config) { c.Client = nil }, "Client"},
		{"no commands queue", func(c *sqsout.Config) { c.CommandsURL = "" }, "CommandsURL"},
		{"a standard commands queue", func(c *sqsout.Config) { c.CommandsURL = "http://127.0.0.1/000000000000/commands" }, "CommandsURL"},
		{"no events queue", func(c *sqsout.Config) { c.EventsURL = "" }, "EventsURL"},
		{"a standard events queue", func(c *sqsout.Config) { c.EventsURL = "http://127.0.0.1/000000000000/events.fifo-not" }, "EventsURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid
			tc.edit(&cfg)
			relay, err := sqsout.NewRelay(cfg)
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, relay)
				return
			}
			require.ErrorIs(t, err, sqsout.ErrInvalidConfig)
			require.ErrorIs(t, err, outbox.ErrInvalidConfig, "one sentinel for every relay")
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, relay)
		})
	}
}
