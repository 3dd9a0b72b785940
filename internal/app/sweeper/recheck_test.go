package sweeper_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The finished index shows a job late: only after the repair cursor has
// passed the time the job ended (its final event lost too). The first
// check never lists it; the recheck, which walks the index again
// RecheckAfter behind now with a cursor of its own, finds it behind and
// repairs it. A job the first check repaired is checked again and left
// alone, so nothing is counted twice, and the recheck's cursor then passes
// both.
func TestAJobTheIndexShowsLateIsRepairedByTheRecheck(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	onTime, _ := b.lifecycle(t, "job-1", "t-1", 1) // v2 and v3 lost
	b.clock.Advance(time.Millisecond)
	late, _ := b.lifecycle(t, "job-late", "t-1", 1, 2) // v3 lost
	b.jobs.mu.Lock()
	b.jobs.showFinishedAt = map[string]time.Time{"job-late": late.UpdatedAt.Add(sweeper.DefaultRepairAfter + 10*time.Minute)}
	b.jobs.mu.Unlock()

	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished, "job-1; the index does not show job-late yet")
	require.Equal(t, 1, r.Repaired)
	require.Zero(t, r.Rechecked, "nothing ended RecheckAfter ago")
	require.Equal(t, jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor, "past job-late")

	// The index shows it now, behind the repair cursor: the first check
	// will never list it.
	b.clock.Advance(10 * time.Minute)
	for range 3 {
		r = b.run(t, sweeper.Options{})
		require.Zero(t, r.Finished+r.Repaired+r.Rechecked)
		b.clock.Advance(5 * time.Minute)
	}
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-late").Status, "still behind")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 140, Completed: 1}, b.totals(t, "t-1"))

	// RecheckAfter after it ended, the recheck lists both jobs again.
	b.clock.Set(late.UpdatedAt.Add(sweeper.DefaultRecheckAfter + time.Millisecond))
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 2, r.Rechecked)
	require.Equal(t, 1, r.Repaired, "job-late; job-1 is in step")
	require.Equal(t, 1, r.RepairedOnRecheck)
	require.Zero(t, r.Errors)
	for _, j := range []jobs.Job{onTime, late} {
		require.Equal(t, projection.ViewOfJob(&j), b.view(t, j.ID), j.ID)
	}
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 200, Completed: 2}, b.totals(t, "t-1"), "each delta once")
	require.Contains(t, b.logs.String(), `"msg":"sweep: repaired a final job's projection from its job item","job_id":"job-late"`)
	require.Contains(t, b.logs.String(), `"walk":"recheck"`)
	bound := jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRecheckAfter))
	require.Equal(t, bound, r.RecheckCursor)
	require.Equal(t, bound, b.s3.body(t, sweeper.RecheckCursorKey), "the recheck's cursor is saved beside the repair's")
	b.proj.mu.Lock()
	require.Equal(t, 2, b.proj.recovers, "one recovery per job behind")
	b.proj.mu.Unlock()

	r = b.run(t, sweeper.Options{})
	require.Zero(t, r.Rechecked+r.Repaired, "the recheck's cursor has passed both")
}

// RecheckAfter's zero value is DefaultRecheckAfter, or twice RepairAfter
// when that is longer: the recheck always comes after the first check.
func TestRecheckAfterDefaultsBeyondRepairAfter(t *testing.T) {
	t.Parallel()
	b := setupRepair(t, func(c *sweeper.Config) { c.RepairAfter = 20 * time.Hour })
	j, _ := b.lifecycle(t, "job-1", "t-1", 1)
	b.clock.Set(j.UpdatedAt.Add(39 * time.Hour))
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Repaired)
	require.Zero(t, r.Rechecked, "not 24h but 40h after it ended")
	b.clock.Set(j.UpdatedAt.Add(40*time.Hour + time.Millisecond))
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Rechecked)
}

// metricRecords returns the EMF records the sweeper logged.
func metricRecords(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if _, ok := rec["_aws"]; ok {
			out = append(out, rec)
		}
	}
	return out
}

