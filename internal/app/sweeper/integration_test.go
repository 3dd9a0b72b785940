//go:build integration

package sweeper_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// world is template.yaml's Jobs table (with its live index) and candidates
// bucket on the local stack, the stores on them, and request counting.
type world struct {
	ctx        context.Context
	clock      *jobstest.Clock
	requests   *awstest.Requests
	s3         *s3.Client
	bucket     string
	jobs       *jobs.DynamoStore
	candidates *candidate.Store
	cursor     *sweeper.S3Cursor
}

func setupWorld(t *testing.T) *world {
	t.Helper()
	awstest.DynamoDB(t) // fail clearly without the stack's endpoints
	awstest.S3(t)
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	only, err := testenv.Only(tpl, "JobsTable", "CandidatesBucket")
	require.NoError(t, err)
	// The emulator stamps LastModified with the wall clock, so the test's
	// clock starts there.
	w := &world{ctx: t.Context(), clock: jobstest.NewClock(time.Now().UTC()), requests: &awstest.Requests{}}
	cfg := awstest.Config(t)
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, w.requests.Count("dynamodb."))
		o.DisableValidateResponseChecksum = true // DynamoDB Local sends no CRC32 on errors
	})
	w.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.APIOptions = append(o.APIOptions, w.requests.Count("s3."))
	})
	clients := localdeploy.Clients{DynamoDB: ddb, S3: w.s3}
	deployed, err := localdeploy.Deploy(w.ctx, only, awstest.Name(t, "sweep"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	w.bucket = deployed.Resources["CandidatesBucket"]
	w.jobs, err = jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: deployed.Resources["JobsTable"], Config: jobs.Config{Now: w.clock.Now}})
	require.NoError(t, err)
	w.candidates, err = candidate.New(candidate.Config{Client: w.s3, Bucket: w.bucket, SpoolDir: t.TempDir()})
	require.NoError(t, err)
	w.cursor, err = sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: w.s3, Bucket: w.bucket})
	require.NoError(t, err)
	w.requests.Take()
	return w
}

func (w *world) sweeper(t *testing.T, adjust func(*sweeper.Config)) *sweeper.Sweeper {
	t.Helper()
	cfg := sweeper.Config{Jobs: w.jobs, Candidates: w.candidates, Cursor: w.cursor, Now: w.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	if adjust != nil {
		adjust(&cfg)
	}
	s, err := sweeper.New(cfg)
	require.NoError(t, err)
	return s
}

func (w *world) create(t *testing.T, id string) {
	t.Helper()
	_, err := w.jobs.Create(w.ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)
}

func (w *world) claim(t *testing.T, id, attempt string, lease time.Duration) jobs.Job {
	t.Helper()
	j, err := w.jobs.Claim(w.ctx, jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: w.clock.Now().Add(lease)})
	require.NoError(t, err)
	return j
}

func (w *world) put(t *testing.T, id string, g int64, attempt string) candidate.Result {
	t.Helper()
	k, err := candidate.NewKey(id, g, attempt, "csv")
	require.NoError(t, err)
	res, err := w.candidates.Put(w.ctx, k, strings.NewReader("id,title\n"))
	require.NoError(t, err)
	return res
}

