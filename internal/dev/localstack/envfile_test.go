package localstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnvFileRoundTrips: what WriteEnvFile writes, ReadEnvFile reads back
// exactly, and a shell that sources the file gets the same values, quotes,
// spaces and newlines included; comments are left alone.
func TestEnvFileRoundTrips(t *testing.T) {
	t.Parallel()
	vars := [][2]string{
		{"AWS_REGION", "eu-west-1"},
		{"FIFOWORKER_API_URL", "http://127.0.0.1:8080"},
		{"QUOTED", `it's "quoted" and $not expanded`},
		{"EMPTY", ""},
		{"LINES", "one\ntwo"},
	}
	var b strings.Builder
	b.WriteString("# a comment line\n\n")
	for _, kv := range vars {
		b.WriteString(ShellExport(kv[0], kv[1]) + "\n")
	}
	b.WriteString(ShellExport("TOKEN_T1", "abc.def") + "   # tenant t-1\n")
	path := filepath.Join(t.TempDir(), "stacks", "serve", "env.sh")
	require.NoError(t, WriteEnvFile(path, b.String()))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "it holds tokens: the user's only")

	got, err := ReadEnvFile(path)
	require.NoError(t, err)
	want := map[string]string{"TOKEN_T1": "abc.def"}
	for _, kv := range vars {
		want[kv[0]] = kv[1]
	}
	require.Equal(t, want, got)

	if _, err := exec.LookPath("sh"); err == nil {
		for _, kv := range vars {
			out, err := exec.Command("sh", "-c", `. "$0" && printf %s "$`+kv[0]+`"`, path).Output()
			require.NoError(t, err)
			require.Equal(t, kv[1], string(out), "the shell reads %s alike", kv[0])
		}
	}
}

func TestReadEnvFileRefusesWhatItDoesNotWrite(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"AWS_REGION=eu-west-1",                 // no export
		"export AWS_REGION=eu-west-1",          // not quoted
		"export AWS_REGION='eu-west-1",         // unterminated
		"export AWS_REGION='eu' trailing",      // something after the value
		"export 1BAD='x'",                      // not a name
		`export AWS_REGION="eu-west-1"`,        // double quotes
		"export AWS_REGION='a'\\''",            // an escape cut short
		"export A='x'\nexport A='y'",           // twice
		"unset AWS_REGION",                     // another command
		"export AWS_REGION='eu' ; rm -rf /tmp", // a second command
	} {
		path := filepath.Join(t.TempDir(), "env.sh")
		require.NoError(t, os.WriteFile(path, []byte(bad+"\n"), 0o600))
		_, err := ReadEnvFile(path)
		require.Error(t, err, "%q", bad)
		require.ErrorContains(t, err, path)
	}
}

func TestEnvFileIsInTheStacksStateDirectory(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	path, err := EnvFile(Options{Name: "serve", CacheDir: cache})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, "stacks", "serve", "env.sh"), path, "Down removes it with the state")
	_, err = EnvFile(Options{Name: "Not A Name", CacheDir: cache})
	require.Error(t, err)
}
