package sweeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The running example: A claims g1 and stalls, B takes over with g2, both
// write candidates, B's is accepted. A's candidate is deleted once it is
// older than the grace period; B's, the result, stays.
func TestRunningExampleOrphanIsDeletedAfterGraceAndTheResultKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-42")
	a := b.claim(t, "job-42", "attempt-a", time.Minute)
	b.put(t, "job-42", a.Generation, "attempt-a")
	b.clock.Advance(2 * time.Minute) // A stalls; its lease ends
	bj := b.claim(t, "job-42", "attempt-b", time.Minute)
	resB := b.put(t, "job-42", bj.Generation, "attempt-b")
	done := b.accept(t, bj, resB)
	require.Equal(t, key("job-42", 2, "attempt-b"), done.Result.Key)

	// At once: A's candidate is deletable but young.
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 2, r.Examined)
	require.Equal(t, 1, r.KeptGrace)
	require.Equal(t, 1, r.KeptResult)
	require.Zero(t, r.Deleted)
	require.Equal(t, []string{key("job-42", 1, "attempt-a"), key("job-42", 2, "attempt-b")}, candidateKeys(b))

	// At the grace period's end, still kept: it must be older than Grace.
	b.clock.Advance(time.Hour - 2*time.Minute)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.KeptGrace, "A's candidate is exactly as old as Grace: not older")
	b.clock.Advance(time.Millisecond)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Deleted)
	require.Equal(t, 1, r.KeptResult)
	require.Equal(t, []string{key("job-42", 2, "attempt-b")}, candidateKeys(b), "B's result is kept")
	require.Contains(t, b.logs.String(), `"msg":"sweep: deleted","job_id":"job-42","generation":1,"attempt_id":"attempt-a"`)

	// Years later, while the job exists, the result is still kept.
	b.clock.Advance(24 * time.Hour * 25)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.KeptResult)
	require.Equal(t, []string{key("job-42", 2, "attempt-b")}, candidateKeys(b))
}

// An older generation's candidate is deletable while the job still runs:
// accept is fenced on the generation. The current generation's is not.
func TestOlderGenerationOfALiveJobIsDeletedTheCurrentKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-42")
	a := b.claim(t, "job-42", "attempt-a", time.Minute)
	b.put(t, "job-42", a.Generation, "attempt-a")
	b.clock.Advance(2 * time.Minute)
	bj := b.claim(t, "job-42", "attempt-b", 10*time.Minute)
	b.put(t, "job-42", bj.Generation, "attempt-b")

	b.clock.Advance(2 * time.Hour)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Deleted)
	require.Equal(t, 1, r.KeptCurrent)
	require.Equal(t, []string{key("job-42", 2, "attempt-b")}, candidateKeys(b))
}

// A live job's current generation's candidate is never touched, however
// old: its holder may still accept it (an expired lease with no takeover
// may still accept), and so may nothing else.
func TestCurrentGenerationOfALiveJobIsKeptForever(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-42")
	j := b.claim(t, "job-42", "attempt-a", time.Minute)
	b.put(t, "job-42", j.Generation, "attempt-a")
	// A later generation than the job's (a job id reused after its item
	// expired, with a new intent) is kept too: it is nobody's orphan yet.
	b.put(t, "job-42", j.Generation+1, "attempt-z")
	for range 5 {
		b.clock.Advance(24 * time.Hour * 365)
		r := b.run(t, sweeper.Options{})
		require.Equal(t, 2, r.KeptCurrent)
		require.Zero(t, r.Deleted+r.KeptGrace)
	}
	require.Equal(t, []string{key("job-42", 1, "attempt-a"), key("job-42", 2, "attempt-z")}, candidateKeys(b))
	// Its holder can still accept it: the sweeper's nudges (its lease ended
	// long ago) kept the generation.
	cur := b.get(t, "job-42")
	require.Equal(t, j.Generation, cur.Generation)
	b.accept(t, cur, candidate.Result{Key: mustKey(t, "job-42", 1, "attempt-a"), SHA256: strings.Repeat("ab", 32), Size: 1})
}

