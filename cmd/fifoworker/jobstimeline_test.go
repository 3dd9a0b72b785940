package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// timelineFixture is job-1 through a life of each kind of transition:
// created, nudged, claimed, renewed, its lease ran out and was requeued,
// taken over, completed.
func timelineFixture(t *testing.T) *testOps {
	t.Helper()
	o := newTestOps(t)
	ctx := context.Background()
	st := o.open.jobs
	o.create(t, "job-1", "t-1")
	o.clock.Set(t0.Add(time.Minute))
	n, err := st.Nudge(ctx, jobs.NudgeRequest{JobID: "job-1", Reason: "pending for 1m"})
	require.NoError(t, err)
	o.clock.Set(t0.Add(2 * time.Minute))
	c, err := st.Claim(ctx, jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-1", LeaseUntil: t0.Add(3 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, n.Version+1, c.Version)
	o.clock.Set(t0.Add(150 * time.Second))
	r, err := st.Renew(ctx, jobs.RenewRequest{JobID: "job-1", AttemptID: "att-1", Generation: 1, Version: c.Version,
		LeaseUntil: t0.Add(4 * time.Minute), Progress: 10})
	require.NoError(t, err)
	o.clock.Set(t0.Add(5 * time.Minute))
	q, err := st.Nudge(ctx, jobs.NudgeRequest{JobID: "job-1", Generation: 1, Version: r.Version, Reason: "lease ended"})
	require.NoError(t, err)
	o.clock.Set(t0.Add(6 * time.Minute))
	tk, err := st.Claim(ctx, jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-2", LeaseUntil: t0.Add(8 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, q.Version+1, tk.Version)
	o.clock.Set(t0.Add(7 * time.Minute))
	_, err = st.Accept(ctx, jobs.AcceptRequest{JobID: "job-1", AttemptID: "att-2", Generation: 2, Version: tk.Version,
		Result: jobs.Result{Key: "candidates/job-1/g0000000002/att-2.json", SHA256: strings.Repeat("ab", 32), Size: 3}, Progress: 10})
	require.NoError(t, err)
	return o
}

// jobs get --timeline prints the history, one transition a line, each
// told from the one before (jobs.Describe).
func TestJobsGetTimelinePrintsTheHistory(t *testing.T) {
	t.Parallel()
	o := timelineFixture(t)
	code, out, errOut := o.run("jobs", "get", "job-1", "--timeline")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, `job job-1, tenant t-1: all 7 transitions
TIME                      VERSION  STATUS     GEN  TRANSITION
2026-12-01T10:00:00.000Z  0        pending    0    created
2026-12-01T10:01:00.000Z  1        pending    0    nudged
2026-12-01T10:02:00.000Z  2        running    1    claimed
2026-12-01T10:02:30.000Z  3        running    1    renewed
2026-12-01T10:05:00.000Z  4        running    1    lease ran out → requeued
2026-12-01T10:06:00.000Z  5        running    2    lease ran out → taken over
2026-12-01T10:07:00.000Z  6        completed  2    completed
`, out)
}

// --json carries the history, each entry with what it was.
func TestJobsGetJSONCarriesTheHistory(t *testing.T) {
	t.Parallel()
	o := timelineFixture(t)
	for _, args := range [][]string{{"jobs", "get", "job-1", "--json"}, {"jobs", "get", "job-1", "--json", "--timeline"}} {
		code, out, errOut := o.run(args...)
		require.Equal(t, 0, code, errOut)
		var got struct {
			History []transitionJSON `json:"history"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Len(t, got.History, 7, out)
		require.Equal(t, transitionJSON{Version: 5, Status: "running", Generation: 2, At: t0.Add(6 * time.Minute),
			Event: jobs.EventStarted, Step: "lease ran out → taken over"}, got.History[5])
		require.Equal(t, "created", got.History[0].Step)
		require.Equal(t, "completed", got.History[6].Step)
	}
}

// A history cut to its last MaxHistory says so; a job without any (an
// item written before them) says why.
func TestJobsGetTimelineOfABoundedHistoryAndOfNone(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	ctx := context.Background()
	o.create(t, "job-1", "t-1")
	j, err := o.open.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-1", LeaseUntil: t0.Add(10 * time.Minute)})
	require.NoError(t, err)
	for j.Version < jobs.MaxHistory {
		j, err = o.open.jobs.Renew(ctx, jobs.RenewRequest{JobID: "job-1", AttemptID: "att-1", Generation: 1, Version: j.Version,
			LeaseUntil: t0.Add(10 * time.Minute)})
		require.NoError(t, err)
	}
	code, out, errOut := o.run("jobs", "get", "job-1", "--timeline")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "job job-1, tenant t-1: the last 20 of 21 transitions (the item keeps 20)\n")
	require.Regexp(t, `(?m)^2026-12-01T10:00:00.000Z\s+1\s+running\s+1\s+claimed$`, out, "the first kept is the claim")
	require.NotContains(t, out, "created")

	legacy := &jobs.Job{ID: "job-2", Tenant: "t-1", Status: jobs.StatusPending, Version: 4}
	var buf bytes.Buffer
	printTimeline(&buf, legacy)
	require.Equal(t, "job job-2 has no history: its item was written before the job items kept one, and has not changed since (version 4, pending)\n", buf.String())
	legacy.History = []jobs.Transition{{Version: 5, Status: jobs.StatusRunning, Generation: 1, At: t0, Event: jobs.EventStarted}}
	legacy.Version = 5
	buf.Reset()
	printTimeline(&buf, legacy)
	require.Contains(t, buf.String(), "job job-2, tenant t-1: the last 1 of 6 transitions (the item kept none before version 5)\n")
}
