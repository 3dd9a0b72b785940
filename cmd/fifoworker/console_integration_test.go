//go:build integration

package main

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// On a deployed template, the console's Config holds both queues with
// their quarantines and their dead-letter queues' depths, read from the
// queues' attributes (a message sent to a dead-letter queue is counted,
// and stays there, unreceived), the candidates, the result links and the
// sweeper's last run (none yet), and no CloudWatch: the stack is local.
func TestConsoleConfigOnADeployedTemplate(t *testing.T) {
	t.Parallel()
	deployed := deployOps(t)
	env := outputsEnv(deployed, "")
	env, err := env.targetOf("", cliLogger(testWriter{t}, false), testWriter{t})
	require.NoError(t, err)
	cfg, err := (&consoleOptions{}).config(t.Context(), env)
	require.NoError(t, err)
	require.Len(t, cfg.Queues, 2)
	require.NotNil(t, cfg.Candidates)
	require.NotNil(t, cfg.Results)
	require.Nil(t, cfg.OldestCommand)
	_, err = cfg.Sweeps.LastRun(t.Context())
	require.ErrorIs(t, err, sweeper.ErrNoLastRun)

	dlq := deployed.Outputs["CommandsDLQUrl"]
	require.NotEmpty(t, dlq)
	for _, q := range cfg.Queues {
		n, err := q.DeadLetters.Depth(t.Context())
		require.NoError(t, err, q.Name)
		require.Zero(t, n, q.Name)
	}
	_, err = awstest.SQS(t).SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(dlq), MessageBody: aws.String("dead"), MessageGroupId: aws.String("job-1"), MessageDeduplicationId: aws.String("d1"),
	})
	require.NoError(t, err)
	for range 2 { // a read changes nothing: the count stays
		n, err := cfg.Queues[0].DeadLetters.Depth(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	}
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
