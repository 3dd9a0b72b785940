//go:build integration

package jobs_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// TestDynamoStoreConformanceAtSixtyFourShards: the suite holds at a shard
// count other than the default, on a table of its own.
func TestDynamoStoreConformanceAtSixtyFourShards(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	jobstest.Run(t, func(t *testing.T, cfg jobs.Config) jobs.Store {
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, LiveShards: 64, Config: cfg})
		require.NoError(t, err)
		return ttlStore{store, b}
	})
}

// TestDynamoAJobCreatedUnderMoreShardsIsNeverHidden: a job created by a
// store of 64 shards, in a shard above 15, is listed by a store of 64 and
// would be missed by one of 16 (a deploy that lowered the count): that
// store's CheckLiveShards refuses it, naming both counts, while one of 64
// or more passes. The record costs one UpdateItem, once per store.
func TestDynamoAJobCreatedUnderMoreShardsIsNeverHidden(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	clock := jobstest.NewClock(jobstest.Start)
	open := storesOfShards(t, b, clock)
	at16, at64 := open(16), open(64)
	require.NoError(t, at16.CheckLiveShards(ctx), "a table without a record was written with 16")
	require.Equal(t, jobs.LiveShards, must(jobs.RecordedLiveShards(ctx, b.client, b.table)))
	b.counter.Take()

	id := ""
	for i := 0; id == ""; i++ {
		if n, _ := strconv.Atoi(jobs.LiveShardOf("job-"+strconv.Itoa(i), 64)); n >= 16 {
			id = "job-" + strconv.Itoa(i)
		}
	}
	_, err := at64.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"UpdateItem": 1, "TransactWriteItems": 1}, b.counter.Take(), "the record, then the job")
	_, err = at64.Create(ctx, jobs.CreateRequest{JobID: id + "-b", IntentID: "intent-b", Tenant: "t-1"})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, b.counter.Take(), "recorded once per store")

	later := clock.Now().Add(time.Hour)
	listed, err := at64.Live(ctx, later, 10)
	require.NoError(t, err)
	require.Contains(t, listed, id)
	missed, err := at16.Live(ctx, later, 10)
	require.NoError(t, err)
	require.NotContains(t, missed, id, "why a smaller count is refused")

	err = at16.CheckLiveShards(ctx)
	require.ErrorIs(t, err, jobs.ErrLiveShardsShrunk)
	require.ErrorContains(t, err, "LiveShards 16, but jobs were written with 64")
	require.ErrorIs(t, open(63).CheckLiveShards(ctx), jobs.ErrLiveShardsShrunk)
	require.NoError(t, at64.CheckLiveShards(ctx))
	require.Equal(t, 64, must(jobs.RecordedLiveShards(ctx, b.client, b.table)), "what a reader opens its store with")
	require.NoError(t, open(128).CheckLiveShards(ctx))

	// A store of 16 may still create (its jobs are in shards 0 to 15, which
	// every walk reads); it does not lower the record.
	_, err = at16.Create(ctx, jobs.CreateRequest{JobID: id + "-c", IntentID: "intent-c", Tenant: "t-1"})
	require.NoError(t, err)
	require.ErrorIs(t, at16.CheckLiveShards(ctx), jobs.ErrLiveShardsShrunk)
	require.Equal(t, 64, must(jobs.RecordedLiveShards(ctx, b.client, b.table)), "never lowered")
}

// TestDynamoAJobKeepsTheShardItWasCreatedIn: a job created by a store of 16
// shards, claimed and renewed by one of 64 whose count puts it elsewhere,
// keeps its live_shard, and stays listed by both.
func TestDynamoAJobKeepsTheShardItWasCreatedIn(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	ctx := t.Context()
	clock := jobstest.NewClock(jobstest.Start)
	open := storesOfShards(t, b, clock)
	at16, at64 := open(16), open(64)
	id := ""
	for i := 0; id == ""; i++ {
		if c := "job-" + strconv.Itoa(i); jobs.LiveShardOf(c, 64) != jobs.LiveShard(c) {
			id = c
		}
	}
	_, err := at16.Create(ctx, jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)
	shard := func() string {
		out, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: id}}})
		require.NoError(t, err)
		return out.Item["live_shard"].(*types.AttributeValueMemberS).Value
	}
	require.Equal(t, jobs.LiveShard(id), shard())
	claimed, err := at64.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "a", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	_, err = at64.Renew(ctx, jobs.RenewRequest{JobID: id, AttemptID: "a", Generation: claimed.Generation, Version: claimed.Version,
		LeaseUntil: clock.Now().Add(2 * time.Minute)})
	require.NoError(t, err)
	require.Equal(t, jobs.LiveShard(id), shard(), "kept, not %s", jobs.LiveShardOf(id, 64))
	for _, store := range []*jobs.DynamoStore{at16, at64} {
		listed, err := store.Live(ctx, clock.Now().Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{id}, listed)
	}
}

// storesOfShards returns a maker of stores on b's table with a given
// shard count, all on clock.
func storesOfShards(t *testing.T, b *dynamoBundle, clock *jobstest.Clock) func(n int) *jobs.DynamoStore {
	return func(n int) *jobs.DynamoStore {
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: b.client, Table: b.table, LiveShards: n, Config: jobs.Config{Now: clock.Now}})
		require.NoError(t, err)
		return store
	}
}
