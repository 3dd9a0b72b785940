package worker_test

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// A worker on the memory store runs job-42's command: it claims the job,
// the task writes two lines and reports progress once, and the candidate
// is accepted as the result (job-42/v3, the running example's completion).
func Example() {
	ctx := context.Background()
	store := jobs.NewMemoryStore()
	// In a function: candidate.New(s3.NewFromConfig(cfg), bucket).
	candidates := candidate.New(candidatetest.NewMemoryS3([]string{"candidates-test"}), "candidates-test")
	created, _ := store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})

	task := worker.TaskFunc("ndjson", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		fmt.Fprintln(in.Out, `{"article_id":"a1"}`)
		if err := in.Progress(ctx, 1); err != nil {
			return worker.Output{}, err
		}
		fmt.Fprintln(in.Out, `{"article_id":"a2"}`)
		return worker.Output{Items: 2}, nil
	})
	w := worker.New(worker.Config{Jobs: store, Candidates: candidates, Task: task})

	// Lambda gives the handler a request id and a deadline; pkg/fifo hands
	// each message of the batch to w.Handle.
	inv, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inv = lambdacontext.NewContext(inv, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	body := fmt.Sprintf(`{"type":"job.run","command_id":"job-42/v0","job_id":"job-42","intent_id":"export-intent-7","tenant":"t-1","version":0,"issued_at":%q}`,
		created.Job.CreatedAt.Format(time.RFC3339Nano))
	resp, err := fifo.New(w.Handle).Process(inv, events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "msg-1", Body: body, Attributes: map[string]string{"MessageGroupId": "job-42"},
	}}})
	fmt.Println("failures:", len(resp.BatchItemFailures), err)

	job, _ := store.Get(ctx, "job-42")
	fmt.Println(job.Status, job.Outbox.ID, job.Outbox.Type, "progress", job.Progress)
	fmt.Println("result:", job.Result.Key)
	key, _ := candidate.ParseKey(job.Result.Key)
	r, _ := candidates.Open(ctx, key)
	defer func() { _ = r.Close() }()
	content, _ := io.ReadAll(r)
	fmt.Print(string(content))
	// Output:
	// failures: 0 <nil>
	// completed job-42/v3 job.completed progress 2
	// result: candidates/job-42/g0000000001/req-1_msg-1.ndjson
	// {"article_id":"a1"}
	// {"article_id":"a2"}
}
