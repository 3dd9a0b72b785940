package sweeper_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// repairBundle is the test bundle with the projection: the memory
// projection store, the projector that consumes events into it, and the
// sweeper repairing from it with its repair cursor in the test bucket (s3mem.FaultyS3).
type repairBundle struct {
	*testBundle
	proj      *failingProjection
	projector *projection.Projector
	seq       int
}

func setupRepair(t *testing.T, adjust ...func(*sweeper.Config)) *repairBundle {
	t.Helper()
	b := &repairBundle{testBundle: setup(t)}
	b.proj = &failingProjection{MemoryStore: projection.NewMemoryStore()}
	var err error
	b.projector, err = projection.NewProjector(projection.ProjectorConfig{Store: b.proj, Source: b.store})
	require.NoError(t, err)
	b.cfg.Projection = b.proj
	b.cfg.RepairCursor, err = sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: b.s3, Bucket: testBucket, Key: sweeper.RepairCursorKey})
	require.NoError(t, err)
	b.cfg.RecheckCursor, err = sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: b.s3, Bucket: testBucket, Key: sweeper.RecheckCursorKey})
	require.NoError(t, err)
	for _, a := range adjust {
		a(&b.cfg)
	}
	b.sweeper, err = sweeper.New(b.cfg)
	require.NoError(t, err)
	return b
}

// failingProjection is the memory projection store, able to fail reads of
// chosen jobs' cursors and to run a function just before a recovery.
type failingProjection struct {
	*projection.MemoryStore
	mu            sync.Mutex
	failCursor    map[string]error
	beforeRecover func(snap projection.View)
	recovers      int
}

func (f *failingProjection) Cursor(ctx context.Context, tenant, jobID string) (projection.Cursor, error) {
	f.mu.Lock()
	err := f.failCursor[jobID]
	f.mu.Unlock()
	if err != nil {
		return projection.Cursor{}, err
	}
	return f.MemoryStore.Cursor(ctx, tenant, jobID)
}

func (f *failingProjection) Recover(ctx context.Context, snap projection.View) (projection.Recovery, error) {
	f.mu.Lock()
	before := f.beforeRecover
	f.recovers++
	f.mu.Unlock()
	if before != nil {
		before(snap)
	}
	return f.MemoryStore.Recover(ctx, snap)
}

// event is the message the relay would send for the transition from prev
// (nil: creation) to cur: the event of cur's version.
func (b *repairBundle) event(t *testing.T, prev *jobs.Job, cur jobs.Job) events.SQSMessage {
	t.Helper()
	msgs, err := outbox.FromTransition(&cur, prev)
	require.NoError(t, err)
	for _, m := range msgs {
		if m.Kind == outbox.KindEvent {
			b.seq++
			return events.SQSMessage{
				MessageId: fmt.Sprintf("msg-%d", b.seq), Body: string(m.Body),
				Attributes: map[string]string{
					"MessageGroupId": m.GroupID, "MessageDeduplicationId": m.DeduplicationID, "ApproximateReceiveCount": "1",
				},
			}
		}
	}
	t.Fatalf("%s v%d emitted no event", cur.ID, cur.Version)
	return events.SQSMessage{}
}

// deliver hands the message to the projector, as the events queue's
// mapping would, and requires it to be acknowledged.
func (b *repairBundle) deliver(t *testing.T, msg events.SQSMessage) {
	t.Helper()
	require.NoError(t, b.projector.Handle(b.ctx, msg))
}

// lifecycle runs job id from creation to completion with progress
// 40 (renewal) and 100 (accept), projecting the events of the versions in
// project and dropping the others; it returns the final job and the final
// event.
func (b *repairBundle) lifecycle(t *testing.T, id, tenant string, project ...int64) (jobs.Job, events.SQSMessage) {
	t.Helper()
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: tenant})
	require.NoError(t, err)
	prev := res.Job
	var last events.SQSMessage
	step := func(cur jobs.Job) {
		last = b.event(t, &prev, cur)
		for _, v := range project {
			if v == cur.Version {
				b.deliver(t, last)
			}
		}
		prev = cur
	}
	claimed := b.claim(t, id, "attempt-"+id, time.Minute)
	step(claimed) // v1
	renewed, err := b.store.Renew(b.ctx, jobs.RenewRequest{JobID: id, AttemptID: claimed.LeaseOwner, Generation: claimed.Generation,
		Version: claimed.Version, LeaseUntil: b.clock.Now().Add(time.Minute), Progress: 40})
	require.NoError(t, err)
	step(renewed) // v2
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: id, AttemptID: renewed.LeaseOwner, Generation: renewed.Generation,
		Version: renewed.Version, Progress: 100,
		Result: jobs.Result{Key: key(id, renewed.Generation, renewed.LeaseOwner), SHA256: strings.Repeat("ab", 32), Size: 9}})
	require.NoError(t, err)
	step(done) // v3, final
	return done, last
}

