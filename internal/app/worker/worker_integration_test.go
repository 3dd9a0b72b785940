//go:build integration

package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// stack is template.yaml deployed on the local stack, with clients that
// count every request.
type stack struct {
	outputs    map[string]string
	ddb        *dynamodb.Client
	sqs        *sqs.Client
	s3         *s3.Client
	candidates *candidate.Store
	requests   *awstest.Requests
}

func deployStack(t *testing.T) *stack {
	t.Helper()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	st := &stack{requests: &awstest.Requests{}}
	cfg := awstest.Config(t)
	st.ddb = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, st.requests.Count("dynamodb."))
		o.DisableValidateResponseChecksum = true // DynamoDB Local sends no CRC32 on errors
	})
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.APIOptions = append(o.APIOptions, st.requests.Count("s3."))
	})
	awstest.DynamoDB(t) // fails clearly if the stack's endpoints are missing
	awstest.S3(t)
	st.sqs = awstest.SQS(t)
	clients := localdeploy.Clients{SQS: st.sqs, DynamoDB: st.ddb, S3: s3c}
	deployed, err := localdeploy.Deploy(t.Context(), tpl, awstest.Name(t, "worker"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	st.outputs = deployed.Outputs
	st.s3 = s3c
	st.candidates, err = candidate.New(candidate.Config{Client: s3c, Bucket: st.outputs["CandidatesBucketName"], SpoolDir: t.TempDir()})
	require.NoError(t, err)
	st.requests.Take() // deployment requests are not a job's
	return st
}

func (st *stack) jobs(t *testing.T, cfg jobs.Config) *jobs.DynamoStore {
	t.Helper()
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: st.ddb, Table: st.outputs["JobsTableName"], Config: cfg})
	require.NoError(t, err)
	return store
}

func (st *stack) export(t testing.TB) *tasks.Export {
	t.Helper()
	e, err := tasks.NewExport(tasks.Config{Articles: st.ddb, ArticlesTable: st.outputs["ArticlesTableName"]})
	require.NoError(t, err)
	return e
}

// seed writes n articles of tenant and returns them as the export should
// write them, in id order.
func (st *stack) seed(t *testing.T, tenant string, n int) []map[string]any {
	t.Helper()
	var want []map[string]any
	for i := n; i >= 1; i-- { // written out of order
		id := fmt.Sprintf("a%03d", i)
		_, err := st.ddb.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName: aws.String(st.outputs["ArticlesTableName"]),
			Item: map[string]types.AttributeValue{
				"tenant": &types.AttributeValueMemberS{Value: tenant}, "article_id": &types.AttributeValueMemberS{Value: id},
				"title":      &types.AttributeValueMemberS{Value: "Title " + id + " of " + tenant},
				"body":       &types.AttributeValueMemberS{Value: "<p>Body & more</p>"},
				"updated_at": &types.AttributeValueMemberN{Value: fmt.Sprint(1793782800000 + i)},
			},
		})
		require.NoError(t, err)
		want = append([]map[string]any{{
			"tenant": tenant, "article_id": id, "title": "Title " + id + " of " + tenant,
			"body": "<p>Body & more</p>", "updated_at": json.Number(fmt.Sprint(1793782800000 + i)),
		}}, want...)
	}
	return want
}

// readLines returns the accepted result's NDJSON lines, read back through
// candidate.Store.Open (which checks the SHA-256 and size).
func (st *stack) readLines(t *testing.T, job jobs.Job) []map[string]any {
	t.Helper()
	key, err := candidate.ParseKey(job.Result.Key)
	require.NoError(t, err)
	r, err := st.candidates.Open(t.Context(), key)
	require.NoError(t, err)
	require.Equal(t, job.Result.SHA256, r.Info().SHA256)
	require.Equal(t, job.Result.Size, r.Info().Size)
	content, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	var objs []map[string]any
	for line := range strings.Lines(string(content)) {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		require.NoError(t, dec.Decode(&obj))
		objs = append(objs, obj)
	}
	return objs
}