// A final job's candidates other than its result are deleted after grace,
// whatever their generation; a failed or cancelled job has no result.
func TestFinalJobsKeepOnlyTheirResult(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Completed: the result and a candidate of the same generation that is
	// not it (an earlier try of the same attempt id, written under another
	// extension).
	b.create(t, "job-1")
	j1 := b.claim(t, "job-1", "attempt-a", time.Minute)
	res := b.put(t, "job-1", 1, "attempt-a")
	other, err := candidate.NewKey("job-1", 1, "attempt-a", "json")
	require.NoError(t, err)
	_, err = b.candidates.Put(b.ctx, other, strings.NewReader("{}"))
	require.NoError(t, err)
	b.accept(t, j1, res)
	// Failed.
	b.create(t, "job-2")
	j2 := b.claim(t, "job-2", "attempt-b", time.Minute)
	b.put(t, "job-2", 1, "attempt-b")
	_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: "job-2", AttemptID: "attempt-b", Generation: 1, Version: j2.Version,
		Failure: jobs.Failure{Code: "source_gone"}})
	require.NoError(t, err)
	// Cancelled while running: its generation moved to 2 and the job ended.
	b.create(t, "job-3")
	b.claim(t, "job-3", "attempt-c", time.Minute)
	b.put(t, "job-3", 1, "attempt-c")
	_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: "job-3"})
	require.NoError(t, err)

	b.clock.Advance(time.Hour + time.Second)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 4, r.Examined)
	require.Equal(t, 3, r.Deleted)
	require.Equal(t, 1, r.KeptResult)
	require.Equal(t, []string{key("job-1", 1, "attempt-a")}, candidateKeys(b))
}

// A candidate whose job item is gone (TTL removed it after it was final)
// is unreferenced: deleted after grace.
func TestUnreferencedCandidateIsDeletedAfterGrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "job-gone", 3, "attempt-a")
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.KeptGrace)
	b.clock.Advance(time.Hour + time.Millisecond)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Deleted)
	require.Empty(t, candidateKeys(b))
	require.Contains(t, b.logs.String(), "its job no longer exists")
}

// An object under candidates/ that is not a candidate is never deleted,
// however old: it is counted and logged.
func TestUnparsableKeysAreReportedNeverDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	weird := []string{
		"candidates/",                           // a console folder marker
		"candidates/job-42/notes.txt",           // no generation
		"candidates/job-42/g1/attempt-a.csv",    // unpadded generation
		"candidates/job 42/g0000000001/a.csv",   // not an id
		"candidates/job-42/g0000000001/a.CSV",   // not an extension
		"candidates/job-42/g0000000001/a/b.csv", // a segment too many
	}
	for _, k := range weird {
		b.s3.rawPut(t, k, []byte("x"))
	}
	b.put(t, "job-gone", 1, "attempt-a")
	b.clock.Advance(365 * 24 * time.Hour)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, len(weird)+1, r.Examined)
	require.Equal(t, len(weird), r.Unparsable)
	require.Equal(t, 1, r.Deleted)
	require.ElementsMatch(t, weird, candidateKeys(b))
	require.Equal(t, len(weird), strings.Count(b.logs.String(), "sweep: not a candidate key; left alone"))
}