// A run reports how far each cursor is behind its bound (now minus the
// delay), and logs both as one embedded metric format record: the gauge
// the template's alarm watches. A check that cannot keep up grows it; one
// that catches up brings it back to zero. A dry run logs no metrics, and
// neither does a Sweeper without a FunctionName.
func TestRepairLagIsReportedAndLoggedAsAMetric(t *testing.T) {
	t.Parallel()
	b := setupRepair(t, func(c *sweeper.Config) { c.MaxItems, c.FunctionName = 2, "stack-sweeper" })
	var done []jobs.Job
	for i := range 5 {
		j, _ := b.lifecycle(t, fmt.Sprintf("job-%d", i), "t-1", 1)
		done = append(done, j)
		b.clock.Advance(time.Minute)
	}
	b.clock.Advance(sweeper.DefaultRepairAfter)
	bound := b.clock.Now().Add(-sweeper.DefaultRepairAfter) // one minute after job-4 ended
	r := b.run(t, sweeper.Options{})
	require.Equal(t, jobs.FinishedKey("job-1", done[1].UpdatedAt), r.RepairCursor)
	require.Equal(t, (bound.UnixMilli()-done[1].UpdatedAt.UnixMilli())/1000, r.RepairLagSeconds)
	require.Equal(t, int64(4*60), r.RepairLagSeconds, "job-1 ended four minutes before the bound")
	require.Zero(t, r.RecheckLagSeconds, "nothing to recheck yet: at its bound")

	recs := metricRecords(t, b.logs.String())
	require.Len(t, recs, 1)
	require.Equal(t, map[string]any{
		"Timestamp": float64(b.clock.Now().UnixMilli()),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": sweeper.MetricsNamespace, "Dimensions": []any{[]any{"FunctionName"}},
			"Metrics": []any{
				map[string]any{"Name": sweeper.MetricRepairLag, "Unit": "Seconds"},
				map[string]any{"Name": sweeper.MetricRecheckLag, "Unit": "Seconds"},
				map[string]any{"Name": sweeper.MetricUnmeasured, "Unit": "Count"},
			},
		}},
	}, recs[0]["_aws"])
	require.Equal(t, "fifoworker/sweeper", sweeper.MetricsNamespace)
	require.Equal(t, "stack-sweeper", recs[0]["FunctionName"])
	require.Equal(t, float64(240), recs[0][sweeper.MetricRepairLag])
	require.Equal(t, float64(0), recs[0][sweeper.MetricRecheckLag])
	require.Equal(t, float64(0), recs[0][sweeper.MetricUnmeasured], "every gauge measured")

	// Five minutes on, the next two: the cursor moved two minutes, the
	// bound five.
	b.clock.Advance(5 * time.Minute)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, int64(7*60), r.RepairLagSeconds)
	require.Equal(t, float64(420), metricRecords(t, b.logs.String())[1][sweeper.MetricRepairLag])

	dry := b.run(t, sweeper.Options{DryRun: true})
	require.Equal(t, 1, dry.Finished)
	require.Zero(t, dry.RepairLagSeconds, "the listing was complete: it would reach the bound")
	require.Len(t, metricRecords(t, b.logs.String()), 2, "a dry run logs no metrics")

	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished)
	require.Zero(t, r.RepairLagSeconds, "caught up")
	recs = metricRecords(t, b.logs.String())
	require.Len(t, recs, 3)
	require.Equal(t, float64(0), recs[2][sweeper.MetricRepairLag])

	// Without a FunctionName there is no dimension value: no metrics.
	quiet := setupRepair(t)
	quiet.lifecycle(t, "job-1", "t-1", 1)
	quiet.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	require.Equal(t, 1, quiet.run(t, sweeper.Options{}).Repaired)
	require.Empty(t, metricRecords(t, quiet.logs.String()))
}