func (b *repairBundle) view(t *testing.T, id string) projection.View {
	t.Helper()
	v, err := b.proj.View(b.ctx, id)
	require.NoError(t, err)
	return v
}

func (b *repairBundle) totals(t *testing.T, tenant string) projection.Totals {
	t.Helper()
	tot, err := b.proj.Totals(b.ctx, tenant)
	require.NoError(t, err)
	return tot
}

// The hole: the relay could not publish a job's final event, so nothing
// brings its view and its tenant's totals to it. After RepairAfter the
// sweeper finds the job through the finished listing and recovers its
// projection from the job item; the lost event, delivered after all,
// counts nothing twice.
func TestLostFinalEventIsRepairedFromTheJobItem(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	done, lost := b.lifecycle(t, "job-42", "t-1", 1, 2) // v3's event is lost
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-42").Status, "the view is stuck at v2")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 40}, b.totals(t, "t-1"))

	// Within RepairAfter the job is not checked: the relay and the
	// projector may still deliver.
	b.clock.Advance(sweeper.DefaultRepairAfter)
	r := b.run(t, sweeper.Options{})
	require.Zero(t, r.Finished+r.Repaired)
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-42").Status)
	saved := b.s3.body(t, sweeper.RepairCursorKey)
	require.Equal(t, jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)), saved,
		"the listing was complete: the cursor is at the bound, the job's final transition")

	// A dry run reports it and changes nothing, not even the cursor.
	b.clock.Advance(time.Millisecond)
	dry := b.run(t, sweeper.Options{DryRun: true})
	require.Equal(t, 1, dry.Finished)
	require.Equal(t, 1, dry.WouldRepair)
	require.Zero(t, dry.Repaired)
	require.NotEmpty(t, dry.RepairCursor)
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-42").Status)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 40}, b.totals(t, "t-1"))
	require.Equal(t, saved, b.s3.body(t, sweeper.RepairCursorKey), "a dry run saves no cursor")
	require.Contains(t, b.logs.String(), `"msg":"sweep: would repair a final job's projection","job_id":"job-42"`)

	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished)
	require.Equal(t, 1, r.Repaired)
	require.Zero(t, r.Errors)
	require.Equal(t, projection.ViewOfJob(&done), b.view(t, "job-42"), "the view holds the final snapshot")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 100, Completed: 1}, b.totals(t, "t-1"))
	cur, err := b.proj.Cursor(b.ctx, "t-1", "job-42")
	require.NoError(t, err)
	require.Equal(t, projection.Cursor{Version: 3, Progress: 100, Status: jobs.StatusCompleted}, cur)
	require.Equal(t, jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor,
		"the listing was complete: the cursor passes the bound")
	require.Equal(t, r.RepairCursor, b.s3.body(t, sweeper.RepairCursorKey), "the cursor is saved")
	require.Contains(t, b.logs.String(), `"msg":"sweep: repaired a final job's projection from its job item","job_id":"job-42"`)

	// The lost event arrives after all (a redrive): it is a duplicate.
	b.deliver(t, lost)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 100, Completed: 1}, b.totals(t, "t-1"), "nothing counted twice")
	require.Equal(t, projection.ViewOfJob(&done), b.view(t, "job-42"))

	// The cursor has passed the job: it is not checked again.
	b.clock.Advance(time.Hour)
	r = b.run(t, sweeper.Options{})
	require.Zero(t, r.Finished+r.Repaired+r.WouldRepair)
}

