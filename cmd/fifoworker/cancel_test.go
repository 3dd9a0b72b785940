package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// endJob ends job id of t-1 in status s: completed, failed or cancelled.
func (o *testOps) endJob(t *testing.T, id string, s jobs.Status) jobs.Job {
	t.Helper()
	ctx := context.Background()
	o.create(t, id, "t-1")
	if s == jobs.StatusCancelled {
		j, err := o.open.jobs.Cancel(ctx, jobs.CancelRequest{JobID: id, Reason: "the client withdrew it"})
		require.NoError(t, err)
		return j
	}
	c, err := o.open.jobs.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "att-1", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	var j jobs.Job
	if s == jobs.StatusCompleted {
		j, err = o.open.jobs.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "att-1", Generation: c.Generation, Version: c.Version,
			Result: jobs.Result{Key: "candidates/" + id + "/g0000000001/att-1.ndjson", SHA256: strings.Repeat("ab", 32), Size: 2}})
	} else {
		j, err = o.open.jobs.Fail(ctx, jobs.FailRequest{JobID: id, AttemptID: "att-1", Generation: c.Generation, Version: c.Version,
			Failure: jobs.Failure{Code: "boom"}})
	}
	require.NoError(t, err)
	require.Equal(t, s, j.Status)
	return j
}

// TestJobsCancelOfAnEndedJobFails: one rule for every job that already
// ended, whatever its final status: exit 1, a line saying how it ended,
// nothing changed; --json still prints the job, with "changed": false.
// (A cancelled job used to exit 0, a completed or failed one 1.)
func TestJobsCancelOfAnEndedJobFails(t *testing.T) {
	t.Parallel()
	for _, s := range []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			o := newTestOps(t)
			ended := o.endJob(t, "job-1", s)

			code, out, errOut := o.run("jobs", "cancel", "job-1", "--tenant", "t-1")
			require.Equal(t, 1, code)
			require.Empty(t, out)
			require.Equal(t, "fifoworker jobs cancel: job job-1 already ended "+string(s)+": nothing cancelled\n", errOut)
			require.Equal(t, ended, o.job(t, "job-1"), "nothing changed")

			code, out, errOut = o.run("jobs", "cancel", "job-1", "--tenant", "t-1", "--json")
			require.Equal(t, 1, code)
			require.Equal(t, "fifoworker jobs cancel: job job-1 already ended "+string(s)+": nothing cancelled\n", errOut)
			var got struct {
				Job      jobJSON `json:"job"`
				Previous int64   `json:"previous_version"`
				Changed  bool    `json:"changed"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.False(t, got.Changed)
			require.Equal(t, string(s), got.Job.Status)
			require.Equal(t, ended.Version, got.Job.Version)
			require.Equal(t, ended.Version, got.Previous)
			require.Equal(t, ended, o.job(t, "job-1"), "nothing changed")
		})
	}
}

// endsMeanwhile is a jobs store whose first Get still sees the job
// running while the job has already ended: the race between the command's
// read and its cancel. Later reads see the job as it is.
type endsMeanwhile struct {
	jobsStore
	stale jobs.Job
	read  *atomic.Bool
}

func newEndsMeanwhile(s jobsStore, stale jobs.Job) endsMeanwhile {
	return endsMeanwhile{jobsStore: s, stale: stale, read: new(atomic.Bool)}
}

func (s endsMeanwhile) Get(ctx context.Context, id string) (jobs.Job, error) {
	if s.read.CompareAndSwap(false, true) {
		return s.stale, nil
	}
	return s.jobsStore.Get(ctx, id)
}

// TestJobsCancelOfAJobThatEndsMeanwhileFails: the same rule when the job
// ends between the command's read and its cancel, cancelled by someone
// else (the API's DELETE) included: the command did not cancel it, so it
// exits 1 and --json says "changed": false. (A job cancelled meanwhile used
// to exit 0 with "changed": true: the store's cancel of a cancelled job
// succeeds without writing, and the command took that for its own.)
func TestJobsCancelOfAJobThatEndsMeanwhileFails(t *testing.T) {
	t.Parallel()
	for _, s := range []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			o := newTestOps(t)
			ended := o.endJob(t, "job-1", s)
			stale := ended
			stale.Status, stale.Version = jobs.StatusRunning, ended.Version-1
			o.open.jobsOverride = newEndsMeanwhile(o.open.jobs, stale)

			code, out, errOut := o.run("jobs", "cancel", "job-1", "--tenant", "t-1")
			require.Equal(t, 1, code)
			require.Empty(t, out)
			require.Equal(t, "fifoworker jobs cancel: job job-1 already ended "+string(s)+": nothing cancelled\n", errOut)
			require.Equal(t, ended, o.job(t, "job-1"))

			o.open.jobsOverride = newEndsMeanwhile(o.open.jobs, stale)
			code, out, _ = o.run("jobs", "cancel", "job-1", "--tenant", "t-1", "--json")
			require.Equal(t, 1, code)
			var got struct {
				Changed *bool `json:"changed"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.NotNil(t, got.Changed, out)
			require.False(t, *got.Changed)
			require.Equal(t, ended, o.job(t, "job-1"))
		})
	}
}
