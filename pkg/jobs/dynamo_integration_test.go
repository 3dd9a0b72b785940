//go:build integration

package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

type dynamoBundle struct {
	client  *dynamodb.Client
	table   string
	counter *awstest.Requests
	faults  *awstest.LostResponses
}

// setupDynamo creates a table of jobs.Table's shape (its key, stream, live
// and finished indexes; template.yaml's JobsTable is held to the same
// shape) with TTL on jobs.AttrExpiresAt, unique to the test, and a client
// that counts requests and can lose responses.
func setupDynamo(t *testing.T) *dynamoBundle {
	t.Helper()
	b := &dynamoBundle{counter: &awstest.Requests{}, faults: &awstest.LostResponses{}}
	b.client = awstest.DynamoDB(t, func(o *dynamodb.Options) { // fails the test unless an endpoint is configured
		o.APIOptions = append(o.APIOptions, b.counter.Count(""), b.faults.Install)
		// DynamoDB Local sends no X-Amz-Crc32 with error responses, and the
		// SDK logs a warning for each refused condition.
		o.DisableValidateResponseChecksum = true
	})
	b.table = awstest.Table(t, b.client, jobs.Table(awstest.Name(t, "jobs")), jobs.AttrExpiresAt)
	desc, err := b.client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
	require.NoError(t, err)
	var indexes []string
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		indexes = append(indexes, aws.ToString(g.IndexName))
	}
	require.ElementsMatch(t, []string{jobs.LiveIndex, jobs.FinishedIndex}, indexes)
	b.counter.Take()
	return b
}

func TestDynamoStoreConformance(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	jobstest.Run(t, func(t *testing.T, cfg jobs.Config) jobs.Store {
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: cfg})
		require.NoError(t, err)
		return ttlStore{DynamoStore: store, b: b}
	})
}

// ttlStore is the DynamoDB store with the suite's jobstest.ItemDeleter:
// DynamoDB Local deletes no expired item, so the suite deletes those it
// wants gone, as DynamoDB's TTL would.
type ttlStore struct {
	*jobs.DynamoStore
	b *dynamoBundle
}

func (s ttlStore) DeleteItem(ctx context.Context, key string) error {
	_, err := s.b.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.b.table),
		Key:       map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: key}},
	})
	return err
}

