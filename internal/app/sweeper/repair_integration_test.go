//go:build integration

package sweeper_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// losingSQS is the relay's SQS client with a fault: the events whose
// deduplication ids (event ids, "job-42/v3") are in lose fail every time
// they are sent, as if SQS refused them for as long as the stream mapping
// retries. Everything else is sent.
type losingSQS struct {
	*sqs.Client
	lose map[string]bool

	mu      sync.Mutex
	refused map[string]int // event id → sends refused
}

func (l *losingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var keep []sqstypes.SendMessageBatchRequestEntry
	var refused []sqstypes.BatchResultErrorEntry
	for _, e := range in.Entries {
		if id := aws.ToString(e.MessageDeduplicationId); l.lose[id] {
			l.mu.Lock()
			l.refused[id]++
			l.mu.Unlock()
			refused = append(refused, sqstypes.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("injected: the final event is lost"), SenderFault: false,
			})
			continue
		}
		keep = append(keep, e)
	}
	out := &sqs.SendMessageBatchOutput{}
	if len(keep) > 0 {
		sent, err := l.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: in.QueueUrl, Entries: keep}, optFns...)
		if err != nil {
			return nil, err
		}
		out = sent
	}
	out.Failed = append(out.Failed, refused...)
	return out, nil
}

// projectedLog records the event ids the projector's mapping deleted,
// that is, acknowledged.
type projectedLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (p *projectedLog) add(r localesm.SQSBatchResult) {
	deleted := map[string]bool{}
	for _, id := range r.Deleted {
		deleted[id] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rec := range r.Records {
		if deleted[rec.MessageId] {
			p.seen[rec.Attributes["MessageDeduplicationId"]] = true
		}
	}
}

func (p *projectedLog) has(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// discardLog records the keys (job ids) of the stream records the relay's
// mapping gave up on and reported to the on-failure queue.
type discardLog struct {
	mu   sync.Mutex
	jobs map[string]bool
}

func (d *discardLog) add(r localesm.StreamBatchResult) {
	if !r.Discarded {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, rec := range r.Records[r.Done:] {
		if k, ok := rec.Change.Keys["job_id"]; ok {
			d.jobs[k.String()] = true
		}
	}
}

func (d *discardLog) has(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.jobs[id]
}

// eventually waits for cond, failing the test with what after a generous
// time: the mappings poll, so each step takes a few of their intervals.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 50*time.Millisecond, what)
}

// The hole, on the local stack: the Jobs table's stream drives the relay
// through pkg/localesm's stream mapping as template.yaml configures it
// (partial batch responses, bisection, MaximumRetryAttempts, the on-failure
// queue), and events.fifo drives the projector. SQS refuses a job's final
// event every time the relay sends it, so the mapping retries the batch
// MaximumRetryAttempts times and then sends only a pointer to the
// on-failure queue: the job has left the live index, nothing nudges it,
// and its view and its tenant's totals stay behind. So does a job cancelled
// while pending, whose one event is lost the same way. The sweeper finds
// both through the finished index once RepairAfter has passed and recovers
// them from their job items; the totals then equal what the jobs did, and
// the lost event, redriven later, counts nothing twice.
func TestLostFinalEventIsRepairedOnTheLocalStack(t *testing.T) {
	t.Parallel()
	awstest.DynamoDB(t) // fail clearly without the stack's endpoints
	awstest.SQS(t)
	awstest.S3(t)
	ctx := t.Context()
	cfg := awstest.Config(t)
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	only, err := testenv.Only(tpl, "JobsTable", "ViewsTable", "TotalsTable", "CommandsQueue", "CommandsDLQ",
		"EventsQueue", "EventsDLQ", "StreamFailureQueue", "CandidatesBucket")
	require.NoError(t, err)
	requests := &awstest.Requests{}
	noCRC := func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true } // DynamoDB Local sends none on errors
	ddb := dynamodb.NewFromConfig(cfg, noCRC)
	sqsc := sqs.NewFromConfig(cfg)
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	clients := localdeploy.Clients{DynamoDB: ddb, SQS: sqsc, S3: s3c}
	deployed, err := localdeploy.Deploy(ctx, only, awstest.Name(t, "repair"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	res := deployed.Resources

	clock := jobstest.NewClock(time.Now().UTC())
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: res["JobsTable"], Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	tables := projection.Tables{Views: res["ViewsTable"], Totals: res["TotalsTable"]}
	proj, err := projection.NewDynamoStore(projection.DynamoConfig{Client: ddb, Tables: tables})
	require.NoError(t, err)

	// The relay, as template.yaml maps it, with the fault.
	const tenant = "t-1"
	lose := &losingSQS{Client: sqsc, lose: map[string]bool{"job-lost/v3": true, "job-cancelled/v1": true}, refused: map[string]int{}}
	relay, err := sqsout.NewRelay(sqsout.Config{Client: lose, CommandsURL: res["CommandsQueue"], EventsURL: res["EventsQueue"]})
	require.NoError(t, err)
	ev := asMap(asMap(asMap(tpl.Resources["RelayFunction"].Properties["Events"])["JobsStream"])["Properties"])
	retries, ok := ev["MaximumRetryAttempts"].(int)
	require.True(t, ok, "RelayFunction's JobsStream has a MaximumRetryAttempts")
	require.Positive(t, retries)
	discarded := &discardLog{jobs: map[string]bool{}}
	streamMapping, err := localesm.NewStreamMapping(localesm.StreamConfig{Client: dynamodbstreams.NewFromConfig(cfg), Invoker: localesm.Func(relay.Handle),
		StreamARN: deployed.Attributes["JobsTable"]["StreamArn"], BatchSize: 100,
		ReportBatchItemFailures: true, BisectBatchOnFunctionError: true, MaximumRetryAttempts: &retries,
		OnFailure:    &localesm.OnFailureDestination{Client: sqsc, QueueURL: res["StreamFailureQueue"]},
		PollInterval: 20 * time.Millisecond, Region: cfg.Region, OnBatch: discarded.add,
	})
	require.NoError(t, err)
	// The projector on events.fifo.
	projected := &projectedLog{seen: map[string]bool{}}
	projector, err := projection.NewProjector(projection.ProjectorConfig{Store: proj, Source: store})
	require.NoError(t, err)
	projecting, err := fifo.New(fifo.Config{Handler: projector.Handle})
	require.NoError(t, err)
	sqsMapping, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: sqsc, Invoker: localesm.Func(projecting.Process),
		QueueURL: res["EventsQueue"], ReportBatchItemFailures: true, FunctionTimeout: 30 * time.Second, OnBatch: projected.add,
	})
	require.NoError(t, err)
	mappings, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, m := range []interface{ Run(context.Context) error }{streamMapping, sqsMapping} {
		wg.Go(func() {
			if err := m.Run(mappings); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("mapping: %v", err)
			}
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// lifecycle creates a job, claims it, reports progress 40 and
	// accepts it with progress 100: versions 1, 2 and 3.
	lifecycle := func(id string, beforeAccept func(renewed jobs.Job)) jobs.Job {
		t.Helper()
		_, err := store.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: tenant})
		require.NoError(t, err)
		c, err := store.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-" + id, LeaseUntil: clock.Now().Add(time.Minute)})
		require.NoError(t, err)
		r, err := store.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: c.LeaseOwner, Generation: c.Generation, Version: c.Version,
			LeaseUntil: clock.Now().Add(time.Minute), Progress: 40})
		require.NoError(t, err)
		if beforeAccept != nil {
			beforeAccept(r)
		}
		done, err := store.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: r.LeaseOwner, Generation: r.Generation, Version: r.Version,
			Progress: 100, Result: jobs.Result{Key: key(id, r.Generation, r.LeaseOwner), SHA256: strings.Repeat("ab", 32), Size: 9}})
		require.NoError(t, err)
		return done
	}

	okJob := lifecycle("job-ok", nil)
	eventually(t, "job-ok's final event projected", func() bool { return projected.has("job-ok/v3") })
	var beforeLost jobs.Job
	lostJob := lifecycle("job-lost", func(renewed jobs.Job) {
		beforeLost = renewed
		eventually(t, "job-lost's v2 projected", func() bool { return projected.has("job-lost/v2") })
	})
	// job-cancelled's records must not join the batch the mapping retries
	// for job-lost: discarded with it, its event would never be sent.
	eventually(t, "the relay's mapping gave up on job-lost's final event", func() bool { return discarded.has("job-lost") })
	clock.Advance(time.Millisecond)
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-cancelled", IntentID: "intent-job-cancelled", Tenant: tenant})
	require.NoError(t, err)
	cancelled, err := store.Cancel(ctx, jobs.CancelRequest{JobID: "job-cancelled"})
	require.NoError(t, err)
	eventually(t, "the relay's mapping gave up on job-cancelled's event", func() bool { return discarded.has("job-cancelled") })
	lose.mu.Lock()
	refused := maps.Clone(lose.refused)
	lose.mu.Unlock() // before any require: the mappings' sends take the lock, and the cleanup waits for them
	require.Equal(t, map[string]int{"job-lost/v3": retries + 1, "job-cancelled/v1": retries + 1}, refused,
		"each lost event was sent once and retried MaximumRetryAttempts times")
	pointer, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(res["StreamFailureQueue"]),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.NotEmpty(t, pointer.Messages, "the on-failure queue has the pointer, not the event")
	require.NotContains(t, aws.ToString(pointer.Messages[0].Body), `"job.completed"`)

	// The hole: the projection is behind, and nothing else will move it.
	view := func(id string) (projection.View, error) { return proj.View(ctx, id) }
	lostView, err := view("job-lost")
	require.NoError(t, err)
	require.Equal(t, projection.ViewOfJob(&beforeLost), lostView, "job-lost's view is stuck at v2, running")
	_, err = view("job-cancelled")
	require.ErrorIs(t, err, projection.ErrNotFound, "job-cancelled never had a view")
	totals, err := proj.Totals(ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: tenant, Processed: 140, Completed: 1}, totals, "job-lost's final delta is missing")

	// The sweeper, with its own counted clients, once RepairAfter passed.
	sweepDB := dynamodb.NewFromConfig(cfg, noCRC, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, requests.Count("dynamodb.")) })
	sweepS3 := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.APIOptions = append(o.APIOptions, requests.Count("s3."))
	})
	sweepCandidates, err := candidate.New(candidate.Config{Client: sweepS3, Bucket: res["CandidatesBucket"], SpoolDir: t.TempDir()})
	require.NoError(t, err)
	sweepJobs, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: sweepDB, Table: res["JobsTable"], Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	sweepProjection, err := projection.NewDynamoStore(projection.DynamoConfig{Client: sweepDB, Tables: tables})
	require.NoError(t, err)
	cursors := s3Cursors(t, sweepS3, res["CandidatesBucket"])
	s, err := sweeper.New(sweeper.Config{
		Jobs:          sweepJobs,
		Candidates:    sweepCandidates,
		Cursor:        cursors[sweeper.CursorKey],
		Projection:    sweepProjection,
		RepairCursor:  cursors[sweeper.RepairCursorKey],
		RecheckCursor: cursors[sweeper.RecheckCursorKey],
		Now:           clock.Now,
		Logger:        slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	clock.Advance(sweeper.DefaultRepairAfter + time.Millisecond)
	requests.Take()

	dry, err := s.Run(ctx, sweeper.Options{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 3, dry.Finished, "job-ok, job-lost and job-cancelled")
	require.Equal(t, 2, dry.WouldRepair)
	lostView, err = view("job-lost")
	require.NoError(t, err)
	require.Equal(t, projection.ViewOfJob(&beforeLost), lostView, "a dry run repairs nothing")
	requests.Take()

	r, err := s.Run(ctx, sweeper.Options{})
	require.NoError(t, err)
	cost := requests.Take()
	require.Equal(t, 3, r.Finished)
	require.Equal(t, 2, r.Repaired)
	require.Zero(t, r.Errors)
	for _, j := range []jobs.Job{okJob, lostJob, cancelled} {
		v, err := view(j.ID)
		require.NoError(t, err)
		require.Equal(t, projection.ViewOfJob(&j), v, j.ID)
		c, err := proj.Cursor(ctx, tenant, j.ID)
		require.NoError(t, err)
		require.Equal(t, projection.Cursor{Version: j.Version, Progress: j.Progress, Status: j.Status}, c, j.ID)
	}
	totals, err = proj.Totals(ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: tenant, Processed: 200, Completed: 2}, totals,
		"processed is the jobs' progress, completed the jobs completed")
	t.Logf("repair run requests: %v", cost)
	require.Equal(t, 3*jobs.LiveShards, cost["dynamodb.Query"],
		"the live index, and the finished index for the check and for the recheck, one page per shard")
	require.Equal(t, 1, cost["dynamodb.BatchGetItem"], "the finished jobs, read together")
	require.Equal(t, 3*2+2, cost["dynamodb.GetItem"], "each job's view and cursor, and each recovery's cursor")
	require.Equal(t, 2, cost["dynamodb.TransactWriteItems"], "one per recovery")
	require.Equal(t, 2, cost["s3.PutObject"], "the repair cursor, and the recheck's, moved to its bound")

	// The lost event is redriven after all: a duplicate, counted nothing.
	msgs, err := outbox.FromTransition(&lostJob, &beforeLost)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	_, err = sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(res["EventsQueue"]), MessageBody: aws.String(string(msgs[0].Body)),
		MessageGroupId: aws.String(msgs[0].GroupID), MessageDeduplicationId: aws.String(msgs[0].DeduplicationID)})
	require.NoError(t, err)
	eventually(t, "the redriven event acknowledged", func() bool { return projected.has("job-lost/v3") })
	again, err := proj.Totals(ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, totals, again, "nothing counted twice")

	// The next run has nothing left to check.
	clock.Advance(time.Minute)
	r, err = s.Run(ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, r.Finished+r.Repaired)
	require.Equal(t, jobs.FinishedBound(clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor)
}

