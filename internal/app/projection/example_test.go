package projection_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// The running example on the events queue: job-42's events arrive out of
// order and twice, and its completion applies before the takeover's event
// (which, at progress 0, adds nothing: the completion starts from the
// state the cursor holds); job-43's first two are lost, the second of
// which added 50, and its last recovers from the job item on its third
// receive.
func Example() {
	ctx := context.Background()
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	if err != nil {
		fmt.Println(err)
		return
	}
	lease := func() time.Time { return clock.Now().Add(time.Minute) }
	sha := strings.Repeat("5e", 32)

	// What the relay publishes: one event per transition, built from the
	// job before and after it.
	var published []outbox.Message
	publish := func(prev, cur jobs.Job) {
		msgs, _ := outbox.FromTransition(&cur, &prev)
		for _, m := range msgs {
			if m.Kind == outbox.KindEvent {
				published = append(published, m)
			}
		}
	}
	// job-42: A claims and stalls, B takes over and completes with 120 items.
	j, _ := store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	a, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: lease()})
	publish(j.Job, a)
	clock.Advance(2 * time.Minute)
	b, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: lease()})
	publish(a, b)
	done, _ := store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: b.Generation,
		Version: b.Version, Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: sha, Size: 2048}, Progress: 120})
	publish(b, done)
	// job-43: claimed, 50 items, completed with 80.
	j, _ = store.Create(ctx, jobs.CreateRequest{JobID: "job-43", IntentID: "export-intent-8", Tenant: "t-1"})
	c, _ := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-43", AttemptID: "attempt-c", LeaseUntil: lease()})
	publish(j.Job, c)
	r, _ := store.Renew(ctx, jobs.RenewRequest{JobID: "job-43", AttemptID: "attempt-c", Generation: 1, Version: c.Version,
		LeaseUntil: lease(), Progress: 50})
	publish(c, r)
	done, _ = store.Accept(ctx, jobs.AcceptRequest{JobID: "job-43", AttemptID: "attempt-c", Generation: 1, Version: r.Version,
		Result: jobs.Result{Key: "candidates/job-43/g0000000001/attempt-c.json", SHA256: sha, Size: 512}, Progress: 80})
	publish(r, done)

	p, err := projection.NewProjector(projection.ProjectorConfig{Store: projection.NewMemoryStore(), Source: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	deliver := func(i, receives int) {
		m := published[i]
		err := p.Handle(ctx, events.SQSMessage{MessageId: m.DeduplicationID, Body: string(m.Body), Attributes: map[string]string{
			"MessageGroupId": m.GroupID, "ApproximateReceiveCount": strconv.Itoa(receives),
		}})
		if err != nil {
			fmt.Printf("%s (receive %d): %v\n", m.DeduplicationID, receives, err)
			return
		}
		fmt.Printf("%s (receive %d): ok\n", m.DeduplicationID, receives)
	}
	deliver(0, 1) // job-42/v1
	deliver(2, 1) // job-42/v3 before v2
	deliver(1, 1)
	deliver(2, 2)
	deliver(2, 3) // a duplicate
	deliver(5, 1) // job-43/v3; v1 and v2 were lost
	deliver(5, 2)
	deliver(5, 3)

	v, _ := p.View(ctx, "job-42")
	fmt.Println("view:", v.JobID, v.Status, "v"+strconv.FormatInt(v.Version, 10), v.ResultKey)
	t, _ := p.Totals(ctx, "t-1")
	fmt.Println("totals: processed", t.Processed, "completed", t.Completed)
	// Output:
	// job-42/v1 (receive 1): ok
	// job-42/v3 (receive 1): ok
	// job-42/v2 (receive 1): ok
	// job-42/v3 (receive 2): ok
	// job-42/v3 (receive 3): ok
	// job-43/v3 (receive 1): projection: job job-43: gap in the job's versions: version 3 arrived with the cursor at 0; waiting for a version from 1 to 2 that adds
	// job-43/v3 (receive 2): projection: job job-43: gap in the job's versions: version 3 arrived with the cursor at 0; waiting for a version from 1 to 2 that adds
	// job-43/v3 (receive 3): ok
	// view: job-42 completed v3 candidates/job-42/g0000000002/attempt-b.json
	// totals: processed 200 completed 2
}
