package sweeper_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testBundle is a sweeper over the memory job store and the candidate
// store on a bucket in memory (s3mem.FaultyS3, see bucket), sharing
// one clock, with the cursor in the bucket.
type testBundle struct {
	ctx        context.Context
	clock      *jobstest.Clock
	store      *jobs.MemoryStore
	jobs       *countingJobs
	s3         *bucket
	candidates *candidate.Store
	cursor     *sweeper.S3Cursor
	logs       *testenv.Buffer
	cfg        sweeper.Config
	sweeper    *sweeper.Sweeper
}

// setup builds the bundle; adjust may change the configuration first.
func setup(t *testing.T, adjust ...func(*sweeper.Config)) *testBundle {
	t.Helper()
	b := &testBundle{ctx: t.Context(), clock: jobstest.NewClock(jobstest.Start), logs: &testenv.Buffer{}}
	store, err := jobs.NewMemoryStore(jobs.Config{Now: b.clock.Now})
	require.NoError(t, err)
	b.store = store
	b.jobs = &countingJobs{Jobs: b.store, now: b.clock.Now}
	b.s3 = newBucket(t, b.clock.Now)
	candidates, err := candidate.New(candidate.Config{Client: b.s3, Bucket: testBucket, SpoolDir: t.TempDir()})
	require.NoError(t, err)
	b.candidates = candidates
	b.cursor, err = sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: b.s3, Bucket: testBucket})
	require.NoError(t, err)
	b.cfg = sweeper.Config{
		Jobs: b.jobs, Candidates: b.candidates, Cursor: b.cursor, Now: b.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(b.logs, nil)),
	}
	for _, a := range adjust {
		a(&b.cfg)
	}
	b.sweeper, err = sweeper.New(b.cfg)
	require.NoError(t, err)
	return b
}

// run runs the sweeper and requires it to succeed.
func (b *testBundle) run(t *testing.T, opts sweeper.Options) sweeper.Report {
	t.Helper()
	r, err := b.sweeper.Run(b.ctx, opts)
	require.NoError(t, err)
	return r
}

// create creates a pending job.
func (b *testBundle) create(t *testing.T, id string) jobs.Job {
	t.Helper()
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)
	return res.Job
}

func (b *testBundle) claim(t *testing.T, id, attempt string, lease time.Duration) jobs.Job {
	t.Helper()
	j, err := b.store.Claim(b.ctx, jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: b.clock.Now().Add(lease)})
	require.NoError(t, err)
	return j
}

// put writes the candidate of an attempt, as its task would, now.
func (b *testBundle) put(t *testing.T, id string, g int64, attempt string) candidate.Result {
	t.Helper()
	key, err := candidate.NewKey(id, g, attempt, "csv")
	require.NoError(t, err)
	res, err := b.candidates.Put(b.ctx, key, strings.NewReader(fmt.Sprintf("%s,%d,%s\n", id, g, attempt)))
	require.NoError(t, err)
	return res
}

func (b *testBundle) accept(t *testing.T, j jobs.Job, res candidate.Result) jobs.Job {
	t.Helper()
	done, err := b.store.Accept(b.ctx, jobs.AcceptRequest{JobID: j.ID, AttemptID: j.LeaseOwner, Generation: j.Generation,
		Version: j.Version, Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}})
	require.NoError(t, err)
	return done
}

func (b *testBundle) get(t *testing.T, id string) jobs.Job {
	t.Helper()
	j, err := b.store.Get(b.ctx, id)
	require.NoError(t, err)
	return j
}

func key(id string, g int64, attempt string) string {
	return fmt.Sprintf("candidates/%s/g%010d/%s.csv", id, g, attempt)
}

// countingJobs counts the calls the sweeper makes and the ids it reads.
type countingJobs struct {
	sweeper.Jobs
	mu    sync.Mutex
	calls map[string]int
	read  map[string]int // job id → times read
	// beforeNudge, when set, runs before each nudge reaches the store: a
	// test's way to move a job between the sweeper's read and its write.
	beforeNudge func(jobs.NudgeRequest)
	// failGetMany, when set, is the error of every GetMany.
	failGetMany error
	// staleLive is added to what Live lists, as an eventually consistent
	// index lists jobs that moved on or ended a moment ago.
	staleLive []string
	// now is the bundle's clock; showFinishedAt holds back jobs from
	// Finished until now reaches the time given, as an index that shows
	// them late.
	now            func() time.Time
	showFinishedAt map[string]time.Time
	// undecodable names the jobs whose items GetMany reads but cannot
	// decode: it leaves them out and returns a jobs.UndecodableError with
	// the others, as DynamoStore does.
	undecodable map[string]bool
	// onGetMany, when set, runs at each GetMany.
	onGetMany func()
}

func (c *countingJobs) count(op string, ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls, c.read = map[string]int{}, map[string]int{}
	}
	c.calls[op]++
	for _, id := range ids {
		c.read[id]++
	}
}

func (c *countingJobs) Live(ctx context.Context, before time.Time, limit int) ([]string, error) {
	c.count("Live")
	ids, err := c.Jobs.Live(ctx, before, limit)
	return append(c.staleLive, ids...), err
}

func (c *countingJobs) Finished(ctx context.Context, after string, before time.Time, limit int) ([]jobs.FinishedJob, error) {
	c.count("Finished")
	got, err := c.Jobs.Finished(ctx, after, before, limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.DeleteFunc(got, func(f jobs.FinishedJob) bool {
		at, late := c.showFinishedAt[f.ID]
		return late && c.now().Before(at)
	}), err
}

func (c *countingJobs) GetMany(ctx context.Context, ids []string) (map[string]jobs.Job, error) {
	c.count("GetMany", ids...)
	c.mu.Lock()
	hook := c.onGetMany
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	if c.failGetMany != nil {
		return nil, c.failGetMany
	}
	found, err := c.Jobs.GetMany(ctx, ids)
	if err != nil {
		return found, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	bad := map[string]error{}
	for _, id := range ids {
		if _, ok := found[id]; ok && c.undecodable[id] {
			delete(found, id)
			bad[id] = errors.New("jobs: attribute version: want N, have S")
		}
	}
	if len(bad) > 0 {
		return found, &jobs.UndecodableError{Items: bad}
	}
	return found, nil
}

func (c *countingJobs) Nudge(ctx context.Context, req jobs.NudgeRequest) (jobs.Job, error) {
	c.count("Nudge")
	if c.beforeNudge != nil {
		c.beforeNudge(req)
	}
	return c.Jobs.Nudge(ctx, req)
}

// take returns the calls and reads since the last take.
func (c *countingJobs) take() (calls, read map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, read = c.calls, c.read
	c.calls, c.read = map[string]int{}, map[string]int{}
	if calls == nil {
		calls, read = map[string]int{}, map[string]int{}
	}
	return calls, read
}
