package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
)

// TestNewRelayRefusesAnInvalidConfig: a relay without a client, or with a
// queue that is not a FIFO queue, is an error naming the field.
func TestNewRelayRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := outbox.RelayConfig{Client: &fakeSQS{}, CommandsURL: commandsURL, EventsURL: eventsURL}
	for _, tc := range []struct {
		name  string
		edit  func(*outbox.RelayConfig)
		field string // "" when the configuration is valid
	}{
		{"valid", func(*outbox.RelayConfig) {}, ""},
		{"no client", func(c *outbox.RelayConfig) { c.Client = nil }, "Client"},
		{"no commands queue", func(c *outbox.RelayConfig) { c.CommandsURL = "" }, "CommandsURL"},
		{"a standard commands queue", func(c *outbox.RelayConfig) { c.CommandsURL = "http://127.0.0.1/000000000000/commands" }, "CommandsURL"},
		{"no events queue", func(c *outbox.RelayConfig) { c.EventsURL = "" }, "EventsURL"},
		{"a standard events queue", func(c *outbox.RelayConfig) { c.EventsURL = "http://127.0.0.1/000000000000/events.fifo-not" }, "EventsURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid
			tc.edit(&cfg)
			relay, err := outbox.NewRelay(cfg)
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, relay)
				return
			}
			require.ErrorIs(t, err, outbox.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, relay)
		})
	}
}