func (w *world) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: aws.String(w.bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(w.ctx)
		require.NoError(t, err)
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// The sweeper on DynamoDB Local and the S3 emulator: the running example's
// orphan deleted and its result kept, a live job's current candidate kept,
// an unreferenced one deleted, an unparsable key left alone; stuck jobs
// found through the live index and nudged once, a live lease left alone; a
// dry run first that changes nothing; and the requests each run costs.
func TestSweepOnTheLocalStack(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t0 := w.clock.Now()

	// The running example.
	w.create(t, "job-42")
	a := w.claim(t, "job-42", "attempt-a", time.Minute)
	w.put(t, "job-42", a.Generation, "attempt-a")
	w.clock.Advance(2 * time.Minute)
	bj := w.claim(t, "job-42", "attempt-b", time.Minute)
	res := w.put(t, "job-42", bj.Generation, "attempt-b")
	_, err := w.jobs.Accept(w.ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: bj.Generation,
		Version: bj.Version, Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}})
	require.NoError(t, err)
	// A running job's current candidate, an unreferenced one, a stray object.
	w.create(t, "job-43")
	c := w.claim(t, "job-43", "attempt-c", time.Minute)
	w.put(t, "job-43", c.Generation, "attempt-c")
	w.put(t, "job-gone", 2, "attempt-x")
	_, err = w.s3.PutObject(w.ctx, &s3.PutObjectInput{Bucket: aws.String(w.bucket), Key: aws.String("candidates/job-42/notes.txt"),
		Body: strings.NewReader("not a candidate")})
	require.NoError(t, err)
	// Stuck: a pending job; job-43 is running on a lease that will end.
	w.create(t, "job-44")
	// A job on a live lease, unchanged for longer than StuckAfter.
	w.clock.Set(t0.Add(2*time.Hour - 10*time.Minute))
	w.create(t, "job-46")
	w.claim(t, "job-46", "attempt-l", 15*time.Minute)
	w.clock.Set(t0.Add(2 * time.Hour))
	s := w.sweeper(t, func(c *sweeper.Config) { c.StuckAfter = 5 * time.Minute })
	objects := w.keys(t)
	before := map[string]jobs.Job{}
	for _, id := range []string{"job-42", "job-43", "job-44", "job-46"} {
		j, err := w.jobs.Get(w.ctx, id)
		require.NoError(t, err)
		before[id] = j
	}
	w.requests.Take()

	dry, err := s.Run(w.ctx, sweeper.Options{DryRun: true})
	require.NoError(t, err)
	dryCost := w.requests.Take()
	require.Equal(t, 5, dry.Examined)
	require.Equal(t, 2, dry.WouldDelete, "A's orphan and the unreferenced candidate")
	require.Equal(t, 1, dry.KeptResult)
	require.Equal(t, 1, dry.KeptCurrent)
	require.Equal(t, 1, dry.Unparsable)
	require.Equal(t, 3, dry.Stuck, "job-43, job-44, job-46 through the live index; job-42 is final")
	require.Equal(t, 2, dry.WouldNudge, "not job-46: its lease is live")
	require.Equal(t, objects, w.keys(t), "a dry run deletes nothing")
	for id, j := range before {
		got, err := w.jobs.Get(w.ctx, id)
		require.NoError(t, err)
		require.Equal(t, j, got, "a dry run nudges nothing")
	}
	w.requests.Take()

	r, err := s.Run(w.ctx, sweeper.Options{})
	require.NoError(t, err)
	cost := w.requests.Take()
	require.Equal(t, 2, r.Deleted)
	require.Equal(t, 2, r.Nudged)
	require.Zero(t, r.Errors+r.NudgeRefused)
	require.True(t, r.Wrapped)
	require.ElementsMatch(t, []string{
		"candidates/job-42/g0000000002/attempt-b.csv", "candidates/job-42/notes.txt", "candidates/job-43/g0000000001/attempt-c.csv",
	}, w.keys(t))
	for _, id := range []string{"job-43", "job-44"} {
		j, err := w.jobs.Get(w.ctx, id)
		require.NoError(t, err)
		require.Equal(t, jobs.MessageRun, j.Outbox.Type, id)
		require.Equal(t, before[id].Version+1, j.Version, id)
		require.Equal(t, before[id].Generation, j.Generation, id)
	}
	j46, err := w.jobs.Get(w.ctx, "job-46")
	require.NoError(t, err)
	require.Equal(t, before["job-46"], j46, "a live lease is never passed")
	require.Equal(t, map[string]int{
		"s3.GetObject":          1,               // the cursor
		"s3.ListObjectsV2":      1,               // 5 objects: one page
		"s3.DeleteObject":       2,               // one per orphan
		"dynamodb.Query":        jobs.LiveShards, // the live index, one page per shard
		"dynamodb.BatchGetItem": 2,               // the 3 stuck jobs; the candidates' 3 jobs
		"dynamodb.UpdateItem":   2,               // one per nudge
	}, cost, "no cursor write: the run wrapped from the beginning to the beginning")

	// Right after: nothing to do.
	w.clock.Advance(time.Second)
	again, err := s.Run(w.ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, again.Deleted+again.Nudged)
	require.Equal(t, 1, again.Stuck, "job-46, on its live lease")
	t.Logf("dry run requests: %v", dryCost)
	t.Logf("run requests: %v", cost)
}

