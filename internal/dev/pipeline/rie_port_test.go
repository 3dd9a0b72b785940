package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
)

// An emulator that exits because a port it was given was taken (as the
// RIE does: "bind: address already in use", exit status 2) is started
// again on new ports, five times at most; any other early exit is not.
func TestAnRIEWhosePortWasTakenIsStartedAgain(t *testing.T) {
	for name, tc := range map[string]struct {
		say   string
		runs  int
		taken bool
	}{
		"port taken": {say: "listen tcp 127.0.0.1:4711: bind: address already in use", runs: 5, taken: true},
		"other exit": {say: "panic: something else", runs: 1},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			count := filepath.Join(dir, "runs")
			rie := filepath.Join(dir, "rie")
			require.NoError(t, os.WriteFile(rie, []byte("#!/bin/sh\necho run >> "+count+"\necho '"+tc.say+"' >&2\nexit 2\n"), 0o755))
			_, err := pipeline.StartRIE(t.Context(), pipeline.RIEConfig{
				Name: "projector", RIE: rie, Bootstrap: "/bin/true", LogDir: dir, Timeout: time.Second,
			})
			require.Error(t, err)
			runs, rerr := os.ReadFile(count)
			require.NoError(t, rerr)
			require.Equal(t, tc.runs, strings.Count(string(runs), "run"), "starts")
			require.Equal(t, tc.taken, strings.Contains(err.Error(), "a port was taken"), err.Error())
		})
	}
}
