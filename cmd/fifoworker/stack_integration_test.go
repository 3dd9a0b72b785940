//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// buildCLI builds this command into a directory of the test's own.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fifoworker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// `local serve` prints the stack's environment and writes it to the
// stack's env file; the operator's commands, run as a user would run them
// in another shell with no AWS or FIFOWORKER_* variable at all, work on
// the served stack with --stack serve, and by default. No line of the
// SDK's reaches their stderr, on the paths where the SDK's check of
// DynamoDB Local's error answers used to warn (a missing table, the cancel
// of a completed job). Through serve's HTTP API, the intake function is
// wired with the task's spec validator, and HEAD is answered. Not
// parallel: serve sets the endpoint variables of this process.
func TestServeWritesTheEnvFileTheOperatorsCommandsRead(t *testing.T) {
	state := testenv.Stack(t)
	tpl, deployed, stack := deployTest(t, "serve")
	bin := buildCLI(t)

	// The env file where `local serve` writes it for a stack named serve,
	// in a cache of the test's own.
	cache := t.TempDir()
	envFile, err := localstack.EnvFile(localstack.Options{Name: serveStack, CacheDir: cache})
	require.NoError(t, err)
	served := *state
	served.Name = serveStack
	// The stack's state as Up records it, processes included, under the
	// name serve in that cache: --stack reads an env file only while its
	// stack runs (localstack.ReadStackEnv).
	running, err := localstack.Load(localstack.Options{Name: state.Name})
	require.NoError(t, err)
	running.Name = serveStack
	raw, err := json.Marshal(running)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(envFile), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(envFile), "state.json"), raw, 0o644))
	out, base, _ := startServe(t, serveOptions{State: &served, Template: tpl, Deployed: deployed, StackName: stack, EnvFile: envFile})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "try:") }, 60*time.Second, 50*time.Millisecond)

	// The block printed is the file, and the file is the stack.
	raw, err = os.ReadFile(envFile)
	require.NoError(t, err)
	require.Contains(t, out.String(), "(or: . "+envFile+"); the operator's commands read that file with --stack serve, and by default:")
	require.Contains(t, out.String(), string(raw), "the printed block is the file")
	vars, err := localstack.ReadEnvFile(envFile)
	require.NoError(t, err)
	require.Equal(t, base, vars["FIFOWORKER_API_URL"])
	require.Equal(t, state.DynamoDB, vars["AWS_ENDPOINT_URL_DYNAMODB"])
	require.Equal(t, state.SQS, vars["AWS_ENDPOINT_URL_SQS"])
	require.Equal(t, state.S3, vars["AWS_ENDPOINT_URL_S3"])
	require.Equal(t, state.Region, vars["AWS_REGION"])
	for _, o := range opsOutputs {
		require.Equal(t, deployed.Outputs[o], vars[outputVar(o)], o)
	}
	require.Regexp(t, regexp.MustCompile(`(?m)^export TOKEN_T1='[^']+'   # tenant t-1$`), string(raw))

	// Through serve's API: a spec the export cannot run, HEAD, a job.
	var refused intake.ErrorBody
	require.Equal(t, http.StatusBadRequest, call(t, http.MethodPost, base+"/jobs", vars["TOKEN_T1"], "k0", `{"spec":{"page_size":"0"}}`, &refused))
	require.Equal(t, intake.CodeInvalidSpec, refused.Error.Code)
	var created intake.CreatedView
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, base+"/jobs", vars["TOKEN_T1"], "k1", `{"spec":{"page_size":"1000"}}`, &created))
	var view intake.JobView
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, base+created.Location, vars["TOKEN_T1"], "", "", &view))
		return view.Status == "completed"
	}, 90*time.Second, 250*time.Millisecond)
	head, err := http.NewRequestWithContext(t.Context(), http.MethodHead, base+created.Location, nil)
	require.NoError(t, err)
	head.Header.Set("Authorization", "Bearer "+vars["TOKEN_T1"])
	resp, err := http.DefaultClient.Do(head)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))

	// The operator's commands, in a shell with nothing but HOME, PATH and
	// where the cache is.
	fifoworker := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "FIFOWORKER_CACHE=" + cache}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		t.Logf("fifoworker %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		require.NotContains(t, stderr.String(), "SDK ", "no line of the SDK's own logger")
		require.NotContains(t, stderr.String(), "aws-sdk", "no SDK warning through the CLI's logger either")
		for _, l := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
			require.True(t, l == "" || strings.HasPrefix(l, "fifoworker"), "only the CLI's own lines on stderr: %q", l)
		}
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := fifoworker("jobs", "get", created.JobID, "--stack", "serve")
	require.Equal(t, 0, code)
	require.Empty(t, stderr)
	require.Regexp(t, line("status", "completed"), stdout)

	code, stdout, stderr = fifoworker("jobs", "list", "--json")
	require.Equal(t, 0, code)
	require.Equal(t, `fifoworker: using local stack "serve" (its env file `+envFile+`): the environment names no resource; --stack NAME picks another`+"\n", stderr)
	require.Contains(t, listedIDs(t, stdout), created.JobID+":completed")

	code, stdout, stderr = fifoworker("jobs", "cancel", created.JobID, "--tenant", "t-1", "--stack", "serve")
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Equal(t, "fifoworker jobs cancel: job "+created.JobID+" already ended completed: nothing cancelled\n", stderr)

	code, _, stderr = fifoworker("jobs", "get", created.JobID, "--table", "no-such-table", "--stack", "serve")
	require.Equal(t, 1, code)
	require.Equal(t, "fifoworker jobs get: table no-such-table: it does not exist (check --table, and the region and endpoint the AWS configuration gives)\n", stderr)

	code, stdout, stderr = fifoworker("quarantine", "list", "--stack", "serve")
	require.Equal(t, 0, code)
	require.Empty(t, stderr)
	require.Contains(t, stdout, "no group of "+stack+"-commands.fifo is held")

	code, stdout, _ = fifoworker("sweep", "--dry-run", "--stack", "serve")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "dry run on table "+deployed.Outputs["JobsTableName"])

	code, _, stderr = fifoworker("jobs", "get", created.JobID, "--stack", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `stack "nope" has no env file`)
}

