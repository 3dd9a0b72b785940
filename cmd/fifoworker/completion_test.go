package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestCompletionScriptsAreProduced: `fifoworker completion SHELL` prints
// the shell's completion script on stdout, for each shell the command
// library supports.
func TestCompletionScriptsAreProduced(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash":       "__start_fifoworker",
		"zsh":        "#compdef fifoworker",
		"fish":       "complete -c fifoworker",
		"powershell": "Register-ArgumentCompleter",
	} {
		var out, errOut bytes.Buffer
		code := run([]string{"completion", shell}, &out, &errOut)
		require.Equal(t, 0, code, "%s: %s", shell, errOut.String())
		require.Contains(t, out.String(), want, shell)
		require.Empty(t, errOut.String(), shell)
	}
}

// TestBashSourcesTheCompletion: bash reads the script without an error
// and registers a completion for fifoworker.
func TestBashSourcesTheCompletion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "the test needs bash")
	var script, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"completion", "bash"}, &script, &errOut), errOut.String())
	path := filepath.Join(t.TempDir(), "fifoworker.bash")
	require.NoError(t, os.WriteFile(path, script.Bytes(), 0o600))

	out, err := exec.CommandContext(t.Context(), bash, "-n", path).CombinedOutput()
	require.NoError(t, err, "bash -n: %s", out)
	out, err = exec.CommandContext(t.Context(), bash, "-c", `source "$0" && complete -p fifoworker`, path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "__start_fifoworker")
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), " fifoworker"), "%s", out)
}

// TestCompletionSuggests: what a shell's completion asks the CLI
// (`fifoworker __complete ARGS... PARTIAL`) is answered with the verbs,
// the flags of the verb and a flag's values.
func TestCompletionSuggests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{""}, []string{"demo", "local", "jobs", "quarantine", "sweep", "completion", "help"}, nil},
		{[]string{"jobs", ""}, []string{"get", "list", "cancel"}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, nil},
		{[]string{"quarantine", ""}, []string{"list", "show", "redrive", "discard"}, nil},
		{[]string{"local", ""}, []string{"up", "down", "status", "env", "deploy", "run", "serve"}, nil},
		{[]string{"jobs", "list", "--"}, []string{"--tenant", "--live", "--since", "--limit", "--starting-token", "--all", "--json", "--table", "--stack"}, []string{"--reason"}},
		{[]string{"jobs", "cancel", "--"}, []string{"--tenant", "--reason", "--json"}, []string{"--live", "--all"}},
		{[]string{"quarantine", "discard", "--"}, []string{"--seq", "--yes", "--bucket", "--queue"}, []string{"--no-wait", "--all"}},
		{[]string{"quarantine", "redrive", "--"}, []string{"--no-wait", "--timeout"}, []string{"--seq", "--yes"}},
		{[]string{"quarantine", "list", "--queue", ""}, []string{"commands", "events"}, nil},
		{[]string{"sweep", "--"}, []string{"--dry-run", "--verbose", "--grace", "--max-generations"}, nil},
		{[]string{"local", "serve", "--"}, []string{"--addr", "--rie", "--worker-timeout", "--template"}, nil},
		{[]string{"local", "up", "--"}, []string{"--name", "--cache", "--region", "--sqs-port"}, []string{"--template", "--addr"}},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"__complete"}, tc.args...), &out, &errOut)
		require.Equal(t, 0, code, "%q: %s", tc.args, errOut.String())
		var got []string
		for l := range strings.Lines(out.String()) {
			got = append(got, strings.SplitN(strings.TrimSpace(l), "\t", 2)[0])
		}
		for _, w := range tc.want {
			require.Contains(t, got, w, "%q", tc.args)
		}
		for _, n := range tc.not {
			require.NotContains(t, got, n, "%q", tc.args)
		}
	}
}

// TestCompletionDescribesFlagsAsTheHelpDoes: a usage's backquotes name the
// flag's value in the help (pflag's convention: "--limit N   at most N
// jobs"); the descriptions completion shows drop them, as the help does,
// for every flag of every verb.
func TestCompletionDescribesFlagsAsTheHelpDoes(t *testing.T) {
	t.Parallel()
	var verbs [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		if cmd.Runnable() {
			verbs = append(verbs, path)
		}
		for _, sub := range cmd.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk((&cli{env: newTestOps(t).env, stdout: io.Discard, stderr: io.Discard}).root(), nil)
	require.Greater(t, len(verbs), 15)
	for _, path := range verbs {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, run(append(append([]string{"__complete"}, path...), "--"), &out, &errOut), "%q: %s", path, errOut.String())
		require.NotContains(t, out.String(), "`", "%q", path)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"__complete", "jobs", "list", "--"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "--limit\tat most N jobs a page")

	out.Reset()
	require.Equal(t, 0, run([]string{"jobs", "list", "--help"}, &out, &errOut), errOut.String())
	require.Regexp(t, `--limit N +at most N jobs a page`, out.String(), "the help still names the value")
}
