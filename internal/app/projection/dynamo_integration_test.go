//go:build integration

package projection_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// interposer runs a function once, right after the next GetItem the client
// sends has been answered: between a read and the write that depends on it.
type interposer struct {
	mu sync.Mutex
	fn func()
}

func (i *interposer) arm(fn func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.fn = fn
}

func (i *interposer) install(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("projectiontest.interpose",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if _, ok := in.Parameters.(*dynamodb.GetItemInput); ok && err == nil {
				i.mu.Lock()
				fn := i.fn
				i.fn = nil
				i.mu.Unlock()
				if fn != nil {
					fn()
				}
			}
			return out, md, err
		}), middleware.After)
}

type dynamoBundle struct {
	client    *dynamodb.Client
	tables    projection.Tables
	counter   *awstest.Requests
	faults    *awstest.LostResponses
	interpose *interposer
}

// setupDynamo creates a Views and a Totals table with the key schemas
// documented on projection.Tables, unique to the test, and a client that
// counts requests and can lose responses.
func setupDynamo(t *testing.T) *dynamoBundle {
	t.Helper()
	awstest.DynamoDB(t) // fails the test unless an endpoint is configured
	b := &dynamoBundle{counter: &awstest.Requests{}, faults: &awstest.LostResponses{}, interpose: &interposer{}}
	b.client = dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, b.counter.Count(""), b.faults.Install, b.interpose.install)
		// DynamoDB Local sends no X-Amz-Crc32 with error responses, and the
		// SDK logs a warning for each refused condition.
		o.DisableValidateResponseChecksum = true
	})
	b.tables = projection.Tables{Views: awstest.Name(t, "views"), Totals: awstest.Name(t, "totals")}
	createTable(t, b.client, b.tables.Views, key{"job_id", types.KeyTypeHash})
	createTable(t, b.client, b.tables.Totals, key{"tenant", types.KeyTypeHash}, key{"key", types.KeyTypeRange})
	b.counter.Take()
	return b
}

type key struct {
	name string
	kind types.KeyType
}

// createTable creates a pay-per-request table whose keys are strings, and
// deletes it when the test ends.
func createTable(t *testing.T, client *dynamodb.Client, name string, keys ...key) {
	t.Helper()
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	for _, k := range keys {
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(k.name), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: k.kind})
	}
	_, err := client.CreateTable(t.Context(), in)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		require.NoError(t, err)
	})
	require.NoError(t, dynamodb.NewTableExistsWaiter(client).Wait(t.Context(),
		&dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second))
}

func TestDynamoStoreConformance(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables})
		require.NoError(t, err)
		return store
	})
}

// TestDynamoLostResponseCountsOnce applies an event, loses the response of
// its transaction and lets the SDK retry it: the retry replays (same
// client request token) or finds the cursor moved, and the delta is counted
// once either way.
func TestDynamoLostResponseCountsOnce(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables})
	require.NoError(t, err)
	ctx := t.Context()
	evs := projectiontest.Lifecycle("job-42", "t-lost")
	for i := 1; i <= 2; i++ { // v2 and v3, which add 10 and 20 (v1 adds nothing: no transaction)
		b.faults.Arm("TransactWriteItems")
		res, err := store.Apply(ctx, projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
		require.Contains(t, []projection.Outcome{projection.Applied, projection.Duplicate}, res.Outcome)
		t.Logf("%s after a lost response: %v, requests %v", evs[i].EventID, res.Outcome, b.counter.Take())
	}
	require.Equal(t, int32(2), b.faults.Fired())
	got, err := store.Totals(ctx, "t-lost")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-lost", Processed: 30}, got, "10 and 20, each once")
}