// Every kind of final job whose projection lags is repaired, however much
// it missed: a completed job whose last two events were lost, a cancelled
// job that never had a view, a failed job, and a completed job whose view
// is in step but whose totals cursor is not (its v2 was lost, so its final
// event's Apply wrote the view and then found the gap in the totals, and
// the event was given up on: parked, or dead-lettered); one in step is
// checked and left alone. The tenant's totals end exactly at what the jobs
// did: processed is the sum of their progress, completed the number
// completed.
func TestEveryLaggingFinalJobIsRepairedAndTheTotalsAreExact(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	inStep, _ := b.lifecycle(t, "job-1", "t-1", 1, 2, 3)
	twoLost, _ := b.lifecycle(t, "job-2", "t-1", 1)
	// Cancelled while pending: its only event (v1) is lost.
	_, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: "job-3", IntentID: "intent-job-3", Tenant: "t-1"})
	require.NoError(t, err)
	cancelled, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: "job-3"})
	require.NoError(t, err)
	// Failed while running: its last event is lost.
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: "job-4", IntentID: "intent-job-4", Tenant: "t-2"})
	require.NoError(t, err)
	c := b.claim(t, "job-4", "attempt-d", time.Minute)
	b.deliver(t, b.event(t, &res.Job, c))
	failed, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: "job-4", AttemptID: "attempt-d", Generation: 1, Version: c.Version,
		Failure: jobs.Failure{Code: "source_gone", Message: "gone"}})
	require.NoError(t, err)
	// A live job is not the repair's business.
	b.create(t, "job-5")
	_, err = b.proj.View(b.ctx, "job-3")
	require.ErrorIs(t, err, projection.ErrNotFound)
	// The view in step, the totals behind: v2 lost, v3 delivered once and
	// never again.
	viewOnly, final := b.lifecycle(t, "job-6", "t-1", 1)
	var gap *projection.GapError
	require.ErrorAs(t, b.projector.Handle(b.ctx, final), &gap, "v3 waits for v2")
	require.Equal(t, projection.ViewOfJob(&viewOnly), b.view(t, "job-6"), "the view took v3")
	cur, err := b.proj.Cursor(b.ctx, "t-1", "job-6")
	require.NoError(t, err)
	require.Zero(t, cur.Version, "the totals counted nothing: v1 adds nothing, v3 waits for v2's progress")
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 100, Completed: 1}, b.totals(t, "t-1"), "job-1 alone")

	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	r := b.run(t, sweeper.Options{})
	require.Equal(t, 5, r.Finished)
	require.Equal(t, 4, r.Repaired, "not job-1, which is in step")
	require.Zero(t, r.Errors)
	for _, j := range []jobs.Job{inStep, twoLost, cancelled, failed, viewOnly} {
		require.Equal(t, projection.ViewOfJob(&j), b.view(t, j.ID), j.ID)
		cur, err := b.proj.Cursor(b.ctx, j.Tenant, j.ID)
		require.NoError(t, err)
		require.Equal(t, j.Version, cur.Version, j.ID)
	}
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 300, Completed: 3}, b.totals(t, "t-1"))
	require.Equal(t, projection.Totals{Tenant: "t-2"}, b.totals(t, "t-2"))
	b.proj.mu.Lock()
	require.Equal(t, 4, b.proj.recovers, "one recovery per lagging job")
	b.proj.mu.Unlock()
}

// Bounded runs: each checks at most MaxItems final jobs in the order they
// ended, from where the last one stopped; the run whose listing comes up
// short moves the cursor to the bound, so later runs list only jobs that
// end later.
func TestRepairRunsAreBoundedAndResumeFromTheCursor(t *testing.T) {
	t.Parallel()
	b := setupRepair(t, func(c *sweeper.Config) { c.MaxItems = 2 })
	var done []jobs.Job
	for i := range 5 {
		j, _ := b.lifecycle(t, fmt.Sprintf("job-%d", i), "t-1", 1) // v2 and v3 lost
		done = append(done, j)
		b.clock.Advance(time.Second)
	}
	b.clock.Advance(sweeper.DefaultRepairAfter)
	var cursors []string
	for _, want := range []int{2, 2, 1} {
		r := b.run(t, sweeper.Options{})
		require.Equal(t, want, r.Finished)
		require.Equal(t, want, r.Repaired)
		cursors = append(cursors, r.RepairCursor)
	}
	require.Equal(t, []string{
		jobs.FinishedKey("job-1", done[1].UpdatedAt), jobs.FinishedKey("job-3", done[3].UpdatedAt),
		jobs.FinishedBound(b.clock.Now().Add(-sweeper.DefaultRepairAfter)),
	}, cursors)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 500, Completed: 5}, b.totals(t, "t-1"))

	// A job that ends now is checked once RepairAfter has passed.
	late, _ := b.lifecycle(t, "job-late", "t-1", 1, 2)
	r := b.run(t, sweeper.Options{})
	require.Zero(t, r.Finished)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished)
	require.Equal(t, 1, r.Repaired)
	require.Equal(t, projection.ViewOfJob(&late), b.view(t, "job-late"))
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 600, Completed: 6}, b.totals(t, "t-1"))
}