// One command of the articles export, end to end on DynamoDB Local and the
// S3 emulator, and what it costs: a claim, one query per page, one renewal
// per page but the last, one upload and the accept.
func TestExportCommandOnTheLocalStack(t *testing.T) {
	t.Parallel()
	st := deployStack(t)
	store := st.jobs(t, jobs.Config{})
	st.seed(t, "t-noise", 3) // another tenant's articles, never exported
	for _, tc := range []struct {
		tenant   string
		articles int
		spec     map[string]string
		want     map[string]int
	}{
		{"t-1", 5, map[string]string{tasks.SpecPageSize: "2"}, map[string]int{
			"dynamodb.UpdateItem": 4, // claim, renewals after pages 1 and 2, accept
			"dynamodb.Query":      3, // pages of 2, 2, 1
			"s3.PutObject":        1,
		}},
		{"t-2", 4, map[string]string{tasks.SpecPageSize: "2"}, map[string]int{
			"dynamodb.UpdateItem": 4, // claim, renewals after pages 1 and 2, accept
			"dynamodb.Query":      3, // pages of 2, 2, and an empty one: the limit was reached
			"s3.PutObject":        1,
		}},
		{"t-3", 3, nil, map[string]int{
			"dynamodb.UpdateItem": 2, // claim, accept
			"dynamodb.Query":      1, // one page of the default 100
			"s3.PutObject":        1,
		}},
	} {
		t.Run(tc.tenant, func(t *testing.T) { // sequential: the counts are per job
			want := st.seed(t, tc.tenant, tc.articles)
			jobID := "job-" + tc.tenant
			created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: jobID, IntentID: "export-" + tc.tenant, Tenant: tc.tenant, Spec: tc.spec})
			require.NoError(t, err)
			st.requests.Take()

			w := mustNew(t, worker.Config{Jobs: store, Candidates: st.candidates, Tasks: only(t, st.export(t))})
			require.NoError(t, w.Handle(invocation(t, "req-"+tc.tenant, time.Minute), commandMessage(t, created.Job, "msg-"+tc.tenant)))
			got := st.requests.Take()
			t.Logf("requests of %s (%d articles, spec %v): %v", jobID, tc.articles, tc.spec, got)
			require.Equal(t, tc.want, got)

			done, err := store.Get(t.Context(), jobID)
			require.NoError(t, err)
			require.Equal(t, jobs.StatusCompleted, done.Status)
			require.EqualValues(t, tc.articles, done.Progress)
			require.Equal(t, fmt.Sprintf("candidates/%s/g0000000001/req-%s_msg-%s.ndjson", jobID, tc.tenant, tc.tenant), done.Result.Key)
			require.Equal(t, want, st.readLines(t, done), "the result holds exactly the tenant's articles, in order")
		})
	}
}

// An export over MaxCandidateBytes on DynamoDB Local and the S3 emulator:
// the claim, the one page, and the failure with candidate_too_large, in
// one attempt; nothing is uploaded, and the command delivered again finds
// the job final and writes nothing.
func TestOversizedExportFailsAtOnceOnTheLocalStack(t *testing.T) {
	t.Parallel()
	st := deployStack(t)
	store := st.jobs(t, jobs.Config{})
	st.seed(t, "t-big", 3)
	created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-big", IntentID: "export-big", Tenant: "t-big"})
	require.NoError(t, err)
	st.requests.Take()

	const bound = 100 // less than one article's line
	small, err := candidate.New(candidate.Config{Client: st.s3, Bucket: st.outputs["CandidatesBucketName"], SpoolDir: t.TempDir(), MaxSize: bound, SpoolBudget: bound})
	require.NoError(t, err)
	w := mustNew(t, worker.Config{Jobs: store, Candidates: small, Tasks: only(t, st.export(t))})
	msg := commandMessage(t, created.Job, "msg-big")
	require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg))
	require.Equal(t, map[string]int{"dynamodb.UpdateItem": 2, "dynamodb.Query": 1}, st.requests.Take(), "claim, query, fail: no upload")
	failed, err := store.Get(t.Context(), "job-big")
	require.NoError(t, err)
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, worker.CodeCandidateTooLarge, failed.Error.Code)
	require.Contains(t, failed.Error.Message, "more than 100 bytes")
	require.EqualValues(t, 1, failed.Generation)

	require.NoError(t, w.Handle(invocation(t, "req-2", time.Minute), msg))
	again, err := store.Get(t.Context(), "job-big")
	require.NoError(t, err)
	require.Equal(t, failed, again, "the second delivery finds the job final")
}

