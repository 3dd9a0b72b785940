package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestExitStatuses holds the exit status of each kind of outcome, as
// scripts read it: 0 done (help included), 1 failed, 2 a usage error. No
// row reaches AWS or starts a stack: the operator's commands run on memory
// stores, the local ones on a cache of the test's own.
func TestExitStatuses(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	for _, tc := range []struct {
		args  []string
		stdin string
		code  int
	}{
		// the command line itself
		{nil, "", 2},
		{[]string{"help"}, "", 0},
		{[]string{"-h"}, "", 0},
		{[]string{"--help"}, "", 0},
		{[]string{"frobnicate"}, "", 2},
		{[]string{"--frob"}, "", 2},
		{[]string{"help", "jobs", "list"}, "", 0},
		// A verb's help was a flag error of the standard flag package
		// (exit 2); cobra's help is help.
		{[]string{"jobs", "get", "-h"}, "", 0},
		{[]string{"sweep", "--help"}, "", 0},
		{[]string{"local", "up", "-h"}, "", 0},
		{[]string{"local", "help"}, "", 0},
		// completion is a group as the others are (cobra's own printed its
		// help and exited 0 alone or with an unknown word)
		{[]string{"completion"}, "", 2},
		{[]string{"completion", "bogus"}, "", 2},
		{[]string{"completion", "help"}, "", 0},
		{[]string{"completion", "--help"}, "", 0},
		{[]string{"completion", "bash"}, "", 0},
		{[]string{"completion", "bash", "extra"}, "", 2},

		// jobs
		{[]string{"jobs"}, "", 2},
		{[]string{"jobs", "help"}, "", 0},
		{[]string{"jobs", "--help"}, "", 0},
		{[]string{"jobs", "frob"}, "", 2},
		{[]string{"jobs", "get", "job-1"}, "", 0},
		{[]string{"jobs", "get", "job-1", "--json"}, "", 0},
		{[]string{"jobs", "get", "job-nope"}, "", 1},
		{[]string{"jobs", "get"}, "", 2},
		{[]string{"jobs", "get", "a", "b"}, "", 2},
		{[]string{"jobs", "get", "job/1"}, "", 2},
		{[]string{"jobs", "get", "job-1", "--live"}, "", 2},
		{[]string{"jobs", "get", "job-1", "--frob"}, "", 2},
		{[]string{"jobs", "get", "job-1", "--stack", "Not A Name"}, "", 2},
		{[]string{"jobs", "get", "job-1", "--stack", "s9"}, "", 1},
		{[]string{"jobs", "get", "job-1", "--stack", "stale"}, "", 2},
		{[]string{"jobs", "list"}, "", 0},
		{[]string{"jobs", "list", "--json", "--all"}, "", 0},
		{[]string{"jobs", "list", "job-1"}, "", 2},
		{[]string{"jobs", "list", "--limit", "0"}, "", 2},
		{[]string{"jobs", "list", "--limit", "1001"}, "", 2},
		{[]string{"jobs", "list", "--limit", "many"}, "", 2},
		{[]string{"jobs", "list", "--since", "-1h"}, "", 2},
		{[]string{"jobs", "list", "--live", "--since", "1h"}, "", 2},
		{[]string{"jobs", "list", "--all"}, "", 2},
		{[]string{"jobs", "list", "--starting-token", "nonsense"}, "", 2},
		{[]string{"jobs", "list", "--reason", "x"}, "", 2},
		{[]string{"jobs", "cancel", "job-1"}, "", 2},
		{[]string{"jobs", "cancel", "job-1", "--tenant", "t-2"}, "", 1},
		{[]string{"jobs", "cancel", "job-nope", "--tenant", "t-1"}, "", 1},
		{[]string{"jobs", "cancel", "job-1", "--tenant", "t-1"}, "", 0},
		{[]string{"jobs", "cancel", "job-2", "--tenant", "t-1", "--json"}, "", 1},

		// quarantine
		{[]string{"quarantine"}, "", 2},
		{[]string{"quarantine", "help"}, "", 0},
		{[]string{"quarantine", "frob"}, "", 2},
		{[]string{"quarantine", "list"}, "", 0},
		{[]string{"quarantine", "list", "--queue", "events", "--json"}, "", 0},
		{[]string{"quarantine", "list", "g1"}, "", 2},
		{[]string{"quarantine", "list", "--queue", "dlq"}, "", 2},
		{[]string{"quarantine", "show", "g1"}, "", 0},
		{[]string{"quarantine", "show", "g1", "--all", "--json"}, "", 0},
		{[]string{"quarantine", "show", "g-nope"}, "", 1},
		{[]string{"quarantine", "show"}, "", 2},
		{[]string{"quarantine", "show", "g1", "--seq", "1001"}, "", 2},
		{[]string{"quarantine", "discard", "g1"}, "no\n", 1},
		{[]string{"quarantine", "discard", "g1", "--seq", "1001"}, "g1\n", 0},
		{[]string{"quarantine", "redrive", "g1", "--timeout", "1ms"}, "", 1},
		{[]string{"quarantine", "redrive", "g1", "--no-wait"}, "", 0},
		{[]string{"quarantine", "redrive", "a", "b"}, "", 2},
		{[]string{"quarantine", "discard", "g1", "--yes"}, "", 0},
		{[]string{"quarantine", "discard", "g-nope", "--yes"}, "", 1},

		// sweep
		{[]string{"sweep", "help"}, "", 0},
		{[]string{"sweep", "--dry-run"}, "", 0},
		{[]string{"sweep", "--json", "--jobs-table", "fails"}, "", 1},
		{[]string{"sweep", "now"}, "", 2},
		{[]string{"sweep", "--grace", "soon"}, "", 2},
		{[]string{"sweep", "--timeout", "5s"}, "", 2},

		// local, on a cache where no stack runs
		{[]string{"local"}, "", 2},
		{[]string{"local", "frob"}, "", 2},
		{[]string{"local", "status", "--cache", cache, "--name", "none"}, "", 1},
		{[]string{"local", "env", "--cache", cache, "--name", "none"}, "", 1},
		{[]string{"local", "deploy", "--cache", cache, "--name", "none"}, "", 1},
		{[]string{"local", "down", "--cache", cache, "--name", "none"}, "", 0},
		{[]string{"local", "up", "--cache", cache, "--name", "Not A Name"}, "", 1},
		{[]string{"local", "up", "--cache", cache, "--sqs-port", "many"}, "", 2},
		// "help" after a verb is its help, no longer ignored (the stack
		// started): TestAVerbsHelpWordShowsItsHelp holds demo's too
		{[]string{"local", "up", "help", "--cache", cache}, "", 0},
		{[]string{"local", "up", "--cache", cache, "help", "me"}, "", 2},
		{[]string{"local", "run", "--cache", cache, "--name", "none"}, "", 2},
		{[]string{"local", "serve", "--cache", cache, "--addr", "0.0.0.0:8080"}, "", 2},
		{[]string{"local", "serve", "--cache", cache, "--template", "../../template.yaml", "--worker-timeout", "7"}, "", 2},
		{[]string{"demo", "--jobs", "many"}, "", 2},
	} {
		o := exitFixture(t)
		o.env.stdin = strings.NewReader(tc.stdin)
		code, out, errOut := o.run(tc.args...)
		require.Equal(t, tc.code, code, "%q\nstdout: %s\nstderr: %s", tc.args, out, errOut)
	}
}

// exitFixture is a test environment whose stores hold what the rows of
// TestExitStatuses read: job-1 of t-1 (pending), job-2 of t-1 (cancelled), group g1 held with two
// parked messages, a sweeper that fails on table "fails", stacks s1 (with
// an env file), stale (a stale one) and none other.
func exitFixture(t *testing.T) *testOps {
	t.Helper()
	o := newTestOps(t)
	o.create(t, "job-1", "t-1")
	o.endJob(t, "job-2", jobs.StatusCancelled)
	park(t, o.open.quarantine, "g1", "1001", "1002")
	o.open.sweep = func(context.Context, sweeper.Options) (sweeper.Report, error) {
		if o.open.sweepAsked.Settings["JOBS_TABLE"] == "fails" {
			return sweeper.Report{Errors: 1}, errors.New("sweeper: 1 request failed")
		}
		return sweeper.Report{}, nil
	}
	o.withStacks(map[string]map[string]string{"s1": stackVars("s1-")})
	stacks := o.env.stacks
	o.env.stacks = func(name string) (map[string]string, string, error) {
		if name == "stale" {
			return nil, "", fmt.Errorf("%w: gone", localstack.ErrStaleEnvFile)
		}
		return stacks(name)
	}
	return o
}
