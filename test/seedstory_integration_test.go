//go:build integration

package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// world is the deployed template (table, stream, bucket) and the stores on it.
type world struct {
	jobs       *jobs.DynamoStore
	candidates *candidate.Store
	streams    *dynamodbstreams.Client
	streamARN  string
	clock      *jobstest.Clock
	requests   *awstest.Requests
}

func setup(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	w := &world{clock: jobstest.NewClock(jobstest.Start), requests: &awstest.Requests{}}
	cfg := awstest.Config(t)
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, w.requests.Count("dynamodb."))
		// DynamoDB Local sends no CRC32 on error responses; AWS does.
		o.DisableValidateResponseChecksum = true
	})
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.APIOptions = append(o.APIOptions, w.requests.Count("s3."))
	})
	awstest.DynamoDB(t) // fails clearly if the stack's endpoints are missing
	awstest.S3(t)
	clients := localdeploy.Clients{SQS: awstest.SQS(t), DynamoDB: ddb, S3: s3c}
	deployed, err := localdeploy.Deploy(ctx, tpl, awstest.Name(t, "seed"), cfg.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	w.jobs, err = jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: deployed.Outputs["JobsTableName"], Config: jobs.Config{Now: w.clock.Now}})
	require.NoError(t, err)
	w.candidates, err = candidate.New(candidate.Config{Client: s3c, Bucket: deployed.Outputs["CandidatesBucketName"]})
	require.NoError(t, err)
	w.streams = awstest.Streams(t)
	w.streamARN = deployed.Outputs["JobsTableStreamArn"]
	w.requests.Take() // deployment requests are not the job's
	return w
}

// writeCandidate is what an attempt's task does: write its own object.
func (w *world) writeCandidate(t *testing.T, job jobs.Job, attempt, content string) candidate.Result {
	t.Helper()
	key, err := candidate.NewKey(job.ID, job.Generation, attempt, "csv")
	require.NoError(t, err)
	res, err := w.candidates.Put(context.Background(), key, strings.NewReader(content))
	require.NoError(t, err)
	return res
}

func accepted(res candidate.Result) jobs.Result {
	return jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}
}

// outboxMessages returns the outbox message (id and type) of every stream
// record whose new image carries one, in stream order.
func (w *world) outboxMessages(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	desc, err := w.streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(w.streamARN)})
	require.NoError(t, err)
	var out []string
	for _, shard := range desc.StreamDescription.Shards {
		it, err := w.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: aws.String(w.streamARN), ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		require.NoError(t, err)
		iter := it.ShardIterator
		for iter != nil {
			recs, err := w.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			require.NoError(t, err)
			for _, r := range recs.Records {
				ob, ok := r.Dynamodb.NewImage["outbox"].(*streamtypes.AttributeValueMemberM)
				if !ok {
					continue
				}
				id := ob.Value["id"].(*streamtypes.AttributeValueMemberS).Value
				typ := ob.Value["type"].(*streamtypes.AttributeValueMemberS).Value
				out = append(out, fmt.Sprintf("%s %s %s", r.EventName, id, typ))
			}
			if len(recs.Records) == 0 {
				break // an open shard: nothing more for now
			}
			iter = recs.NextShardIterator
		}
	}
	return out
}

