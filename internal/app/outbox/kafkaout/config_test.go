package kafkaout_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
)

// client is a kgo client with opts that is never connected (127.0.0.1:1:
// nothing listens there, and none of these tests produces).
func client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestNewRelayRefusesAnInvalidConfig: each field that cannot work is an
// error naming it; each bound is tried at its value. A kgo client that
// would give up per-job order or durability (idempotence disabled, acks
// from fewer than all in-sync replicas) is refused.
func TestNewRelayRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := kafkaout.Config{Producer: &fakeProducer{}, CommandsTopic: commandsTopic, EventsTopic: eventsTopic, PartitionCount: partitions}
	for _, tc := range []struct {
		name  string
		edit  func(*kafkaout.Config)
		field string // "" when the configuration is valid
	}{
		{"valid", func(*kafkaout.Config) {}, ""},
		{"no producer", func(c *kafkaout.Config) { c.Producer = nil }, "Producer"},
		{"a kgo client with the defaults", func(c *kafkaout.Config) { c.Producer = client(t) }, ""},
		{"a kgo client without idempotence", func(c *kafkaout.Config) {
			c.Producer = client(t, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()))
		}, "Producer"},
		{"a kgo client with leader acks", func(c *kafkaout.Config) {
			c.Producer = client(t, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
		}, "Producer"},
		{"a kgo client with no acks", func(c *kafkaout.Config) {
			c.Producer = client(t, kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.NoAck()))
		}, "Producer"},
		{"no commands topic", func(c *kafkaout.Config) { c.CommandsTopic = "" }, "CommandsTopic"},
		{"no events topic", func(c *kafkaout.Config) { c.EventsTopic = "" }, "EventsTopic"},
		{"a topic of 249 characters", func(c *kafkaout.Config) { c.EventsTopic = strings.Repeat("e", 249) }, ""},
		{"a topic of 250 characters", func(c *kafkaout.Config) { c.EventsTopic = strings.Repeat("e", 250) }, "EventsTopic"},
		{"a topic with every legal character", func(c *kafkaout.Config) { c.CommandsTopic = "aZ09._-" }, ""},
		{"a topic with a slash", func(c *kafkaout.Config) { c.CommandsTopic = "fifoworker/commands" }, "CommandsTopic"},
		{"a topic with a space", func(c *kafkaout.Config) { c.EventsTopic = "fifoworker events" }, "EventsTopic"},
		{"a topic named .", func(c *kafkaout.Config) { c.CommandsTopic = "." }, "CommandsTopic"},
		{"a topic named ..", func(c *kafkaout.Config) { c.EventsTopic = ".." }, "EventsTopic"},
		{"one topic for both", func(c *kafkaout.Config) { c.EventsTopic = commandsTopic }, "EventsTopic"},
		{"no partition count", func(c *kafkaout.Config) { c.PartitionCount = 0 }, "PartitionCount"},
		{"a negative partition count", func(c *kafkaout.Config) { c.PartitionCount = -1 }, "PartitionCount"},
		{"one partition", func(c *kafkaout.Config) { c.PartitionCount = 1 }, ""},
		{"no reserve: the default", func(c *kafkaout.Config) { c.ResponseReserve = 0 }, ""},
		{"a reserve of 1ns", func(c *kafkaout.Config) { c.ResponseReserve = time.Nanosecond }, ""},
		{"a negative reserve", func(c *kafkaout.Config) { c.ResponseReserve = -time.Nanosecond }, "ResponseReserve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid
			tc.edit(&cfg)
			relay, err := kafkaout.NewRelay(cfg)
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, relay)
				return
			}
			require.ErrorIs(t, err, kafkaout.ErrInvalidConfig)
			require.ErrorIs(t, err, outbox.ErrInvalidConfig, "one sentinel for every relay")
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, relay)
		})
	}
}
