package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// The running example: worker A claims job-42 and stalls, B takes over after
// A's lease expires and completes it; A's late accept changes nothing.
func Example() {
	ctx := context.Background()
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}

	created, _ := store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	fmt.Println("created:", created.Job.Status, created.Job.Outbox.ID, created.Job.Outbox.Type)
	again, _ := store.Create(ctx, jobs.CreateRequest{JobID: "job-99", IntentID: "export-intent-7", Tenant: "t-1"})
	fmt.Println("same intent:", again.Job.ID, "existing:", again.Existing)

	a, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
	fmt.Println("A claims: generation", a.Generation)

	_, err = store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
	fmt.Println("B while A's lease is live:", errors.Is(err, jobs.ErrLeaseHeld))

	clock.Advance(2 * time.Minute) // A stalls; its lease expires
	b, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
	fmt.Println("B takes over: generation", b.Generation)

	sha := strings.Repeat("5e", 32)
	done, _ := store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: b.Generation, Version: b.Version,
		Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: sha, Size: 2048}, Progress: 120})
	fmt.Println("B accepts:", done.Status, done.Outbox.ID, done.Outbox.Type)

	_, err = store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-a", Generation: a.Generation, Version: a.Version,
		Result: jobs.Result{Key: "candidates/job-42/g0000000001/attempt-a.json", SHA256: sha, Size: 2000}, Progress: 100})
	fmt.Println("A's late accept:", err)

	final, _ := store.Get(ctx, "job-42")
	fmt.Println("result:", final.Result.Key, "version", final.Version)
	// Output:
	// created: pending job-42/v0 job.run
	// same intent: job-42 existing: true
	// A claims: generation 1
	// B while A's lease is live: true
	// B takes over: generation 2
	// B accepts: completed job-42/v3 job.completed
	// A's late accept: jobs: accept job-42 g1: stale generation: job is at g2 v3 (completed)
	// result: candidates/job-42/g0000000002/attempt-b.json version 3
}

// A Lambda handler's lease ends at its invocation deadline plus a margin
// for clock skew.
func ExampleLeaseEnd() {
	deadline := time.Date(2026, 11, 4, 9, 15, 0, 0, time.UTC)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	end, _ := jobs.LeaseEnd(ctx, 0)
	fmt.Println(end.Format(time.RFC3339))
	// Output: 2026-11-04T09:15:05Z
}