// The running example, step by step, on DynamoDB Local and the S3 emulator.
func TestSeedStory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := setup(t)

	// export-intent-7 creates job-42 and its command; the same intent again
	// returns the same job and emits nothing.
	created, err := w.jobs.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1",
		Spec: map[string]string{"export": "articles"}})
	require.NoError(t, err)
	require.Equal(t, jobs.MessageRun, created.Job.Outbox.Type)
	again, err := w.jobs.Create(ctx, jobs.CreateRequest{IntentID: "export-intent-7", Tenant: "t-1",
		Spec: map[string]string{"export": "articles"}})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, "job-42", again.Job.ID)

	// Worker A receives cmd-42 and claims generation 1.
	a, err := w.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: w.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.EqualValues(t, 1, a.Generation)

	// A duplicate delivery while A's lease is live does not displace A.
	_, err = w.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: w.clock.Now().Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)

	// A writes its candidate, then stalls; its lease expires and the command
	// is delivered again: B takes over as generation 2.
	candA := w.writeCandidate(t, a, "attempt-a", "id,title\n1,partial export by A\n")
	w.clock.Advance(2 * time.Minute)
	b, err := w.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: w.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.EqualValues(t, 2, b.Generation)

	// B writes its own candidate: different key, A's object untouched.
	candB := w.writeCandidate(t, b, "attempt-b", "id,title\n1,full export by B\n2,second article\n")
	require.NotEqual(t, candA.Key, candB.Key)

	// B's conditional accept wins and schedules the completion event.
	done, err := w.jobs.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b",
		Generation: b.Generation, Version: b.Version, Result: accepted(candB), Progress: 2})
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, jobs.EventCompleted, done.Outbox.Type)

	// A wakes up: its late accept is refused and changes nothing.
	_, err = w.jobs.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-a",
		Generation: a.Generation, Version: a.Version, Result: accepted(candA), Progress: 1})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)
	final, err := w.jobs.Get(ctx, "job-42")
	require.NoError(t, err)
	require.Equal(t, done, final, "A's late accept changed the item")
	require.Equal(t, candB.Key.String(), final.Result.Key)

	// Exactly one completion entry exists, at the accepted version; A's
	// attempt published nothing.
	var completions []string
	for _, m := range w.outboxMessages(t) {
		if strings.HasSuffix(m, " "+jobs.EventCompleted) {
			completions = append(completions, m)
		}
	}
	require.Equal(t, []string{"MODIFY " + jobs.OutboxID("job-42", done.Version) + " " + jobs.EventCompleted}, completions)

	// A's candidate is an orphan: it exists, and nothing points to it.
	listed, err := w.candidates.List(ctx, "job-42")
	require.NoError(t, err)
	var orphans []string
	for _, e := range listed {
		if e.Key.String() != final.Result.Key {
			orphans = append(orphans, e.Key.String())
		}
	}
	require.Equal(t, []string{candA.Key.String()}, orphans)
	r, err := w.candidates.Open(ctx, candB.Key)
	require.NoError(t, err)
	defer func() { _ = r.Close() }()
	require.Equal(t, final.Result.SHA256, r.Info().SHA256, "the accepted pointer names the object's content")
}

// The happy path of one job costs one create, one claim, one candidate put
// and one accept: four requests.
func TestHappyPathRequestCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := setup(t)
	created, err := w.jobs.Create(ctx, jobs.CreateRequest{JobID: "job-7", IntentID: "export-intent-70", Tenant: "t-1"})
	require.NoError(t, err)
	claimed, err := w.jobs.Claim(ctx, jobs.ClaimRequest{JobID: created.Job.ID, AttemptID: "attempt-1", LeaseUntil: w.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	res := w.writeCandidate(t, claimed, "attempt-1", "id\n1\n")
	_, err = w.jobs.Accept(ctx, jobs.AcceptRequest{JobID: created.Job.ID, AttemptID: "attempt-1",
		Generation: claimed.Generation, Version: claimed.Version, Result: accepted(res), Progress: 1})
	require.NoError(t, err)
	require.Equal(t, map[string]int{
		"dynamodb.TransactWriteItems": 1, // create: the job and its intent marker
		"dynamodb.UpdateItem":         2, // claim, accept
		"s3.PutObject":                1, // the candidate, If-None-Match: *
	}, w.requests.Take())
}

// A stale worker cannot even reach S3's shared space: its candidate key is
// its own, and a second write to that key is refused.
func TestACandidateKeyIsWrittenOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	job := jobs.Job{ID: "job-42", Generation: 1}
	first := w.writeCandidate(t, job, "attempt-a", "first")
	key := first.Key
	_, err := w.candidates.Put(context.Background(), key, strings.NewReader("second"))
	require.True(t, errors.Is(err, candidate.ErrExists), "got %v", err)
}