// The running example on DynamoDB Local and the S3 emulator, with the
// store's clock injected: A claims g1 and stalls, a duplicate delivery is
// refused, B takes over g2 after A's lease ended and accepts, A's late
// accept is refused and acknowledged, and A's candidate is the orphan.
func TestRunningExampleOnTheLocalStack(t *testing.T) {
	t.Parallel()
	st := deployStack(t)
	clock := jobstest.NewClock(time.Now().UTC())
	store := st.jobs(t, jobs.Config{Now: clock.Now})
	logs := &logRecorder{}
	newWorker := func(work task.Task) *worker.Worker {
		return mustNew(t, worker.Config{Jobs: store, Candidates: st.candidates, Tasks: only(t, work), Logger: slog.New(logs)})
	}
	st.seed(t, "t-1", 3)
	created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	require.NoError(t, err)
	msg := commandMessage(t, created.Job, "msg-42")
	st.requests.Take()

	stalled, resume := make(chan struct{}), make(chan struct{})
	export := st.export(t)
	taskA := task.Func(tasks.ExportExt, func(ctx context.Context, in task.Input) (task.Output, error) {
		out, err := export.Run(ctx, in)
		close(stalled)
		<-resume
		return out, err
	})
	doneA := make(chan error, 1)
	go func() { doneA <- newWorker(taskA).Handle(invocation(t, "req-a", time.Minute), msg) }()
	<-stalled
	require.Equal(t, map[string]int{"dynamodb.UpdateItem": 1, "dynamodb.Query": 1}, st.requests.Take(), "A: claim, one page")

	err = newWorker(mustNotRun(t)).Handle(invocation(t, "req-dup", time.Minute), msg)
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)
	require.Equal(t, map[string]int{"dynamodb.UpdateItem": 1}, st.requests.Take(), "a refused claim")

	clock.Advance(2 * time.Minute)
	require.NoError(t, newWorker(st.export(t)).Handle(invocation(t, "req-b", 3*time.Minute), msg))
	require.Equal(t, map[string]int{"dynamodb.UpdateItem": 3, "dynamodb.Query": 1, "s3.PutObject": 1}, st.requests.Take(),
		"B: a takeover (the first claim's refusal reveals the ended lease), one page, the upload, the accept")
	won, err := store.Get(t.Context(), "job-42")
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, won.Status)
	require.EqualValues(t, 2, won.Generation)
	require.Equal(t, "job-42/v3", won.Outbox.ID)
	st.requests.Take() // the test's own read

	close(resume)
	require.NoError(t, <-doneA)
	require.Equal(t, map[string]int{"dynamodb.UpdateItem": 1, "s3.PutObject": 1}, st.requests.Take(), "A: its upload, its refused accept")
	final, err := store.Get(t.Context(), "job-42")
	require.NoError(t, err)
	require.Equal(t, won, final, "A's late accept changed nothing")

	orphanA := "candidates/job-42/g0000000001/req-a_msg-42.ndjson"
	require.Equal(t, orphanA, logs.one(t, "stale accept refused").Attrs["orphan_key"])
	listed, err := st.candidates.List(t.Context(), "job-42")
	require.NoError(t, err)
	var orphans []string
	for _, e := range listed {
		if e.Key.String() != final.Result.Key {
			orphans = append(orphans, e.Key.String())
		}
	}
	require.Equal(t, []string{orphanA}, orphans)
	require.Len(t, st.readLines(t, final), 3)
}

// The command goes through the commands queue and the local event source
// mapping, whose in-process invoker gives the handler a Lambda context as
// the runtime does: the attempt id is that invocation's request id and
// the SQS message id.
func TestCommandThroughTheQueueAndTheEventSourceMapping(t *testing.T) {
	t.Parallel()
	st := deployStack(t)
	store := st.jobs(t, jobs.Config{})
	want := st.seed(t, "t-1", 3)
	created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	require.NoError(t, err)
	cmd := commandMessage(t, created.Job, "unused")
	sent, err := st.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(st.outputs["CommandsQueueUrl"]), MessageBody: aws.String(cmd.Body),
		MessageGroupId: aws.String("job-42"), MessageDeduplicationId: aws.String(jobs.OutboxID("job-42", 0)),
	})
	require.NoError(t, err)

	w := mustNew(t, worker.Config{Jobs: store, Candidates: st.candidates, Tasks: only(t, st.export(t))})
	processor, err := fifo.New(fifo.Config{Handler: w.Handle, DeadLetter: &fifo.DeadLetterQueue{Client: st.sqs, QueueURL: st.outputs["CommandsDLQUrl"]}})
	require.NoError(t, err)
	batches := make(chan localesm.SQSBatchResult, 16)
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: st.sqs, Invoker: localesm.Func(processor.Process),
		QueueURL: st.outputs["CommandsQueueUrl"], ReportBatchItemFailures: true, FunctionTimeout: 60 * time.Second,
		OnBatch: func(r localesm.SQSBatchResult) { batches <- r },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	var batch localesm.SQSBatchResult
	select {
	case batch = <-batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no batch within 30 s")
	}
	cancel()
	require.NoError(t, <-ran)

	require.Equal(t, []string{aws.ToString(sent.MessageId)}, batch.Deleted, "acknowledged")
	done, err := store.Get(t.Context(), "job-42")
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, batch.RequestID+"_"+aws.ToString(sent.MessageId), done.LeaseOwner)
	require.Equal(t, want, st.readLines(t, done))
}

// The S3 emulator answers as the unit tests' bucket (s3mem.S3)
// does.
func TestS3EmulatorMeetsTheContract(t *testing.T) {
	t.Parallel()
	s3Contract(t, deployStack(t).candidates)
}
