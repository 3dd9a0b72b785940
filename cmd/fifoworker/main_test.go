package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunDispatchesAndRejectsUnknownCommands(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"frobnicate"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unknown command "frobnicate"`)

	errOut.Reset()
	require.Equal(t, 2, run(nil, &out, &errOut))
	require.Contains(t, errOut.String(), "usage:")
}

func TestOutputVariableNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"CommandsQueueUrl":   "FIFOWORKER_COMMANDS_QUEUE_URL",
		"CommandsDLQUrl":     "FIFOWORKER_COMMANDS_DLQ_URL",
		"JobsTableStreamArn": "FIFOWORKER_JOBS_TABLE_STREAM_ARN",
		"S3Bucket":           "FIFOWORKER_S3_BUCKET",
	} {
		require.Equal(t, want, outputVar(in), in)
	}
}
