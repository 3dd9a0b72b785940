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
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// A worker on the memory store runs two jobs' commands, one batch: each
// job runs the task its spec names from the worker's registry. job-42
// names none and runs the default, "export", which writes two lines and
// reports progress once; job-43 names "count", whose result is JSON. Each
// candidate is accepted as its job's result (job-42/v3, the running
// example's completion), under the extension its task chose.
func Example() {
	ctx := context.Background()
	store, err := jobs.NewMemoryStore(jobs.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	bucket, err := s3mem.New(s3mem.Config{Buckets: []string{"candidates-test"}}) // in a function: s3.NewFromConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	candidates, err := candidate.New(candidate.Config{Client: bucket, Bucket: "candidates-test"})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The tasks: in this service, internal/app/tasks.NewRegistry.
	tasks, err := task.NewRegistry(task.RegistryConfig{Default: "export", Tasks: map[string]task.Task{
		"export": task.Func("ndjson", func(ctx context.Context, in task.Input) (task.Output, error) {
			fmt.Fprintln(in.Out, `{"article_id":"a1"}`)
			if err := in.Progress(ctx, 1); err != nil {
				return task.Output{}, err
			}
			fmt.Fprintln(in.Out, `{"article_id":"a2"}`)
			return task.Output{Items: 2}, nil
		}),
		"count": task.Func("json", func(_ context.Context, in task.Input) (task.Output, error) {
			_, err := fmt.Fprintf(in.Out, "{\"tenant\":%q,\"articles\":2}\n", in.Job.Tenant)
			return task.Output{Items: 2}, err
		}),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := worker.New(worker.Config{Jobs: store, Candidates: candidates, Tasks: tasks})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Two jobs, as intake creates them, and the command each creation
	// emitted, as the relay sends it.
	var batch []events.SQSMessage
	for _, j := range []struct {
		id, intent string
		spec       map[string]string
	}{
		{"job-42", "export-intent-7", nil},
		{"job-43", "count-intent-1", map[string]string{task.SpecTask: "count"}},
	} {
		created, err := store.Create(ctx, jobs.CreateRequest{JobID: j.id, IntentID: j.intent, Tenant: "t-1", Spec: j.spec})
		if err != nil {
			fmt.Println(err)
			return
		}
		batch = append(batch, events.SQSMessage{
			MessageId: "msg-" + j.id, Attributes: map[string]string{"MessageGroupId": j.id},
			Body: fmt.Sprintf(`{"type":"job.run","command_id":"%s/v0","job_id":%q,"intent_id":%q,"tenant":"t-1","version":0,"issued_at":%q}`,
				j.id, j.id, j.intent, created.Job.CreatedAt.Format(time.RFC3339Nano)),
		})
	}

	// Lambda gives the handler a request id and a deadline; pkg/fifo hands
	// each message of the batch to w.Handle.
	inv, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inv = lambdacontext.NewContext(inv, &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	processor, err := fifo.New(fifo.Config{Handler: w.Handle})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := processor.Process(inv, events.SQSEvent{Records: batch})
	fmt.Println("failures:", len(resp.BatchItemFailures), err)

	for _, id := range []string{"job-42", "job-43"} {
		job, _ := store.Get(ctx, id)
		fmt.Println(job.Status, job.Outbox.ID, job.Outbox.Type, "progress", job.Progress)
		fmt.Println("result:", job.Result.Key)
		key, _ := candidate.ParseKey(job.Result.Key)
		r, _ := candidates.Open(ctx, key)
		content, _ := io.ReadAll(r)
		_ = r.Close()
		fmt.Print(string(content))
	}
	// Output:
	// failures: 0 <nil>
	// completed job-42/v3 job.completed progress 2
	// result: candidates/job-42/g0000000001/req-1_msg-job-42.ndjson
	// {"article_id":"a1"}
	// {"article_id":"a2"}
	// completed job-43/v2 job.completed progress 2
	// result: candidates/job-43/g0000000001/req-1_msg-job-43.json
	// {"tenant":"t-1","articles":2}
}
