package sweeper_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The running example after the fact: worker A's generation-1 candidate is
// an orphan once B's generation-2 result is accepted. The sweeper deletes it
// once it is older than the grace period, and keeps B's.
func Example() {
	ctx := context.Background()
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	bucket, err := s3mem.New(s3mem.Config{Buckets: []string{"candidates"}, Now: clock.Now}) // *s3.Client in a function
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "sweeper-example-")
	defer func() { _ = os.RemoveAll(dir) }()
	candidates, err := candidate.New(candidate.Config{Client: bucket, Bucket: "candidates", SpoolDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	write := func(j jobs.Job, attempt string) candidate.Result {
		key, _ := candidate.NewKey(j.ID, j.Generation, attempt, "csv")
		res, _ := candidates.Put(ctx, key, strings.NewReader("id,title\n"))
		return res
	}

	_, _ = store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	a, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
	write(a, "attempt-a")
	clock.Advance(2 * time.Minute) // A stalls; B takes over
	b, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
	res := write(b, "attempt-b")
	_, _ = store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: b.Generation, Version: b.Version,
		Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}})

	cursor, err := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: bucket, Bucket: "candidates"})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := sweeper.New(sweeper.Config{Jobs: store, Candidates: candidates, Cursor: cursor, Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := s.Run(ctx, sweeper.Options{DryRun: true})
	fmt.Printf("dry run, at once: would delete %d, kept for grace %d, kept result %d\n", r.WouldDelete, r.KeptGrace, r.KeptResult)

	clock.Advance(sweeper.DefaultGrace)
	r, _ = s.Run(ctx, sweeper.Options{DryRun: true})
	fmt.Printf("dry run, an hour later: would delete %d, kept result %d\n", r.WouldDelete, r.KeptResult)
	r, _ = s.Run(ctx, sweeper.Options{})
	fmt.Printf("run: examined %d, deleted %d, kept result %d\n", r.Examined, r.Deleted, r.KeptResult)
	for _, k := range bucket.Keys("candidates", "") {
		fmt.Println("left:", k)
	}
	// Output:
	// dry run, at once: would delete 0, kept for grace 1, kept result 1
	// dry run, an hour later: would delete 1, kept result 1
	// run: examined 2, deleted 1, kept result 1
	// left: candidates/job-42/g0000000002/attempt-b.csv
}