// `local deploy` prints the outputs to eval and writes the stack's whole
// environment to its env file, which --stack reads.
func TestLocalDeployWritesTheEnvFileStackReads(t *testing.T) {
	t.Parallel()
	state := testenv.Stack(t)
	envFile, err := localstack.EnvFile(localstack.Options{Name: state.Name})
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(envFile) })
	stack := awstest.Name(t, "dep")
	code, stdout, stderr := runCLI(t, nil, "local", "deploy", "--name", state.Name, "--template", "../../template.yaml", "--stack-name", stack)
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "the stack's environment is in "+envFile+": the operator's commands read it with --stack "+state.Name)
	printed := parseEnv(t, stdout)
	vars, err := localstack.ReadEnvFile(envFile)
	require.NoError(t, err)
	for k, v := range printed {
		require.True(t, strings.HasPrefix(k, "FIFOWORKER_"), k)
		require.Equal(t, v, vars[k], k)
	}
	require.True(t, strings.HasPrefix(printed["FIFOWORKER_JOBS_TABLE_NAME"], stack+"-"), "the table of the stack deployed: %v", printed)
	require.Equal(t, state.DynamoDB, vars["AWS_ENDPOINT_URL_DYNAMODB"])

	env := defaultOpsEnv()
	env.getenv = func(string) string { return "" }
	code, stdout, _ = runCLI(t, &env, "jobs", "list", "--json", "--stack", state.Name)
	require.Equal(t, 0, code)
	require.Contains(t, stdout, `"table": "`+printed["FIFOWORKER_JOBS_TABLE_NAME"]+`"`)
}

// parseEnv reads export lines as the env file's reader does.
func parseEnv(t *testing.T, text string) map[string]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "env.sh")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	vars, err := localstack.ReadEnvFile(path)
	require.NoError(t, err)
	return vars
}
