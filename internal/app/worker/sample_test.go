package worker_test

import (
	"crypto/md5" //nolint:gosec // SQS's md5OfBody is MD5; this checks the sample, not a secret
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestCommandsSampleIsWhatTheRelaySends: every body of the worker's sample
// batch (events/sqs-commands-batch.json, which `sam local invoke -e` and the
// functions test feed the worker) is a command the worker can decode, sent
// as the relay sends it: group the job id, deduplication id the command id
// (the outbox id of its version), md5OfBody the body's.
func TestCommandsSampleIsWhatTheRelaySends(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../events/sqs-commands-batch.json")
	require.NoError(t, err)
	var batch events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &batch))
	require.NotEmpty(t, batch.Records)
	for _, msg := range batch.Records {
		cmd, err := outbox.DecodeCommand(msg.Body)
		require.NoError(t, err, msg.MessageId)
		require.Equal(t, jobs.MessageRun, cmd.Type, msg.MessageId)
		require.Equal(t, jobs.OutboxID(cmd.JobID, cmd.Version), cmd.CommandID, msg.MessageId)
		require.Equal(t, cmd.JobID, msg.Attributes["MessageGroupId"], msg.MessageId)
		require.Equal(t, outbox.DedupID(cmd.CommandID), msg.Attributes["MessageDeduplicationId"], msg.MessageId)
		sum := md5.Sum([]byte(msg.Body)) //nolint:gosec // see the import
		require.Equal(t, hex.EncodeToString(sum[:]), msg.Md5OfBody, msg.MessageId)
	}
}