// A dry run decides and reports everything and writes nothing: no object,
// no job, no cursor changes.
func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *sweeper.Config) { c.MaxItems = 3 })
	b.create(t, "job-pending")
	b.create(t, "job-running")
	b.claim(t, "job-running", "attempt-r", time.Minute)
	b.put(t, "job-running", 1, "attempt-r")
	for i := range 4 {
		b.put(t, "job-gone", int64(i+1), "attempt-a")
	}
	require.NoError(t, b.cursor.Save(b.ctx, "candidates/job-a"))
	b.clock.Advance(time.Hour + time.Minute)
	before := snapshot(t, b, "job-pending", "job-running")
	b.s3.TakeCalls()

	r := b.run(t, sweeper.Options{DryRun: true})
	require.True(t, r.DryRun)
	require.Equal(t, 3, r.Examined)
	require.Equal(t, 3, r.WouldDelete)
	require.Equal(t, 2, r.WouldNudge, "the pending job and the running one on an ended lease")
	require.Zero(t, r.Deleted+r.Nudged)
	require.Equal(t, key("job-gone", 3, "attempt-a"), r.Cursor, "where a real run would continue")
	require.Equal(t, before, snapshot(t, b, "job-pending", "job-running"))
	calls := b.s3.TakeCalls()
	require.Zero(t, calls["PutObject"]+calls["DeleteObject"], "no write: %v", calls)
	jc, _ := b.jobs.take()
	require.Zero(t, jc["Nudge"])
	require.Equal(t, 2, strings.Count(b.logs.String(), "sweep: would nudge"))
	require.Equal(t, 3, strings.Count(b.logs.String(), "sweep: would delete"))

	// The same run for real does what the dry run said.
	real := b.run(t, sweeper.Options{})
	require.Equal(t, r.WouldDelete, real.Deleted)
	require.Equal(t, r.WouldNudge, real.Nudged)
	require.Equal(t, r.Cursor, real.Cursor)
}

// snapshot is what a dry run must leave as it was: every object with its
// content and time, and the jobs.
func snapshot(t *testing.T, b *testBundle, ids ...string) map[string]string {
	t.Helper()
	s := map[string]string{}
	for _, k := range b.s3.keys() {
		s[k] = fmt.Sprintf("%q %s", b.s3.body(t, k), b.s3.modified(t, k))
	}
	for _, id := range ids {
		s["job "+id] = fmt.Sprintf("%+v", b.get(t, id))
	}
	return s
}

// Bounded runs: each examines at most MaxItems objects after the cursor,
// reads each job once, and saves where it stopped; consecutive runs cover
// the whole bucket without overlap, and the run that reaches the end starts
// the next one at the beginning.
func TestBoundedRunsResumeFromTheCursorAndCoverEverything(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *sweeper.Config) { c.MaxItems = 10 })
	var all []string
	for j := range 7 {
		id := fmt.Sprintf("job-%d", j)
		for g := range 3 + j%2 {
			all = append(all, b.put(t, id, int64(g+1), "attempt-a").Key.String())
		}
	}
	b.s3.rawPut(t, "candidates/job-3/readme.txt", []byte("not a candidate"))
	require.Len(t, all, 24)
	b.clock.Advance(2 * time.Hour)

	var examined []string
	var reports []sweeper.Report
	for run := 1; run <= 3; run++ {
		from, err := b.cursor.Load(b.ctx)
		require.NoError(t, err)
		r := b.run(t, sweeper.Options{})
		reports = append(reports, r)
		var keys []string
		for i, l := range b.s3.takeListings() {
			if i == 0 {
				require.Equal(t, from, l.startAfter, "run %d starts after the saved cursor", run)
			}
			keys = append(keys, l.keys...)
		}
		require.LessOrEqual(t, len(keys), 10, "run %d examines at most MaxItems", run)
		require.Equal(t, len(keys), r.Examined)
		examined = append(examined, keys...)
		saved, err := b.cursor.Load(b.ctx)
		require.NoError(t, err)
		require.Equal(t, r.Cursor, saved)
		_, read := b.jobs.take()
		for id, n := range read {
			require.Equal(t, 1, n, "run %d read %s %d times", run, id, n)
		}
	}
	require.Equal(t, []int{10, 10, 5}, []int{reports[0].Examined, reports[1].Examined, reports[2].Examined})
	require.False(t, reports[0].Wrapped)
	require.True(t, reports[2].Wrapped)
	require.Empty(t, reports[2].Cursor, "the run that reached the end starts the next at the beginning")
	require.ElementsMatch(t, append(all, "candidates/job-3/readme.txt"), examined, "every object examined exactly once")
	require.Equal(t, []string{"candidates/job-3/readme.txt"}, candidateKeys(b), "every unreferenced candidate deleted")

	// The next run starts again at the beginning.
	b.put(t, "job-0", 9, "attempt-z")
	b.clock.Advance(2 * time.Hour)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, "", b.s3.takeListings()[0].startAfter)
	require.Equal(t, 1, r.Deleted)
}

