package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Handle never panics, whatever the body and message id, and a body that
// is not a command is refused permanently.
func FuzzHandle(f *testing.F) {
	valid := body(f, nil)
	for _, seed := range []string{
		valid,
		body(f, func(c *outbox.Command) { c.Tenant = "t-2" }),
		body(f, func(c *outbox.Command) { c.JobID, c.CommandID = "job-7", "job-7/v0" }),
		body(f, func(c *outbox.Command) { c.Version, c.CommandID = 4, "job-42/v4" }),
		"", "{}", "null", "[]", `{"type":"job.run"}`, valid + valid, strings.Replace(valid, "job.run", "job.started", 1),
		strings.Replace(valid, `"t-1"`, `"t-1\u0000"`, 1), "\xff\xfe",
	} {
		f.Add(seed, "msg-1")
	}
	f.Add(valid, "msg/1")
	f.Add(valid, strings.Repeat("m", 200))

	ctx := context.Background()
	store, err := jobs.NewMemoryStore(jobs.Config{})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "intent-42", Tenant: "t-1"}); err != nil {
		f.Fatal(err)
	}
	w := mustNew(f, worker.Config{Jobs: store, Candidates: memoryCandidates(f), Tasks: only(f, lines("x"))})
	f.Fuzz(func(t *testing.T, raw, messageID string) {
		inv, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		inv = lambdacontext.NewContext(inv, &lambdacontext.LambdaContext{AwsRequestID: "req-fuzz"})
		err := w.Handle(inv, events.SQSMessage{MessageId: messageID, Body: raw})
		if _, decodeErr := outbox.DecodeCommand(raw); decodeErr != nil && !fifo.IsPermanent(err) {
			t.Fatalf("malformed body %q: got %v, want a permanent error", raw, err)
		}
	})
}