// A request that fails stops the repair at the job it was for: the cursor
// stays before it, the run reports the error, and the next run repairs it.
// The jobs before it are repaired and passed.
func TestRepairThatFailsIsTriedAgainByTheNextRun(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	first, _ := b.lifecycle(t, "job-1", "t-1", 1)
	b.clock.Advance(time.Millisecond)
	b.lifecycle(t, "job-2", "t-1", 1)
	b.clock.Advance(time.Millisecond)
	b.lifecycle(t, "job-3", "t-1", 1)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	b.proj.mu.Lock()
	b.proj.failCursor = map[string]error{"job-2": errors.New("throttled")}
	b.proj.mu.Unlock()

	r, err := b.sweeper.Run(b.ctx, sweeper.Options{})
	require.ErrorContains(t, err, "throttled")
	require.Equal(t, 1, r.Errors)
	require.Equal(t, 3, r.Finished)
	require.Equal(t, 1, r.Repaired, "job-1, before the failure")
	require.Equal(t, jobs.FinishedKey("job-1", first.UpdatedAt), r.RepairCursor)
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-3").Status, "not reached")

	b.proj.mu.Lock()
	b.proj.failCursor = nil
	b.proj.mu.Unlock()
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 2, r.Finished)
	require.Equal(t, 2, r.Repaired)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 300, Completed: 3}, b.totals(t, "t-1"))
}

// The final event may arrive between the sweeper's check and its recovery:
// whichever moves the job's cursor first counts the versions, the other
// counts nothing, so the totals hold each delta once.
func TestFinalEventArrivingDuringTheRepairIsCountedOnce(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	done, lateEvent := b.lifecycle(t, "job-42", "t-1", 1, 2)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	b.proj.mu.Lock()
	b.proj.beforeRecover = func(projection.View) { b.deliver(t, lateEvent) }
	b.proj.mu.Unlock()

	r := b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Finished)
	require.Zero(t, r.Repaired, "the event got there first")
	require.Contains(t, b.logs.String(), `"msg":"sweep: repair found the projection in step","job_id":"job-42"`)
	require.Equal(t, projection.ViewOfJob(&done), b.view(t, "job-42"))
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 100, Completed: 1}, b.totals(t, "t-1"))
}

// Without a Projection the sweeper neither lists nor checks final jobs
// (the existing deployments' behaviour); RepairAfter's zero value is the
// default.
func TestRepairNeedsAProjectionAndDefaultsItsDelay(t *testing.T) {
	t.Parallel()
	b := setupRepair(t)
	b.lifecycle(t, "job-42", "t-1", 1)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	without, err := sweeper.New(sweeper.Config{Jobs: b.jobs, Candidates: b.candidates, Now: b.clock.Now,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	b.jobs.take()
	r, err := without.Run(b.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, r.Finished+r.Repaired)
	calls, _ := b.jobs.take()
	require.NotContains(t, calls, "Finished")
	require.Equal(t, jobs.StatusRunning, b.view(t, "job-42").Status)

	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Repaired)
	calls, _ = b.jobs.take()
	require.Equal(t, 2, calls["Finished"], "the check and the recheck, one listing each")
}

// A repair cursor that is no finished index key (written by hand) would
// stop the repair for good if it sorted after every key: the run starts
// at the first final job instead, and says so.
func TestRepairCursorThatIsNoKeyStartsAtTheBeginning(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"zzz", "17937829000", "1793782900000#", "1793782900000#job/42", "179378290000x#job-42"} {
		b := setupRepair(t)
		b.lifecycle(t, "job-42", "t-1", 1)
		b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
		b.s3.rawPut(t, sweeper.RepairCursorKey, []byte(bad))
		r := b.run(t, sweeper.Options{})
		require.Equal(t, 1, r.Repaired, bad)
		require.Contains(t, b.logs.String(), "the repair cursor is not a finished index key", bad)
	}
	// Keys and bounds are cursors.
	b := setupRepair(t)
	b.lifecycle(t, "job-42", "t-1", 1)
	b.clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	b.s3.rawPut(t, sweeper.RepairCursorKey, []byte(jobs.FinishedBound(b.clock.Now())))
	r := b.run(t, sweeper.Options{})
	require.Zero(t, r.Finished, "the job ended before the cursor")
	b.s3.rawPut(t, sweeper.RepairCursorKey, []byte(jobs.FinishedKey("job-1", jobstest.Start)))
	r = b.run(t, sweeper.Options{})
	require.Equal(t, 1, r.Repaired)
	require.NotContains(t, b.logs.String(), "not a finished index key")
}