// A job read by the sweeper is read once per run, however many of its
// candidates the run examines, in one BatchGetItem-like call per run.
func TestEachJobIsReadOncePerRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for j := range 5 {
		id := fmt.Sprintf("job-%d", j)
		b.create(t, id)
		b.claim(t, id, "attempt-a", time.Minute)
		for g := range 4 {
			b.put(t, id, int64(g+1), fmt.Sprintf("attempt-%d", g))
		}
	}
	b.clock.Advance(10 * time.Minute) // not yet stuck: no nudges
	b.jobs.take()
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 20, r.Examined)
	calls, read := b.jobs.take()
	require.Equal(t, map[string]int{"Live": 1, "GetMany": 1}, calls)
	require.Len(t, read, 5)
	for id, n := range read {
		require.Equal(t, 1, n, id)
	}
}

// Stuck jobs: a pending job and a running one on an ended lease, both
// unchanged for longer than StuckAfter, are nudged once; a live lease is
// never passed; a second run right after nudges nothing, because the nudge
// moved their last update.
func TestStuckJobsAreNudgedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *sweeper.Config) { c.StuckAfter = 5 * time.Minute })
	b.create(t, "job-pending")
	b.create(t, "job-expired")
	b.claim(t, "job-expired", "attempt-e", time.Minute)
	b.create(t, "job-live")
	b.claim(t, "job-live", "attempt-l", 15*time.Minute)
	b.create(t, "job-done")
	done := b.claim(t, "job-done", "attempt-d", time.Minute)
	b.accept(t, done, candidate.Result{Key: mustKey(t, "job-done", 1, "attempt-d"), SHA256: strings.Repeat("ab", 32), Size: 1})

	b.clock.Advance(4 * time.Minute)
	r := b.run(t, sweeper.Options{})
	require.Zero(t, r.Stuck+r.Nudged, "nothing unchanged for 5 minutes yet")
	b.clock.Advance(2 * time.Minute)
	b.create(t, "job-fresh") // pending, but not for long

	b.clock.Advance(4 * time.Minute)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 3, r.Stuck, "pending, expired and live; not the final job nor the fresh one")
	require.Equal(t, 2, r.Nudged)
	require.Zero(t, r.NudgeRefused)
	for _, id := range []string{"job-pending", "job-expired"} {
		j := b.get(t, id)
		require.Equal(t, jobs.MessageRun, j.Outbox.Type, id)
		require.Equal(t, b.clock.Now().UnixMilli(), j.UpdatedAt.UnixMilli(), id)
		require.Contains(t, j.Outbox.Payload[jobs.PayloadReason], "sweeper: ", id)
	}
	require.Equal(t, jobs.EventStarted, b.get(t, "job-live").Outbox.Type, "a live lease is never passed")
	require.Equal(t, int64(1), b.get(t, "job-expired").Generation, "a nudge keeps the generation")

	// Right after: nothing is stuck any more.
	b.clock.Advance(time.Second)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Stuck, "only the job on a live lease")
	require.Zero(t, r.Nudged)
	// Another StuckAfter later: the nudged jobs again (no claim came), the
	// fresh one, and the one whose lease has ended by now.
	b.clock.Advance(5 * time.Minute)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 4, r.Nudged)
	require.Equal(t, jobs.MessageRun, b.get(t, "job-live").Outbox.Type)
	require.Equal(t, int64(2), b.get(t, "job-pending").Version, "nudged twice, once per StuckAfter")
}