// TestDynamoLostResponsesAreRecognised applies each fenced write, loses its
// response, and lets the SDK retry: the retry fails its condition, and the
// store must recognise its own earlier success instead of reporting it stale.
func TestDynamoLostResponsesAreRecognised(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	ctx := t.Context()
	id := "job-42-" + strings.ToLower(t.Name()[len(t.Name())-8:])

	// Create: the retried transaction either replays idempotently (the SDK
	// fills in ClientRequestToken itself, and the retry reuses it) or finds
	// the intent marker: one job either way.
	b.faults.Arm("TransactWriteItems")
	created, err := store.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "export-intent-7", Tenant: "t-1"})
	require.NoError(t, err)
	require.Equal(t, int32(1), b.faults.Fired())
	require.Equal(t, id, created.Job.ID)
	t.Logf("create after a lost response: existing=%v, requests %v", created.Existing, b.counter.Take())
	got, err := store.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, created.Job, got)

	lost := func(op string, call func() (jobs.Job, error)) jobs.Job {
		t.Helper()
		before, err := store.Get(ctx, id)
		require.NoError(t, err)
		b.counter.Take()
		fired := b.faults.Fired()
		b.faults.Arm("UpdateItem")
		j, err := call()
		require.NoError(t, err, "%s after a lost response", op)
		require.Equal(t, fired+1, b.faults.Fired(), "the fault fired")
		require.Equal(t, map[string]int{"UpdateItem": 2}, b.counter.Take(), "%s: the applied try and the SDK's retry", op)
		require.Equal(t, before.Version+1, j.Version, "%s applied exactly once", op)
		after, err := store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, j, after)
		return j
	}
	claimed := lost("claim", func() (jobs.Job, error) {
		// With the tenant in the condition, as the worker claims: the retry
		// still recognises its own claim.
		return store.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute), Tenant: "t-1"})
	})
	require.Equal(t, int64(1), claimed.Generation)
	renewed := lost("renew", func() (jobs.Job, error) {
		return store.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: claimed.Version,
			LeaseUntil: clock.Now().Add(2 * time.Minute), Progress: 60})
	})
	res := jobs.Result{Key: "candidates/" + id + "/g0000000001/attempt-a.json", SHA256: strings.Repeat("0f", 32), Size: 99}
	accepted := lost("accept", func() (jobs.Job, error) {
		return store.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-a", Generation: 1, Version: renewed.Version,
			Result: res, Progress: 120})
	})
	require.Equal(t, jobs.StatusCompleted, accepted.Status)
	require.Equal(t, res, accepted.Result)

	// A stale write whose response is lost stays stale: the retry is not
	// mistaken for success.
	b.faults.Arm("UpdateItem")
	_, err = store.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "attempt-z", Generation: 1, Version: renewed.Version,
		Result: jobs.Result{Key: "candidates/" + id + "/g0000000001/attempt-z.json", SHA256: res.SHA256}, Progress: 1})
	require.ErrorIs(t, err, jobs.ErrFinal)

	// Fail, on a second job.
	id2 := id + "-2"
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: id2, IntentID: "export-intent-8", Tenant: "t-1"})
	require.NoError(t, err)
	id = id2
	c2 := lost("claim (takeover path unused)", func() (jobs.Job, error) {
		return store.Claim(ctx, jobs.ClaimRequest{JobID: id2, AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
	})
	failed := lost("fail", func() (jobs.Job, error) {
		return store.Fail(ctx, jobs.FailRequest{JobID: id2, AttemptID: "attempt-b", Generation: 1, Version: c2.Version,
			Failure: jobs.Failure{Code: "source_gone", Message: "410"}})
	})
	require.Equal(t, jobs.StatusFailed, failed.Status)

	// Nudge, on a third job (pending, then running on an ended lease).
	id3 := id2 + "-3"
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: id3, IntentID: "export-intent-9", Tenant: "t-1"})
	require.NoError(t, err)
	id = id3
	n := lost("nudge (pending)", func() (jobs.Job, error) {
		return store.Nudge(ctx, jobs.NudgeRequest{JobID: id3, Reason: "pending for 20m"})
	})
	require.Equal(t, jobs.MessageRun, n.Outbox.Type)
	c3, err := store.Claim(ctx, jobs.ClaimRequest{JobID: id3, AttemptID: "attempt-c", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	n = lost("nudge (running, lease ended)", func() (jobs.Job, error) {
		return store.Nudge(ctx, jobs.NudgeRequest{JobID: id3, Generation: 1, Version: c3.Version, Reason: "lease ended"})
	})
	require.Equal(t, jobs.StatusRunning, n.Status)
	require.Equal(t, int64(1), n.Generation)
}

// TestDynamoRequestCounts measures what each operation costs in requests.
func TestDynamoRequestCounts(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	ctx := t.Context()
	type row struct {
		op   string
		want map[string]int
	}
	var rows []row
	measure := func(op string, want map[string]int, call func() error) {
		t.Helper()
		b.counter.Take()
		require.NoError(t, call(), op)
		got := b.counter.Take()
		require.Equal(t, want, got, op)
		rows = append(rows, row{op, got})
	}
	expect := func(sentinel error) func(error) error {
		return func(err error) error {
			if errors.Is(err, sentinel) {
				return nil
			}
			return fmt.Errorf("want %w, got %w", sentinel, err)
		}
	}
	create := jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"}
	var a, bj jobs.Job
	measure("create", map[string]int{"TransactWriteItems": 1}, func() error { _, err := store.Create(ctx, create); return err })
	measure("create, same intent again", map[string]int{"TransactWriteItems": 1, "GetItem": 1}, func() error {
		r, err := store.Create(ctx, create)
		if err == nil && !r.Existing {
			return errors.New("not recognised as existing")
		}
		return err
	})
	measure("claim (pending)", map[string]int{"UpdateItem": 1}, func() error {
		a, err = store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
		return err
	})
	measure("claim, another tenant", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-x", LeaseUntil: clock.Now().Add(time.Minute), Tenant: "t-2"})
		return expect(jobs.ErrNotFound)(err)
	})
	measure("claim, lease held", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-x", LeaseUntil: clock.Now().Add(time.Minute)})
		return expect(jobs.ErrLeaseHeld)(err)
	})
	measure("renew", map[string]int{"UpdateItem": 1}, func() error {
		a, err = store.Renew(ctx, jobs.RenewRequest{JobID: "job-42", AttemptID: "attempt-a", Generation: 1, Version: a.Version,
			LeaseUntil: clock.Now().Add(time.Minute), Progress: 10})
		return err
	})
	clock.Advance(2 * time.Minute)
	measure("claim (takeover)", map[string]int{"UpdateItem": 2}, func() error {
		bj, err = store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
		return err
	})
	measure("accept", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: bj.Generation, Version: bj.Version,
			Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: strings.Repeat("a", 64)}})
		return err
	})
	measure("accept, stale generation", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-a", Generation: 1, Version: a.Version,
			Result: jobs.Result{Key: "candidates/job-42/g0000000001/attempt-a.json", SHA256: strings.Repeat("a", 64)}})
		return expect(jobs.ErrStaleGeneration)(err)
	})
	measure("get", map[string]int{"GetItem": 1}, func() error { _, err := store.Get(ctx, "job-42"); return err })
	measure("claim, missing job", map[string]int{"UpdateItem": 1, "GetItem": 1}, func() error {
		_, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-missing", AttemptID: "a", LeaseUntil: clock.Now().Add(time.Minute)})
		return expect(jobs.ErrNotFound)(err)
	})
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-43", IntentID: "export-intent-8", Tenant: "t-1"})
	require.NoError(t, err)
	measure("cancel (pending)", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Cancel(ctx, jobs.CancelRequest{JobID: "job-43"})
		return err
	})
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-44", IntentID: "export-intent-9", Tenant: "t-1"})
	require.NoError(t, err)
	_, err = store.Claim(ctx, jobs.ClaimRequest{JobID: "job-44", AttemptID: "attempt-c", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	measure("cancel (running)", map[string]int{"UpdateItem": 2}, func() error {
		_, err := store.Cancel(ctx, jobs.CancelRequest{JobID: "job-44"})
		return err
	})
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-45", IntentID: "export-intent-10", Tenant: "t-1"})
	require.NoError(t, err)
	measure("nudge (pending)", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Nudge(ctx, jobs.NudgeRequest{JobID: "job-45", Reason: "stuck"})
		return err
	})
	c, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-45", AttemptID: "attempt-e", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	measure("nudge, lease held", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Nudge(ctx, jobs.NudgeRequest{JobID: "job-45", Generation: 1, Version: c.Version})
		return expect(jobs.ErrLeaseHeld)(err)
	})
	clock.Advance(2 * time.Minute)
	measure("nudge (running, lease ended)", map[string]int{"UpdateItem": 1}, func() error {
		_, err := store.Nudge(ctx, jobs.NudgeRequest{JobID: "job-45", Generation: 1, Version: c.Version})
		return err
	})
	measure("live (16 shards, one page each)", map[string]int{"Query": jobs.LiveShards}, func() error {
		ids, err := store.Live(ctx, clock.Now().Add(time.Millisecond), 100)
		if err == nil && len(ids) != 1 {
			return fmt.Errorf("live jobs %v, want job-45 only", ids)
		}
		return err
	})
	measure("get many (5 ids, one missing)", map[string]int{"BatchGetItem": 1}, func() error {
		got, err := store.GetMany(ctx, []string{"job-42", "job-43", "job-44", "job-45", "job-missing"})
		if err == nil && len(got) != 4 {
			return fmt.Errorf("got %d jobs, want 4", len(got))
		}
		return err
	})
	for _, r := range rows {
		t.Logf("%-32s %v", r.op, r.want)
	}
}

