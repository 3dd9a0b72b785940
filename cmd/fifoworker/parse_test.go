package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestParsingChoosesAndExecuteRuns: parsing fills in and validates the
// verb a command line names and stops there; execute runs what parsing
// chose. The spellings' tests rely on the first half.
func TestParsingChoosesAndExecuteRuns(t *testing.T) {
	t.Parallel()
	o := exitFixture(t)
	args := []string{"jobs", "cancel", "job-1", "--tenant", "t-1"}
	var out, errOut bytes.Buffer
	c := &cli{env: o.env, stdout: &out, stderr: &errOut}
	cmd, err := c.parse(args)
	require.NoError(t, err)
	require.Equal(t, "fifoworker jobs cancel", cmd.CommandPath())
	require.Equal(t, &jobsCancelOptions{ID: "job-1", Tenant: "t-1"}, c.chosen)
	require.Equal(t, jobs.StatusPending, o.job(t, "job-1").Status, "parsing cancels nothing")
	require.Empty(t, out.String())
	require.Empty(t, errOut.String())

	code, _, stderr := o.run(args...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, jobs.StatusCancelled, o.job(t, "job-1").Status, "execute runs the verb parsing chose")
}

// TestAVerbsHelpWordShowsItsHelp: "help" after a verb that takes no
// arguments shows the verb's help (exit 0) and runs nothing, where the
// CLI before cobra ignored the word and ran the verb: "demo help" ran the
// demo, "local up help" started a stack.
func TestAVerbsHelpWordShowsItsHelp(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("FIFOWORKER_CACHE", cache) // where the demo's stack would start
	for _, tc := range []struct {
		args []string
		verb string
	}{
		{[]string{"demo", "help"}, "demo"},
		{[]string{"local", "up", "help", "--cache", cache}, "local up"},
		{[]string{"local", "up", "--name", "h", "help", "--cache", cache}, "local up"},
		{[]string{"local", "serve", "help", "--cache", cache}, "local serve"},
		{[]string{"sweep", "help"}, "sweep"},
	} {
		v, code, errOut := parse(t, tc.args...)
		require.Equal(t, 0, code, "%q: %s", tc.args, errOut)
		require.Nil(t, v, "%q: nothing to run", tc.args)

		var out, stderr bytes.Buffer
		require.Equal(t, 0, run(tc.args, &out, &stderr), "%q: %s", tc.args, stderr.String())
		require.Contains(t, out.String(), "Usage:\n  fifoworker "+tc.verb+" [flags]", "%q", tc.args)
		require.Empty(t, stderr.String(), "%q", tc.args)
		entries, err := os.ReadDir(cache)
		require.NoError(t, err)
		require.Empty(t, entries, "%q: no stack started", tc.args)
	}
}