// The live index is eventually consistent: it may list a job that moved on
// or ended a moment ago, or is gone. The sweeper judges the job it reads,
// not the listing.
func TestTheIndexIsOnlyAHint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-moved")
	b.create(t, "job-ended")
	b.create(t, "job-stuck")
	b.clock.Advance(time.Hour)
	b.claim(t, "job-moved", "attempt-a", time.Minute)
	_, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: "job-ended"})
	require.NoError(t, err)
	b.create(t, "job-new")
	b.jobs.staleLive = []string{"job-moved", "job-ended", "job-new", "job-missing"}
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 5, r.Stuck)
	require.Equal(t, 1, r.Nudged, "only job-stuck")
	require.Zero(t, r.NudgeRefused+r.Errors)
	calls, _ := b.jobs.take()
	require.Equal(t, 1, calls["Nudge"], "nothing else was even tried")
	require.Equal(t, jobs.MessageRun, b.get(t, "job-stuck").Outbox.Type)
}

// A job that moves between the sweeper's read and its nudge (a worker
// claims it, another sweeper nudges it) is refused by the store: counted,
// not an error.
func TestANudgeRefusedBecauseTheJobMovedIsNoError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-42")
	b.clock.Advance(time.Hour)
	b.jobs.beforeNudge = func(req jobs.NudgeRequest) {
		b.claim(t, req.JobID, "attempt-a", time.Minute)
	}
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.NudgeRefused)
	require.Zero(t, r.Nudged+r.Errors)
	require.Equal(t, jobs.EventStarted, b.get(t, "job-42").Outbox.Type)
}

// Failed requests are counted and make the run return an error; the cursor
// moves past what was decided, and stays where the jobs could not be read.
func TestErrorsAreCountedAndTheCursorStaysBeforeWhatWasNotDecided(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for g := range 3 {
		b.put(t, "job-gone", int64(g+1), "attempt-a")
	}
	b.clock.Advance(2 * time.Hour)
	b.s3.Fail(func(op, key string) error {
		if op == "DeleteObject" && strings.Contains(key, "g0000000002") {
			return errors.New("injected: delete failed")
		}
		return nil
	})
	r, err := b.sweeper.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "sweeper: 1 requests failed")
	require.ErrorContains(t, err, "injected: delete failed")
	require.Equal(t, 1, r.Errors)
	require.Equal(t, 2, r.Deleted)
	require.Empty(t, r.Cursor, "it reached the end: the next run starts over and retries")
	require.Equal(t, []string{key("job-gone", 2, "attempt-a")}, candidateKeys(b))

	// The jobs cannot be read: nothing decided, the cursor stays.
	b.s3.Fail(nil)
	b.put(t, "job-gone", 4, "attempt-a")
	require.NoError(t, b.cursor.Save(b.ctx, "candidates/job-a"))
	b.jobs.failGetMany = errors.New("injected: throttled")
	r, err = b.sweeper.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "injected: throttled")
	require.Equal(t, 2, r.Examined)
	require.Zero(t, r.Deleted)
	require.Equal(t, "candidates/job-a", r.Cursor)
	saved, err := b.cursor.Load(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "candidates/job-a", saved)
}