// TestDynamoLiveIndexHoldsLiveJobsOnly reads the live index itself: a live
// job's item is in it under its shard, a final one's is not.
func TestDynamoLiveIndexHoldsLiveJobsOnly(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	ctx := t.Context()
	for i := range 40 {
		_, err := store.Create(ctx, jobs.CreateRequest{JobID: fmt.Sprintf("job-%d", i), IntentID: fmt.Sprintf("intent-%d", i), Tenant: "t-1"})
		require.NoError(t, err)
		clock.Advance(time.Millisecond)
	}
	for i := range 10 {
		_, err := store.Cancel(ctx, jobs.CancelRequest{JobID: fmt.Sprintf("job-%d", i)})
		require.NoError(t, err)
	}
	indexed := map[string]string{}
	pages := dynamodb.NewScanPaginator(b.client, &dynamodb.ScanInput{TableName: aws.String(b.table), IndexName: aws.String(jobs.LiveIndex)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		require.NoError(t, err)
		for _, item := range page.Items {
			indexed[item["job_id"].(*types.AttributeValueMemberS).Value] = item["live_shard"].(*types.AttributeValueMemberS).Value
		}
	}
	want := map[string]string{}
	for i := 10; i < 40; i++ {
		id := fmt.Sprintf("job-%d", i)
		want[id] = jobs.LiveShard(id)
	}
	require.Equal(t, want, indexed, "the index holds the live jobs, each under its shard; no intent marker, no final job")
	shards := map[string]bool{}
	for _, s := range indexed {
		shards[s] = true
	}
	require.Greater(t, len(shards), 8, "30 jobs spread over the shards")
	ids, err := store.Live(ctx, clock.Now(), 100)
	require.NoError(t, err)
	require.Len(t, ids, 30)
	require.Equal(t, "job-10", ids[0], "oldest first across shards")
	require.Equal(t, "job-39", ids[29])
}

// TestDynamoRunningExampleStream follows the running example (Example) on the
// table's stream: the command is emitted once, every transition emits one
// message with the next version, and the duplicate create and worker A's
// late accept leave no record at all.
func TestDynamoRunningExampleStream(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	ctx := t.Context()

	create := jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"}
	_, err = store.Create(ctx, create)
	require.NoError(t, err)
	again, err := store.Create(ctx, create)
	require.NoError(t, err)
	require.True(t, again.Existing)
	a, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	bj, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	sha := strings.Repeat("5e", 32)
	_, err = store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: 2, Version: bj.Version,
		Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: sha}, Progress: 120})
	require.NoError(t, err)
	_, err = store.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-a", Generation: 1, Version: a.Version,
		Result: jobs.Result{Key: "candidates/job-42/g0000000001/attempt-a.json", SHA256: sha}, Progress: 100})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration)

	records := streamRecords(t, b)
	var outbox []string
	var events []string
	for _, r := range records {
		key := r.Dynamodb.Keys["job_id"].(*streamtypes.AttributeValueMemberS).Value
		events = append(events, string(r.EventName)+" "+key)
		if key != "job-42" {
			continue
		}
		ob := r.Dynamodb.NewImage["outbox"].(*streamtypes.AttributeValueMemberM).Value
		outbox = append(outbox, ob["id"].(*streamtypes.AttributeValueMemberS).Value+" "+ob["type"].(*streamtypes.AttributeValueMemberS).Value)
	}
	require.ElementsMatch(t, []string{
		"INSERT job-42", "INSERT " + jobs.IntentKey("t-1", "export-intent-7"),
		"MODIFY job-42", "MODIFY job-42", "MODIFY job-42",
	}, events)
	require.Equal(t, []string{
		"job-42/v0 job.run", "job-42/v1 job.started", "job-42/v2 job.started", "job-42/v3 job.completed",
	}, outbox)
}