// TestDynamoRecoverRacingAnApply applies the next event between the
// recovery's read of the cursor and its transaction. The transaction is
// conditioned on the cursor it read, so it is refused, and the recovery
// reads again and counts from where the event left the cursor; without the
// condition it would count the event's delta a second time. (The memory
// store recovers under one lock: nothing can come between.)
func TestDynamoRecoverRacingAnApply(t *testing.T) {
	t.Parallel()
	b, store, other := setupRace(t)
	ctx := t.Context()
	evs := projectiontest.Lifecycle("job-42", "t-race")
	for i := range 2 {
		_, err := store.Apply(ctx, projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
	}
	b.counter.Take()
	b.interpose.arm(func() {
		res, err := other.Apply(ctx, projection.ViewOfEvent(&evs[2]), evs[2].Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Applied, res.Outcome)
	})
	r, err := store.Recover(ctx, projection.ViewOfEvent(&evs[4]))
	require.NoError(t, err)
	require.Equal(t, projection.Recovery{
		From:      projection.Cursor{Version: 3, Progress: 30, Status: jobs.StatusRunning},
		To:        projection.Cursor{Version: 5, Progress: 25, Status: jobs.StatusRunning},
		Processed: -5, ViewUpdated: true,
	}, r)
	got, err := store.Totals(ctx, "t-race")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-race", Processed: 25}, got, "each version counted once")
	requests := b.counter.Take()
	delete(requests, "BatchGetItem") // the Totals read above
	require.Equal(t, map[string]int{"GetItem": 2, "TransactWriteItems": 2}, requests,
		"the refused transaction and a second round")
}

// TestDynamoRequestCounts runs real job transitions on a Jobs table, turns
// them into events as the relay does, and measures what the projector costs
// per event.
func TestDynamoRequestCounts(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	jobsTable := awstest.Name(t, "jobs")
	createTable(t, b.client, jobsTable, key{"job_id", types.KeyTypeHash})
	clock := jobstest.NewClock(jobstest.Start)
	source, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: jobsTable, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	lease := func() time.Time { return clock.Now().Add(time.Minute) }

	var published []outbox.Message
	publish := func(prev, cur jobs.Job) {
		t.Helper()
		msgs, err := outbox.FromTransition(&cur, &prev)
		require.NoError(t, err)
		for _, m := range msgs {
			if m.Kind == outbox.KindEvent {
				published = append(published, m)
			}
		}
	}
	// job-42, the running example: A claims, B takes over and completes.
	created, err := source.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
	require.NoError(t, err)
	a, err := source.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: lease()})
	require.NoError(t, err)
	publish(created.Job, a)
	clock.Advance(2 * time.Minute)
	bj, err := source.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: lease()})
	require.NoError(t, err)
	publish(a, bj)
	sha := "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"
	done42, err := source.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "attempt-b", Generation: bj.Generation,
		Version: bj.Version, Result: jobs.Result{Key: "candidates/job-42/g0000000002/attempt-b.json", SHA256: sha, Size: 2048}, Progress: 120})
	require.NoError(t, err)
	publish(bj, done42)
	// job-43: claimed, 50 items, completed at 80.
	created, err = source.Create(ctx, jobs.CreateRequest{JobID: "job-43", IntentID: "export-intent-8", Tenant: "t-1"})
	require.NoError(t, err)
	c, err := source.Claim(ctx, jobs.ClaimRequest{JobID: "job-43", AttemptID: "attempt-c", LeaseUntil: lease()})
	require.NoError(t, err)
	publish(created.Job, c)
	r, err := source.Renew(ctx, jobs.RenewRequest{JobID: "job-43", AttemptID: "attempt-c", Generation: 1, Version: c.Version,
		LeaseUntil: lease(), Progress: 50})
	require.NoError(t, err)
	publish(c, r)
	done43, err := source.Accept(ctx, jobs.AcceptRequest{JobID: "job-43", AttemptID: "attempt-c", Generation: 1, Version: r.Version,
		Result: jobs.Result{Key: "candidates/job-43/g0000000001/attempt-c.json", SHA256: sha, Size: 512}, Progress: 80})
	require.NoError(t, err)
	publish(r, done43)
	require.Len(t, published, 6)

	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables})
	require.NoError(t, err)
	p, err := projection.NewProjector(projection.ProjectorConfig{Store: store, Source: source})
	require.NoError(t, err)
	type row struct {
		what string
		got  map[string]int
	}
	var rows []row
	measure := func(what string, i, receives int, wantErr error, want map[string]int) {
		t.Helper()
		m := published[i]
		b.counter.Take()
		err := p.Handle(ctx, events.SQSMessage{MessageId: "msg-" + strconv.Itoa(i), Body: string(m.Body),
			Attributes: map[string]string{"MessageGroupId": m.GroupID, "ApproximateReceiveCount": strconv.Itoa(receives)}})
		if wantErr != nil {
			require.ErrorIs(t, err, wantErr, what)
		} else {
			require.NoError(t, err, what)
		}
		got := b.counter.Take()
		require.Equal(t, want, got, what)
		rows = append(rows, row{what, got})
	}
	perEvent := map[string]int{"UpdateItem": 1, "TransactWriteItems": 1}
	viewOnly := map[string]int{"UpdateItem": 1}
	measure("job-42/v1: skipped, adds nothing", 0, 1, nil, viewOnly)
	// v2, B's takeover at progress 0, adds nothing: v3 starts from the
	// state the cursor holds and needs no wait.
	measure("job-42/v3 before v2: applied", 2, 1, nil, perEvent)
	measure("job-42/v2: skipped (view already newer)", 1, 1, nil, viewOnly)
	measure("job-42/v3 again: duplicate", 2, 2, nil, perEvent)
	measure("job-42/v3 a third time: duplicate", 2, 3, nil, perEvent)
	measure("job-42/v1 again: skipped", 0, 2, nil, viewOnly)
	// job-43's v1 and v2 are lost: no cursor, so the refusal returns no old
	// item and the cursor is read.
	measure("job-43/v3, no cursor: gap, waits", 5, 1, projection.ErrGap,
		map[string]int{"UpdateItem": 1, "TransactWriteItems": 1, "GetItem": 1})
	// At the threshold: the gap as above, then the job item and the cursor
	// are read and one transaction writes view, cursor and total.
	measure("job-43/v3, no cursor, 3rd receive: recovered", 5, 3, nil,
		map[string]int{"UpdateItem": 1, "TransactWriteItems": 2, "GetItem": 3})

	got, err := p.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 200, Completed: 2}, got)
	for _, j := range []jobs.Job{done42, done43} {
		v, err := p.View(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, projection.ViewOfJob(&j), v)
	}
	for _, r := range rows {
		t.Logf("%-48s %v", r.what, r.got)
	}
}