// A run stops starting deletes when less than DeadlineReserve is left
// before its context's deadline, saves the cursor after the last key it
// decided about, and the next run continues from there.
func TestARunStopsBeforeItsDeadlineAndTheNextContinues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t)
		for g := range 10 {
			b.put(t, "job-gone", int64(g+1), "attempt-a")
		}
		b.clock.Advance(2 * time.Hour)
		b.s3.Fail(func(op, _ string) error {
			if op == "DeleteObject" {
				time.Sleep(time.Second) // a slow delete, in the bubble's time
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(b.ctx, sweeper.DeadlineReserve+3*time.Second+time.Millisecond)
		defer cancel()
		r, err := b.sweeper.Run(ctx, sweeper.Options{})
		require.NoError(t, err)
		require.True(t, r.OutOfTime)
		require.Equal(t, 4, r.Deleted, "deletes started while more than the reserve was left")
		require.Equal(t, key("job-gone", 4, "attempt-a"), r.Cursor)
		require.Len(t, candidateKeys(b), 6)

		r, err = b.sweeper.Run(b.ctx, sweeper.Options{})
		require.NoError(t, err)
		require.False(t, r.OutOfTime)
		require.Equal(t, 6, r.Examined)
		require.Equal(t, 6, r.Deleted)
		require.Empty(t, candidateKeys(b))
	})
}

