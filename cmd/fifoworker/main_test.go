package main

import (
	"bytes"
	"os"
	"path/filepath"
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
	require.Contains(t, errOut.String(), "Usage:\n  fifoworker [command]")
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

// runningStack records a stack as running in cache, as up would.
func runningStack(t *testing.T, cache, name string) string {
	t.Helper()
	state := filepath.Join(cache, "stacks", name)
	require.NoError(t, os.MkdirAll(state, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(state, "state.json"), []byte(`{"name":"`+name+`","region":"eu-west-1"}`), 0o644))
	return state
}

func TestLocalRunRefusesAStackThatIsAlreadyRunning(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	state := runningStack(t, cache, "busy")
	var out, errOut bytes.Buffer
	code := run([]string{"local", "run", "--name", "busy", "--cache", cache, "--", "true"}, &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), `stack "busy" is already running`)
	require.FileExists(t, filepath.Join(state, "state.json"), "the running stack is left alone")
}

// Not parallel: it points the default cache at a temporary directory.
func TestDemoRefusesADemoStackThatIsAlreadyRunning(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("FIFOWORKER_CACHE", cache)
	state := runningStack(t, cache, "demo")
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run([]string{"demo"}, &out, &errOut))
	require.Contains(t, errOut.String(), `stack "demo" is already running`)
	require.FileExists(t, filepath.Join(state, "state.json"), "the running stack is left alone")
}
