package lambdawire

import (
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// A constructor refuses a Go field; the cold start's error names the
// environment variable it was read from, beside the constructor's own
// error (still matched with errors.Is).
func TestAConstructorsRefusalNamesItsVariable(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	aws := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	with := func(m map[string]string) *startup.Env {
		for k, v := range aws {
			m[k] = v
		}
		return startup.NewEnvFrom(m)
	}

	env := with(map[string]string{"JOBS_TABLE": "jobs", "CANDIDATES_BUCKET": "candidates", "ARTICLES_TABLE": "articles", "TENANT_CLAIM": "ten\x01ant"})
	_, err := Intake(env, env.AWSConfig(), log)
	require.ErrorIs(t, err, intake.ErrInvalidConfig)
	require.ErrorContains(t, err, `TENANT_CLAIM: intake: invalid configuration: TenantClaim "ten\x01ant"`)
	require.NotContains(t, err.Error(), "RESULT_URL_TTL", "only the variable behind the field it names")

	// The FIFO check is the relay's own (sqsout.Config.Validate); the
	// wiring names the variable.
	for bad, other := range map[string]string{"COMMANDS_QUEUE_URL": "EVENTS_QUEUE_URL", "EVENTS_QUEUE_URL": "COMMANDS_QUEUE_URL"} {
		env := with(map[string]string{bad: "https://sqs.eu-west-1.amazonaws.com/123456789012/q", other: "https://sqs.eu-west-1.amazonaws.com/123456789012/q.fifo"})
		_, err := Relay(env, env.AWSConfig(), log)
		require.ErrorIs(t, err, outbox.ErrInvalidConfig, bad)
		require.ErrorContains(t, err, bad+": outbox: invalid configuration: ", bad)
		require.NotContains(t, err.Error(), other, bad)
	}
	env = with(map[string]string{"COMMANDS_QUEUE_URL": "https://sqs/c.fifo", "EVENTS_QUEUE_URL": "https://sqs/e.fifo"})
	_, err = Relay(env, env.AWSConfig(), log)
	require.NoError(t, err, "the names at the bound: ending in .fifo")
}

// Each of the quarantine's constructors is refused under its own variable:
// the table's under QUARANTINE_TABLE, the bodies' bucket under
// QUARANTINE_BUCKET, the queue's under the consumer's ARN variable.
func TestEachQuarantineRefusalNamesItsVariable(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1"}
	const arn = "arn:aws:sqs:eu-west-1:123456789012:c.fifo"
	for _, tc := range []struct {
		name, table, arn, bucket string
		want                     string
		sentinel                 error
	}{
		{"table", "", arn, "b", "QUARANTINE_TABLE: quarantine: invalid configuration: Table", quarantine.ErrInvalidConfig},
		{"bucket", "q", arn, "", "QUARANTINE_BUCKET: quarantine: invalid configuration: Bucket", quarantine.ErrInvalidConfig},
		{"queue", "q", "arn:aws:sqs:eu-west-1:123456789012:", "b", "COMMANDS_QUEUE_ARN: quarantine: invalid configuration: QueueARN", quarantine.ErrInvalidConfig},
	} {
		env := startup.NewEnvFrom(nil)
		q := newQuarantine(env, dynamoHolds(DynamoDB(cfg), tc.table), S3(cfg), "COMMANDS_QUEUE_ARN", tc.arn, tc.bucket)
		require.Nil(t, q, tc.name)
		err := env.Err()
		require.ErrorIs(t, err, tc.sentinel, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	env := startup.NewEnvFrom(nil)
	require.NotNil(t, newQuarantine(env, dynamoHolds(DynamoDB(cfg), "q"), S3(cfg), "COMMANDS_QUEUE_ARN", arn, "b"))
	require.NoError(t, env.Err())
}