// With a RepairBudget a run does not stop at MaxItems: while a listing
// comes back full it lists the next, until the budget has passed since
// its repair began (by the Sweeper's clock). A budget spent during the
// first listing stops the check after it, the cursor at its last job.
func TestARepairBudgetListsOnUntilItIsSpent(t *testing.T) {
	t.Parallel()
	b := setupRepair(t, func(c *sweeper.Config) { c.MaxItems, c.RepairBudget = 2, time.Minute })
	lag := func(prefix string) []jobs.Job {
		var done []jobs.Job
		for i := range 5 {
			j, _ := b.lifecycle(t, fmt.Sprintf("%s-%d", prefix, i), "t-1", 1)
			done = append(done, j)
			b.clock.Advance(time.Second)
		}
		b.clock.Advance(sweeper.DefaultRepairAfter)
		return done
	}
	lag("job")
	b.jobs.take()
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 5, r.Finished, "three listings: 2, 2 and 1")
	require.Equal(t, 5, r.Repaired)
	require.Equal(t, jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor)
	calls, _ := b.jobs.take()
	require.Equal(t, 3+1, calls["Finished"], "three for the check, one for the recheck")

	done := lag("more")
	b.jobs.mu.Lock()
	b.jobs.onGetMany = func() { b.clock.Advance(time.Minute) } // reading the jobs takes the whole budget
	b.jobs.mu.Unlock()
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 2, r.Finished, "the budget is spent: one listing")
	require.Equal(t, 2, r.Repaired)
	require.Equal(t, jobs.FinishedKey("more-1", done[1].UpdatedAt), r.RepairCursor)
}

// One job item that does not decode (jobs.UndecodableError) stops neither
// the run nor the cursor: it is logged and counted and left alone, the
// jobs around it are repaired, and the cursor passes it, so later runs do
// not read it again.
func TestAFinalJobThatDoesNotDecodeIsSkippedAndTheCursorMovesOn(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	for _, id := range []string{"job-1", "job-bad", "job-3"} {
		b.lifecycle(t, id, "t-1", 1)
		b.clock.Advance(time.Millisecond)
	}
	b.jobs.mu.Lock()
	b.jobs.undecodable = map[string]bool{"job-bad": true}
	b.jobs.mu.Unlock()
	b.clock.Advance(sweeper.DefaultRepairAfter)

	r, err := b.sweeper.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 3, r.Finished)
	require.Equal(t, 2, r.Repaired, "job-1 and job-3")
	require.Equal(t, 1, r.Undecodable)
	require.Zero(t, r.Errors)
	require.Equal(t, jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor, "past job-bad")
	require.Contains(t, b.logs.String(), `"msg":"sweep: a job item does not decode as a job; left alone","job_id":"job-bad"`)
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-bad").Status, "left alone")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 200, Completed: 2}, b.totals(t, "t-1"))

	b.clock.Advance(5 * time.Minute)
	r = b.run(t, sweeper.Options{})
	require.Zero(t, r.Finished+r.Undecodable)
}

// The sweep's other reads of many jobs go on past an item that does not
// decode too: a stuck job whose item does not decode is not nudged, and a
// candidate whose job's item does not decode is never deleted (no rule can
// be applied to it), while the jobs and candidates around them are
// decided as ever and the candidates' cursor moves on.
func TestUndecodableJobsAreLeftAloneAndTheSweepGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.claim(t, b.create(t, "job-bad").ID, "attempt-a", time.Minute)
	result := b.put(t, "job-bad", 1, "attempt-a")
	b.accept(t, c, result)
	orphan := b.put(t, "job-bad", 1, "attempt-z") // deletable, were the job readable
	b.put(t, "job-gone", 1, "attempt-g")
	b.create(t, "job-stuck")
	b.create(t, "job-stuck-bad")
	b.jobs.mu.Lock()
	b.jobs.undecodable = map[string]bool{"job-bad": true, "job-stuck-bad": true}
	b.jobs.mu.Unlock()
	b.clock.Advance(sweeper.DefaultGrace + time.Millisecond)

	r, err := b.sweeper.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, r.Errors)
	require.Equal(t, 2, r.Undecodable, "job-stuck-bad, read as stuck; job-bad, read for its candidates")
	require.Equal(t, 2, r.Stuck)
	require.Equal(t, 1, r.Nudged, "job-stuck")
	require.Equal(t, 3, r.Examined)
	require.Equal(t, 1, r.Deleted, "job-gone's candidate")
	require.True(t, r.Wrapped, "the cursor went past job-bad's candidates to the end")
	require.True(t, b.s3.has(result.Key.String()))
	require.True(t, b.s3.has(orphan.Key.String()))
	require.False(t, b.s3.has(key("job-gone", 1, "attempt-g")))
	require.Equal(t, jobs.StatusPending, b.get(t, "job-stuck-bad").Status)
	require.Equal(t, int64(0), b.get(t, "job-stuck-bad").Version, "not nudged")
}