// streamRecords reads every record of the table's stream so far.
func streamRecords(t *testing.T, b *dynamoBundle) []streamtypes.Record {
	t.Helper()
	ctx := t.Context()
	streams := awstest.Streams(t)
	desc, err := b.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
	require.NoError(t, err)
	arn := desc.Table.LatestStreamArn
	require.NotNil(t, arn)
	sd, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	require.NoError(t, err)
	var records []streamtypes.Record
	for _, shard := range sd.StreamDescription.Shards {
		it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: arn, ShardId: shard.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		require.NoError(t, err)
		iter := it.ShardIterator
		for iter != nil {
			out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			require.NoError(t, err)
			if len(out.Records) == 0 {
				break
			}
			records = append(records, out.Records...)
			iter = out.NextShardIterator
		}
	}
	return records
}

// TestDynamoFinishedIndexHoldsFinalJobsOnly reads the finished index
// itself: a final job's item is in it under its shard and the key of its
// final transition, a live one's is not, nor is an intent marker.
func TestDynamoFinishedIndexHoldsFinalJobsOnly(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	ctx := t.Context()
	for i := range 40 {
		_, err := store.Create(ctx, jobs.CreateRequest{JobID: fmt.Sprintf("job-%d", i), IntentID: fmt.Sprintf("intent-%d", i), Tenant: "t-1"})
		require.NoError(t, err)
	}
	want := map[string]string{}
	for i := range 30 {
		id := fmt.Sprintf("job-%d", i)
		clock.Advance(time.Millisecond)
		_, err := store.Cancel(ctx, jobs.CancelRequest{JobID: id})
		require.NoError(t, err)
		want[id] = jobs.LiveShard(id) + " " + jobs.FinishedKey(id, clock.Now())
	}
	indexed := map[string]string{}
	pages := dynamodb.NewScanPaginator(b.client, &dynamodb.ScanInput{TableName: aws.String(b.table), IndexName: aws.String(jobs.FinishedIndex)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		require.NoError(t, err)
		for _, item := range page.Items {
			indexed[item["job_id"].(*types.AttributeValueMemberS).Value] = item["finished_shard"].(*types.AttributeValueMemberS).Value +
				" " + item["finished_key"].(*types.AttributeValueMemberS).Value
		}
	}
	require.Equal(t, want, indexed, "the index holds the final jobs, each under its shard and final transition; no live job, no intent marker")

	// Listed in key order across the shards, page by page from a cursor.
	b.counter.Take()
	var listed []string
	after := ""
	for {
		page, err := store.Finished(ctx, after, clock.Now().Add(time.Millisecond), 7)
		require.NoError(t, err)
		for _, f := range page {
			listed = append(listed, f.ID)
			after = f.Key
		}
		if len(page) < 7 {
			break
		}
	}
	var ordered []string
	for i := range 30 {
		ordered = append(ordered, fmt.Sprintf("job-%d", i))
	}
	require.Equal(t, ordered, listed, "oldest first across shards, each once")
	require.Equal(t, map[string]int{"Query": 5 * jobs.LiveShards}, b.counter.Take(), "five listings, one page per shard each")
}
