package lambdawire

import (
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// The consumers' quarantine settings: each missing or malformed one is
// named, and none of them panics (an empty bucket once reached the S3 body
// store's constructor).
func TestQuarantineSettingsAreEachNamed(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1"}
	full := map[string]string{
		"QUARANTINE_TABLE": "q", "QUARANTINE_BUCKET": "b", "COMMANDS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:c.fifo",
	}
	env := startup.NewEnvFrom(full)
	got := quarantined(env, cfg, DynamoDB(cfg), slog.New(slog.DiscardHandler), "COMMANDS_QUEUE_ARN", 5)
	require.NotNil(t, got.Quarantine)
	require.Equal(t, 5, got.QuarantineThreshold)
	require.NotNil(t, got.Metrics)
	require.NoError(t, env.Err())

	for name, want := range map[string]string{
		"QUARANTINE_TABLE":   "QUARANTINE_TABLE is not set",
		"QUARANTINE_BUCKET":  "QUARANTINE_BUCKET is not set",
		"COMMANDS_QUEUE_ARN": "COMMANDS_QUEUE_ARN is not set",
	} {
		m := map[string]string{}
		for k, v := range full {
			if k != name {
				m[k] = v
			}
		}
		env := startup.NewEnvFrom(m)
		require.NotPanics(t, func() {
			require.Zero(t, quarantined(env, cfg, DynamoDB(cfg), slog.New(slog.DiscardHandler), "COMMANDS_QUEUE_ARN", 5))
		})
		require.ErrorContains(t, env.Err(), want)
	}

	bad := map[string]string{"QUARANTINE_TABLE": "q", "QUARANTINE_BUCKET": "b", "COMMANDS_QUEUE_ARN": "commands.fifo"}
	env = startup.NewEnvFrom(bad)
	require.Zero(t, quarantined(env, cfg, DynamoDB(cfg), slog.New(slog.DiscardHandler), "COMMANDS_QUEUE_ARN", 5))
	require.ErrorContains(t, env.Err(), `COMMANDS_QUEUE_ARN: "commands.fifo" is not a queue ARN`)

	low := map[string]string{"QUARANTINE_AFTER_RECEIVES": "4"}
	for k, v := range full {
		low[k] = v
	}
	env = startup.NewEnvFrom(low)
	quarantined(env, cfg, DynamoDB(cfg), slog.New(slog.DiscardHandler), "COMMANDS_QUEUE_ARN", 5)
	require.ErrorContains(t, env.Err(), `QUARANTINE_AFTER_RECEIVES="4" is not an integer in [5, 1000]`, "below the receives the consumer's recovery needs")
}