// Bounded runs on the emulator: the cursor object is written to the bucket,
// the next run continues after it, and the run that reaches the end wraps.
// It also measures a run's requests against the number of objects.
func TestBoundedSweepsOnTheLocalStack(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	const jobsN, perJob = 120, 2
	for j := range jobsN {
		id := fmt.Sprintf("job-%03d", j)
		if j%2 == 0 { // half the jobs exist, completed with their g1 candidate
			w.create(t, id)
			c := w.claim(t, id, "attempt-a", time.Minute)
			_, err := w.jobs.Accept(w.ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: c.Version,
				Result: jobs.Result{Key: fmt.Sprintf("candidates/%s/g0000000001/attempt-a.csv", id), SHA256: strings.Repeat("ab", 32), Size: 9}})
			require.NoError(t, err)
		}
		for g := range perJob {
			w.put(t, id, int64(g+1), "attempt-a")
		}
	}
	w.clock.Advance(2 * time.Hour)
	s := w.sweeper(t, func(c *sweeper.Config) { c.MaxItems = 150 })
	w.requests.Take()

	var runs []sweeper.Report
	var costs []map[string]int
	for {
		r, err := s.Run(w.ctx, sweeper.Options{})
		require.NoError(t, err)
		runs = append(runs, r)
		costs = append(costs, w.requests.Take())
		if r.Cursor != "" {
			out, err := w.s3.GetObject(w.ctx, &s3.GetObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(sweeper.CursorKey)})
			require.NoError(t, err)
			body, err := io.ReadAll(out.Body)
			require.NoError(t, err)
			require.NoError(t, out.Body.Close())
			require.Equal(t, r.Cursor, string(body), "the cursor is in the bucket")
			w.requests.Take()
		}
		if r.Wrapped || len(runs) == 3 {
			break
		}
	}
	require.Len(t, runs, 2)
	require.Equal(t, 150, runs[0].Examined)
	require.Equal(t, 90, runs[1].Examined)
	require.Equal(t, jobsN*perJob-jobsN/2, runs[0].Deleted+runs[1].Deleted, "every candidate but the 60 results")
	require.Equal(t, jobsN/2, runs[0].KeptResult+runs[1].KeptResult)
	require.Len(t, w.keys(t), jobsN/2+1, "the results and the cursor object")

	// Run 1: 150 objects of 75 jobs (one BatchGetItem per 100 jobs), the
	// cursor saved. Run 2: the other 90 objects of 45 jobs, the cursor set
	// back to the beginning.
	for i, c := range costs {
		t.Logf("run %d: %d objects, %d deleted: %v", i+1, runs[i].Examined, runs[i].Deleted, c)
	}
	require.Equal(t, map[string]int{
		"s3.GetObject": 1, "s3.ListObjectsV2": 1, "s3.DeleteObject": runs[0].Deleted, "s3.PutObject": 1,
		"dynamodb.Query": jobs.LiveShards, "dynamodb.BatchGetItem": 1,
	}, costs[0])
	require.Equal(t, map[string]int{
		"s3.GetObject": 1, "s3.ListObjectsV2": 1, "s3.DeleteObject": runs[1].Deleted, "s3.PutObject": 1,
		"dynamodb.Query": jobs.LiveShards, "dynamodb.BatchGetItem": 1,
	}, costs[1])
}
