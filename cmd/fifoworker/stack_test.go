package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// withStacks gives the test's environment local stacks with env files:
// name → its variables. It records what the commands connect with.
func (o *testOps) withStacks(stacks map[string]map[string]string) *[]map[string]string {
	var connected []map[string]string
	o.env.stacks = func(name string) (map[string]string, string, error) {
		vars, ok := stacks[name]
		if !ok {
			return nil, "", fmt.Errorf("no env file: %w", os.ErrNotExist)
		}
		return vars, "/cache/stacks/" + name + "/env.sh", nil
	}
	o.env.connect = func(vars map[string]string, _ *slog.Logger) opener {
		connected = append(connected, vars)
		return o.open
	}
	return &connected
}

// stackVars are a stack's env file: its endpoints and the deployment's
// outputs, under names of its own.
func stackVars(prefix string) map[string]string {
	vars := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000",
	}
	for k, v := range outputs {
		vars[k] = prefix + v
	}
	return vars
}

// TestStackFlagReadsTheStacksEnvFile: with --stack, every resource and the
// AWS configuration come from the stack's env file, not the environment.
func TestStackFlagReadsTheStacksEnvFile(t *testing.T) {
	t.Parallel()
	o := newTestOps(t) // the environment names fw-* resources
	s1 := stackVars("s1-")
	connected := o.withStacks(map[string]map[string]string{"s1": s1})
	o.create(t, "job-1", "t-1")

	code, _, errOut := o.run("jobs", "get", "job-1", "--stack", "s1")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	require.Equal(t, []string{"s1-fw-jobs", "FIFOWORKER_JOBS_TABLE_NAME in the env file of stack s1 (/cache/stacks/s1/env.sh)"}, o.open.jobsAsked)
	require.Equal(t, []map[string]string{s1}, *connected, "the AWS configuration is the file's")

	code, _, errOut = o.run("jobs", "get", "job-1", "--stack", "s1", "--table", "other")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []string{"other", "--table"}, o.open.jobsAsked, "a flag still wins")

	code, _, errOut = o.run("quarantine", "list", "--stack", "s1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "s1-fw-quarantine", o.open.qAsked.Table)
	require.Equal(t, "s1-"+commandsURL, o.open.qAsked.QueueURL)

	o.open.sweep = func(context.Context, sweeper.Options) (sweeper.Report, error) {
		return sweeper.Report{DryRun: true}, nil
	}
	code, _, errOut = o.run("sweep", "--dry-run", "--stack", "s1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "s1-fw-jobs", o.open.sweepAsked.Settings["JOBS_TABLE"])
	require.Equal(t, "s1-fw-candidates", o.open.sweepAsked.Settings["CANDIDATES_BUCKET"])
	require.Len(t, *connected, 4)
}

func TestStackFlagOfAStackWithoutAnEnvFile(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.withStacks(nil)
	for _, args := range [][]string{
		{"jobs", "get", "job-1", "--stack", "s9"},
		{"quarantine", "list", "--stack", "s9"},
		{"sweep", "--stack", "s9"},
	} {
		code, out, errOut := o.run(args...)
		require.Equal(t, 1, code, "%v", args)
		require.Empty(t, out)
		require.Contains(t, errOut, `stack "s9" has no env file`, "%v", args)
		require.Contains(t, errOut, "fifoworker local serve --name s9", "%v", args)
	}
	code, _, errOut := o.run("jobs", "get", "job-1", "--stack", "Not A Name")
	require.Equal(t, 2, code, "a name no stack can have is a usage error")
	require.Contains(t, errOut, "--stack")
}

// TestTheServeStackIsTheDefault: without --stack, an environment that names
// none of the stack's resources uses the serve stack's env file, if there
// is one, and says so; an environment that names them is used as before.
func TestTheServeStackIsTheDefault(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	serveVars := stackVars("serve-")
	connected := o.withStacks(map[string]map[string]string{"serve": serveVars})
	o.create(t, "job-1", "t-1")

	code, _, errOut := o.run("jobs", "get", "job-1")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	require.Equal(t, "fw-jobs", o.open.jobsAsked[0], "the environment names the table: it is used")
	require.Equal(t, []map[string]string{nil}, *connected, "with the SDK's standard configuration")

	clear(o.vars)
	code, _, errOut = o.run("jobs", "get", "job-1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "serve-fw-jobs", o.open.jobsAsked[0])
	require.Equal(t, serveVars, (*connected)[1])
	require.Equal(t, "fifoworker: using local stack \"serve\" (its env file /cache/stacks/serve/env.sh): the environment names no resource; --stack NAME picks another\n", errOut)

	o.withStacks(nil) // no serve stack either
	code, _, errOut = o.run("jobs", "get", "job-1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no jobs table name: pass --table or set FIFOWORKER_JOBS_TABLE_NAME")
}

// TestTheSDKLogsThroughTheCLIsLogger: the SDK's lines reach the operator
// in the CLI's own format, as the logger's records, never the SDK's
// standard logger on stderr.
func TestTheSDKLogsThroughTheCLIsLogger(t *testing.T) {
	t.Parallel()
	for name, vars := range map[string]map[string]string{
		"a stack's env file": stackVars(""),
		"the environment":    nil,
	} {
		var buf bytes.Buffer
		cfg, err := awsConfig(context.Background(), maps.Clone(vars), cliLogger(&buf, false))
		require.NoError(t, err, name)
		cfg.Logger.Logf(logging.Warn, "failed to close HTTP response body: %s", "checksum")
		cfg.Logger.Logf(logging.Debug, "retrying")
		require.Equal(t, "level=WARN msg=\"failed to close HTTP response body: checksum\" source=aws-sdk\n", buf.String(), name)
	}
}

func TestEveryOperatorsCommandDocumentsStack(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	for _, c := range []string{"jobs get", "jobs list", "jobs cancel", "quarantine list", "quarantine show", "quarantine redrive", "quarantine discard", "sweep"} {
		code, out, _ := o.run(append(strings.Fields(c), "--help")...)
		require.Equal(t, 0, code)
		require.Regexp(t, `(?m)^ +--stack NAME +a local stack`, out, c)
		require.Contains(t, out, "Exit status: 0 done, 1 failed", c)
	}
	_, out, _ := o.run("help")
	require.Contains(t, out, "--stack NAME")
}

// TestStackOnAnExternalEmulatorTakesTheEnvironmentsCredentials: the env
// file of a stack started against AWS_ENDPOINT_URL (LocalStack) holds no
// credentials (the caller's choose LocalStack's account): --stack takes
// them from the environment, and says what to set when it has none. A
// file's own credentials win over the environment's.
func TestStackOnAnExternalEmulatorTakesTheEnvironmentsCredentials(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	ext := stackVars("ext-")
	delete(ext, "AWS_ACCESS_KEY_ID")
	delete(ext, "AWS_SECRET_ACCESS_KEY")
	delete(ext, "AWS_ENDPOINT_URL_DYNAMODB")
	ext["AWS_ENDPOINT_URL"] = "http://127.0.0.1:4566"
	connected := o.withStacks(map[string]map[string]string{"ext": ext, "s1": stackVars("s1-")})
	o.create(t, "job-1", "t-1")

	code, _, errOut := o.run("jobs", "get", "job-1", "--stack", "ext")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `the env file of stack "ext" holds no credentials and neither does the environment: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`)
	require.Empty(t, *connected, "nothing is opened")

	o.vars["AWS_ACCESS_KEY_ID"], o.vars["AWS_SECRET_ACCESS_KEY"], o.vars["AWS_SESSION_TOKEN"] = "000000000001", "secret", "session"
	code, _, errOut = o.run("jobs", "get", "job-1", "--stack", "ext")
	require.Equal(t, 0, code, errOut)
	want := maps.Clone(ext)
	want["AWS_ACCESS_KEY_ID"], want["AWS_SECRET_ACCESS_KEY"], want["AWS_SESSION_TOKEN"] = "000000000001", "secret", "session"
	require.Equal(t, []map[string]string{want}, *connected)
	_, err := awsConfig(context.Background(), (*connected)[0], cliLogger(io.Discard, false))
	require.NoError(t, err, "the SDK configuration has credentials")

	code, _, errOut = o.run("jobs", "get", "job-1", "--stack", "s1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, stackVars("s1-"), (*connected)[1], "the file's credentials, not the environment's")
}

// TestAStaleEnvFileIsNeverUsed: an env file whose stack is not running (a
// killed `local serve` left it) fails --stack with a usage error naming
// the file and how to remove it, and is skipped as the default, with a
// notice, for the environment.
func TestAStaleEnvFileIsNeverUsed(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	connected := o.withStacks(nil)
	o.env.stacks = func(name string) (map[string]string, string, error) {
		return nil, "/cache/stacks/" + name + "/env.sh", fmt.Errorf("localstack: %w /cache/stacks/%s/env.sh: no stack %q is running; remove it: rm /cache/stacks/%[2]s/env.sh", localstack.ErrStaleEnvFile, name, name)
	}
	o.create(t, "job-1", "t-1")

	code, out, errOut := o.run("jobs", "get", "job-1", "--stack", "s1")
	require.Equal(t, 2, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "stale env file /cache/stacks/s1/env.sh")
	require.Contains(t, errOut, "rm /cache/stacks/s1/env.sh")
	require.Empty(t, *connected, "nothing is opened")

	clear(o.vars) // the environment names no resource
	code, _, errOut = o.run("jobs", "get", "job-1")
	require.Equal(t, 1, code, "the environment names no table")
	require.Contains(t, errOut, "fifoworker: not using local stack \"serve\": localstack: stale env file /cache/stacks/serve/env.sh")
	require.Contains(t, errOut, "no jobs table name: pass --table or set FIFOWORKER_JOBS_TABLE_NAME")
	require.Equal(t, []map[string]string{nil}, *connected, "the environment, with the SDK's standard configuration")
}