// One final job whose item DynamoDB holds but FromItem refuses (its
// version is not a number, as if written by hand): on DynamoDB Local the
// finished index lists it and BatchGetItem returns it, and the run neither
// fails nor stops there. The jobs around it are repaired, it is counted
// and left alone, the repair cursor passes it, and its candidates, which
// would be deleted were it readable, are kept.
func TestAnUndecodableJobItemIsPassedOnTheLocalStack(t *testing.T) {
	t.Parallel()
	awstest.DynamoDB(t) // fail clearly without the stack's endpoints
	awstest.S3(t)
	ctx := t.Context()
	cfg := awstest.Config(t)
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	only, err := testenv.Only(tpl, "JobsTable", "ViewsTable", "TotalsTable", "CandidatesBucket")
	require.NoError(t, err)
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	clients := localdeploy.Clients{DynamoDB: ddb, S3: s3c}
	deployed, err := localdeploy.Deploy(ctx, only, awstest.Name(t, "undecodable"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	res := deployed.Resources

	clock := jobstest.NewClock(time.Now().UTC())
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: res["JobsTable"], Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	proj, err := projection.NewDynamoStore(projection.DynamoConfig{Client: ddb, Tables: projection.Tables{Views: res["ViewsTable"], Totals: res["TotalsTable"]}})
	require.NoError(t, err)
	cands, err := candidate.New(candidate.Config{Client: s3c, Bucket: res["CandidatesBucket"], SpoolDir: t.TempDir()})
	require.NoError(t, err)
	var kept []string
	for _, id := range []string{"job-1", "job-bad", "job-3"} {
		_, err := store.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
		require.NoError(t, err)
		c, err := store.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
		require.NoError(t, err)
		var out candidate.Result
		for _, attempt := range []string{"attempt-z", "attempt-a"} { // the result last
			k, err := candidate.NewKey(id, c.Generation, attempt, "csv")
			require.NoError(t, err)
			out, err = cands.Put(ctx, k, strings.NewReader("id,title\n"))
			require.NoError(t, err)
			if id == "job-bad" {
				kept = append(kept, k.String())
			}
		}
		_, err = store.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: c.Generation, Version: c.Version,
			Progress: 100, Result: jobs.Result{Key: key(id, c.Generation, "attempt-a"), SHA256: out.SHA256, Size: out.Size}})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(res["JobsTable"]), Key: map[string]dbtypes.AttributeValue{"job_id": &dbtypes.AttributeValueMemberS{Value: "job-bad"}},
		UpdateExpression:          aws.String("SET #v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "version"},
		ExpressionAttributeValues: map[string]dbtypes.AttributeValue{":v": &dbtypes.AttributeValueMemberS{Value: "three"}},
	})
	require.NoError(t, err)
	_, err = store.Get(ctx, "job-bad")
	require.ErrorContains(t, err, "version", "the item no longer decodes")

	cursors := s3Cursors(t, s3c, res["CandidatesBucket"])
	s, err := sweeper.New(sweeper.Config{
		Jobs: store, Candidates: cands, Projection: proj, Now: clock.Now,
		Cursor:       cursors[sweeper.CursorKey],
		RepairCursor: cursors[sweeper.RepairCursorKey],
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	clock.Advance(sweeper.DefaultGrace + time.Minute) // past RepairAfter, and the grace by the emulator's wall clock
	r, err := s.Run(ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, r.Errors)
	require.Equal(t, 3, r.Finished)
	require.Equal(t, 2, r.Repaired, "job-1 and job-3")
	require.Equal(t, 2, r.Undecodable, "job-bad, read for the repair and for its candidates")
	require.Equal(t, jobs.FinishedBound(clock.Now().Add(-sweeper.DefaultRepairAfter)), r.RepairCursor, "past job-bad")
	require.Equal(t, 2, r.Deleted, "the other jobs' attempt-z candidates")
	for _, k := range kept {
		_, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(res["CandidatesBucket"]), Key: aws.String(k)})
		require.NoError(t, err, "%s is kept", k)
	}
	totals, err := proj.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 200, Completed: 2}, totals)

	clock.Advance(5 * time.Minute)
	r, err = s.Run(ctx, sweeper.Options{})
	require.NoError(t, err)
	require.Zero(t, r.Finished, "the cursor passed job-bad")
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// s3Cursors are the sweep's, the repair's and the recheck's cursors in
// bucket, by key.
func s3Cursors(t *testing.T, client sweeper.CursorAPI, bucket string) map[string]*sweeper.S3Cursor {
	t.Helper()
	cursors := map[string]*sweeper.S3Cursor{}
	for _, key := range []string{sweeper.CursorKey, sweeper.RepairCursorKey, sweeper.RecheckCursorKey} {
		c, err := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: client, Bucket: bucket, Key: key})
		require.NoError(t, err)
		cursors[key] = c
	}
	return cursors
}