// The report's JSON field names are an interface: dashboards read them.
func TestReportFieldNamesAreStable(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(sweeper.Report{})
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(raw, &fields))
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	require.ElementsMatch(t, []string{
		"examined", "deleted", "would_delete", "kept_current", "kept_result", "kept_grace", "unparsable",
		"stuck", "nudged", "would_nudge", "nudge_refused", "held", "errors", "cursor", "wrapped", "out_of_time",
		"dry_run", "elapsed_ms", "finished", "repaired", "would_repair", "repair_cursor",
		"rechecked", "repaired_on_recheck", "diverged", "recheck_cursor", "repair_lag_seconds", "recheck_lag_seconds", "undecodable", "purged",
	}, names)
	opts, err := json.Marshal(sweeper.Options{DryRun: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"dry_run": true}`, string(opts))
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, tc := range map[string]struct {
		mutate func(*sweeper.Config)
		want   string
	}{
		"no jobs":          {func(c *sweeper.Config) { c.Jobs = nil }, "Jobs is nil"},
		"no candidates":    {func(c *sweeper.Config) { c.Candidates = nil }, "Candidates is nil"},
		"negative grace":   {func(c *sweeper.Config) { c.Grace = -time.Second }, "Grace -1s is negative"},
		"negative stuck":   {func(c *sweeper.Config) { c.StuckAfter = -time.Second }, "StuckAfter -1s is negative"},
		"negative repair":  {func(c *sweeper.Config) { c.RepairAfter = -time.Second }, "RepairAfter -1s is negative"},
		"negative recheck": {func(c *sweeper.Config) { c.RecheckAfter = -time.Second }, "RecheckAfter -1s is negative"},
		"recheck too early": {func(c *sweeper.Config) { c.RecheckAfter = sweeper.DefaultRepairAfter },
			"RecheckAfter 15m0s is not beyond RepairAfter 15m0s"},
		"recheck before repair": {func(c *sweeper.Config) { c.RepairAfter, c.RecheckAfter = time.Hour, 59*time.Minute },
			"RecheckAfter 59m0s is not beyond RepairAfter 1h0m0s"},
		"negative budget": {func(c *sweeper.Config) { c.RepairBudget = -time.Second }, "RepairBudget -1s is negative"},
		"holds of no queue": {func(c *sweeper.Config) { c.Quarantine = quarantine.NewMemoryStore() },
			"CommandsQueue is empty, and Quarantine is set"},
		"negative max items":      {func(c *sweeper.Config) { c.MaxItems = -1 }, "MaxItems -1 is outside 0..100000"},
		"too many items":          {func(c *sweeper.Config) { c.MaxItems = sweeper.MaxItemsLimit + 1 }, "MaxItems 100001"},
		"negative purge limit":    {func(c *sweeper.Config) { c.PurgeLimit = -1 }, "PurgeLimit -1 is outside 0..100000"},
		"too large a purge limit": {func(c *sweeper.Config) { c.PurgeLimit = sweeper.MaxItemsLimit + 1 }, "PurgeLimit 100001"},
	} {
		cfg := b.cfg
		tc.mutate(&cfg)
		require.ErrorIs(t, cfg.Validate(), sweeper.ErrInvalidConfig, name)
		require.ErrorContains(t, cfg.Validate(), tc.want, name)
		s, err := sweeper.New(cfg)
		require.ErrorIs(t, err, sweeper.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.want, name)
		require.Nil(t, s, name)
	}
	// Each bound is a valid setting itself.
	for name, mutate := range map[string]func(*sweeper.Config){
		"the most items":            func(c *sweeper.Config) { c.MaxItems = sweeper.MaxItemsLimit },
		"the largest purge limit":   func(c *sweeper.Config) { c.PurgeLimit = sweeper.MaxItemsLimit },
		"recheck just after repair": func(c *sweeper.Config) { c.RecheckAfter = sweeper.DefaultRepairAfter + time.Nanosecond },
		"holds of the commands queue": func(c *sweeper.Config) {
			c.Quarantine, c.CommandsQueue = quarantine.NewMemoryStore(), "commands.fifo"
		},
	} {
		cfg := b.cfg
		mutate(&cfg)
		_, err := sweeper.New(cfg)
		require.NoError(t, err, name)
	}
	// The zero values of the optional fields are the defaults: a candidate
	// one hour old is young, a job 15 minutes unchanged is not yet stuck.
	s, err := sweeper.New(sweeper.Config{Jobs: b.jobs, Candidates: b.candidates, Now: b.clock.Now})
	require.NoError(t, err)
	b.create(t, "job-42")
	b.put(t, "job-gone", 1, "attempt-a")
	b.clock.Advance(sweeper.DefaultStuckAfter)
	r, err := s.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, r.KeptGrace)
	require.Zero(t, r.Stuck)
	b.clock.Advance(sweeper.DefaultGrace - sweeper.DefaultStuckAfter + time.Millisecond)
	r, err = s.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, r.Deleted)
	require.Equal(t, 1, r.Nudged)
}

func candidateKeys(b *testBundle) []string {
	var keys []string
	for _, k := range b.s3.keys() {
		if strings.HasPrefix(k, candidate.Prefix) {
			keys = append(keys, k)
		}
	}
	return keys
}

func mustKey(t *testing.T, id string, g int64, attempt string) candidate.Key {
	t.Helper()
	k, err := candidate.NewKey(id, g, attempt, "csv")
	require.NoError(t, err)
	return k
}

// What a run of N objects over J jobs costs: ceil(N/1000) listings, one
// delete per orphan, one cursor read and at most one write; one live
// listing (16 Query requests on DynamoDB) and one batch read of the jobs
// (ceil(J/100) BatchGetItem requests), plus one per stuck job to nudge.
func TestRequestsPerRunOfNObjects(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *sweeper.Config) { c.MaxItems = 3000 })
	const jobsN, perJob = 250, 10 // 2,500 objects
	for j := range jobsN {
		for g := range perJob {
			key := fmt.Sprintf("candidates/job-%03d/g%010d/attempt-a.csv", j, g+1)
			b.s3.rawPut(t, key, []byte("x"))
		}
	}
	b.clock.Advance(2 * time.Hour)
	b.s3.TakeCalls()
	b.jobs.take()
	r := b.run(t, sweeper.Options{})
	require.Equal(t, jobsN*perJob, r.Examined)
	require.Equal(t, jobsN*perJob, r.Deleted)
	require.Equal(t, map[string]int{"ListObjectsV2": 3, "DeleteObject": 2500, "GetObject": 1}, b.s3.TakeCalls())
	calls, read := b.jobs.take()
	require.Equal(t, map[string]int{"Live": 1, "GetMany": 1}, calls)
	require.Len(t, read, jobsN)
}
