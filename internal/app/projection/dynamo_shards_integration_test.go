//go:build integration

package projection_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// store is a DynamoStore of shards (0: the default) on b's tables.
func (b *dynamoBundle) store(t *testing.T, shards int) *projection.DynamoStore {
	t.Helper()
	s, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables, Shards: shards})
	require.NoError(t, err)
	return s
}

// The shard count is recorded by the first store that checks it, and a
// store of another count is refused, naming both, whichever came first;
// the same count passes as often as it is checked.
func TestDynamoShardCountIsRecordedAndHeld(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	open := func(shards int) *projection.DynamoStore { return b.store(t, shards) }
	_, ok, err := projection.RecordedShards(ctx, b.client, b.tables.Totals)
	require.NoError(t, err)
	require.False(t, ok, "nothing recorded yet")
	require.NoError(t, open(0).CheckShards(ctx), "the default, 32, recorded")
	require.NoError(t, open(projection.DefaultShards).CheckShards(ctx), "the same count again")
	n, ok, err := projection.RecordedShards(ctx, b.client, b.tables.Totals)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, projection.DefaultShards, n)
	for _, other := range []int{1, projection.DefaultShards - 1, projection.DefaultShards + 1} {
		err := open(other).CheckShards(ctx)
		require.ErrorIs(t, err, projection.ErrShardsChanged, "%d", other)
		require.ErrorContains(t, err, fmt.Sprintf("Shards is %d, but the Totals table %s was written with %d", other, b.tables.Totals, projection.DefaultShards))
	}
	// The record is no tenant's: the totals of a tenant named as its
	// partition key are untouched by it.
	tot, err := open(0).Totals(ctx, "#config")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "#config"}, tot)
	tot, err = open(1).Totals(ctx, "#config")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "#config"}, tot)
}

// A table written before the shard count was recorded (one shard, no
// record) is refused to a store of the default count, whose reads would
// find its totals nowhere, and recorded by a store of one shard, which
// reads them as they are.
func TestDynamoTotalsWrittenBeforeTheRecordKeepOneShard(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	open := func(shards int) *projection.DynamoStore { return b.store(t, shards) }
	for _, e := range projectiontest.Lifecycle("job-42", "t-1") { // written as before: one shard, no record
		_, err := open(1).Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
		require.NoError(t, err)
	}
	err := open(0).CheckShards(ctx)
	require.ErrorIs(t, err, projection.ErrShardsChanged)
	require.ErrorContains(t, err, "written before the count was recorded, with one shard")
	require.ErrorIs(t, open(1).VerifyShards(ctx), projection.ErrShardsUnrecorded)
	require.NoError(t, open(1).CheckShards(ctx))
	require.NoError(t, open(1).VerifyShards(ctx))
	tot, err := open(1).Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 40, Completed: 1}, tot)
}

// A tenant's jobs spread over its shards, each shard's partition key
// "<tenant>#<k>" holding its total and its jobs' cursors, and the totals
// read back exact; a tenant whose name ends like a shard's key is another
// tenant.
func TestDynamoShardsSpreadATenantAndSumExactly(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	const shards, jobCount = 8, 64
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables, Shards: shards})
	require.NoError(t, err)
	for i := range jobCount {
		for _, e := range projectiontest.Lifecycle(fmt.Sprintf("job-%d", i), "t-1") {
			_, err := store.Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
			require.NoError(t, err)
		}
	}
	for _, e := range projectiontest.Failing("job-x", "t-1#3") {
		_, err := store.Apply(ctx, projection.ViewOfEvent(&e), e.Delta)
		require.NoError(t, err)
	}
	tot, err := store.Totals(ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 40 * jobCount, Completed: jobCount}, tot)
	tot, err = store.Totals(ctx, "t-1#3")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1#3", Processed: 7}, tot)

	out, err := b.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(b.tables.Totals), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	cursors := map[string]int{}
	totals := map[string]bool{}
	for _, item := range out.Items {
		pk := item["tenant"].(*types.AttributeValueMemberS).Value
		sk := item["key"].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, "t-1#") || strings.HasPrefix(pk, "t-1#3#") {
			continue
		}
		if sk == "total" {
			totals[pk] = true
			continue
		}
		job := strings.TrimPrefix(sk, "cursor#")
		require.Equal(t, fmt.Sprintf("t-1#%d", projection.ShardOf(job, shards)), pk, "%s's cursor in its shard", job)
		cursors[pk]++
	}
	require.Len(t, totals, shards, "every shard has a total: %v", totals)
	require.Len(t, cursors, shards)
	var sum int
	for _, n := range cursors {
		sum += n
	}
	require.Equal(t, jobCount, sum)
	t.Logf("cursors per shard: %v", cursors)
}

// writeUnits counts the write units the writes the client sends cost, by
// table, by DynamoDB's rule for items under 1 KB (a cursor, a total and a
// view are each well under): an UpdateItem 1, each item of a
// TransactWriteItems 2 (prepared and committed). DynamoDB Local does not
// report ConsumedCapacity, so the units are counted from the requests
// that reached it, refused ones included (a refused write is charged too).
type writeUnits struct {
	mu    sync.Mutex
	units map[string]float64
}

func (c *writeUnits) install(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("projectiontest.writeunits",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			switch p := in.Parameters.(type) {
			case *dynamodb.UpdateItemInput:
				c.units[aws.ToString(p.TableName)]++
			case *dynamodb.TransactWriteItemsInput:
				for _, it := range p.TransactItems {
					c.units[aws.ToString(it.Update.TableName)] += 2
				}
			}
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// happyPath is the events a job of the reference task makes when nothing
// goes wrong, as the request tests count them: started (adds nothing) and
// completed.
func happyPath(jobID, tenant string) []outbox.Event {
	return projectiontest.Events(jobID, tenant,
		projectiontest.Step{Type: jobs.EventStarted, Status: jobs.StatusRunning, Generation: 1},
		projectiontest.Step{Type: jobs.EventCompleted, Status: jobs.StatusCompleted, Generation: 1, Progress: 120,
			ResultKey: "candidates/" + jobID + "/g0000000001/attempt-a.json", ResultSize: 2048},
	)
}

// The write units a job costs the Totals table, counted from the requests
// sent (writeUnits), for the design before (one shard, every event counted) and this
// one (default shards, the events that add nothing skipped), in one run:
// this one's are half or less. The figures are logged for
// docs/BENCHMARKS.md.
func TestTotalsWriteUnitsPerJobAreHalved(t *testing.T) {
	t.Parallel()
	const jobCount = 20
	perJob := map[string]float64{}
	for _, d := range []struct {
		name string
		cfg  projection.DynamoConfig
	}{{"before (Shards 1, CountEveryEvent)", projection.DynamoConfig{Shards: 1, CountEveryEvent: true}}, {"sharded, skipping", projection.DynamoConfig{}}} {
		b := setupDynamo(t)
		used := &writeUnits{units: map[string]float64{}}
		client := dynamodb.New(b.client.Options(), func(o *dynamodb.Options) {
			o.APIOptions = append(slices.Clone(o.APIOptions), used.install)
		})
		cfg := d.cfg
		cfg.Client, cfg.Tables = client, b.tables
		store, err := projection.NewDynamoStore(cfg)
		require.NoError(t, err)
		for i := range jobCount {
			for _, e := range happyPath(fmt.Sprintf("job-%d", i), "t-1") {
				_, err := store.Apply(t.Context(), projection.ViewOfEvent(&e), e.Delta)
				require.NoError(t, err)
			}
		}
		tot, err := store.Totals(t.Context(), "t-1")
		require.NoError(t, err)
		require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 120 * jobCount, Completed: jobCount}, tot)
		perJob[d.name] = used.units[b.tables.Totals] / jobCount
		t.Logf("%-36s Totals table: %.1f write units per job; Views table: %.1f", d.name, perJob[d.name], used.units[b.tables.Views]/jobCount)
	}
	require.LessOrEqual(t, perJob["sharded, skipping"], perJob["before (Shards 1, CountEveryEvent)"]/2)
}

// Contention, measured deterministically: n events of one tenant, each the
// completion of its own job, released together behind a barrier, on one
// shard and on the default count. It reports the TransactionConflict
// retries the stores counted (DynamoDB Local runs transactions one at a
// time and never answers TransactionConflict: 0 on both, so it cannot
// show the retries AWS would make) and what decides them on AWS, the most
// of the n concurrent transactions that write one total item: every one
// with one shard; with 32, the fullest shard's share, fixed by the job
// ids' hash.
func TestContentionOfOneTenantsConcurrentEvents(t *testing.T) {
	t.Parallel()
	const n = 64
	for _, shards := range []int{1, projection.DefaultShards} {
		b := setupDynamo(t)
		store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: b.client, Tables: b.tables, Shards: shards})
		require.NoError(t, err)
		evs := make([]outbox.Event, n)
		perShard := map[int]int{}
		for i := range evs {
			evs[i] = happyPath(fmt.Sprintf("job-%d", i), "t-1")[1]
			perShard[projection.ShardOf(evs[i].JobID, shards)]++
		}
		var conflicts int
		var mu sync.Mutex
		var wg sync.WaitGroup
		barrier := make(chan struct{})
		for i := range evs {
			wg.Go(func() {
				<-barrier
				res, err := store.Apply(t.Context(), projection.ViewOfEvent(&evs[i]), evs[i].Delta)
				if !assertNoError(t, err) {
					return
				}
				mu.Lock()
				conflicts += res.Conflicts
				mu.Unlock()
			})
		}
		close(barrier)
		wg.Wait()
		tot, err := store.Totals(t.Context(), "t-1")
		require.NoError(t, err)
		require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 120 * n, Completed: n}, tot)
		most := 0
		for _, c := range perShard {
			most = max(most, c)
		}
		t.Logf("%d concurrent events of one tenant, %2d shard(s): %3d TransactionConflict retries; at most %2d transactions on one total item",
			n, shards, conflicts, most)
		if shards == 1 {
			require.Equal(t, n, most)
		} else {
			require.Less(t, most, n/4)
		}
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("apply: %v", err)
		return false
	}
	return true
}
