package jobs_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestDynamoConfigBoundsLiveShardsAtExactlyItsBounds: 0 is the default,
// MinLiveShards and MaxLiveShards are taken, one past either is refused
// with ErrInvalidConfig naming the field.
func TestDynamoConfigBoundsLiveShardsAtExactlyItsBounds(t *testing.T) {
	t.Parallel()
	api := &fakeDynamo{t: t}
	for n, ok := range map[int]bool{0: true, jobs.MinLiveShards - 1: false, jobs.MinLiveShards: true,
		jobs.MaxLiveShards: true, jobs.MaxLiveShards + 1: false, -1: false} {
		_, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: n})
		if ok {
			require.NoError(t, err, n)
			continue
		}
		require.ErrorIs(t, err, jobs.ErrInvalidConfig, n)
		require.ErrorContains(t, err, "LiveShards", n)
	}
}

// TestLiveShardOfKeepsTodaysShardsAtSixteen: the hash is FNV-1a modulo the
// count, so at 16 every job keeps the shard LiveShard gave it, and a larger
// count spreads new jobs over all its shards.
func TestLiveShardOfKeepsTodaysShardsAtSixteen(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := range 4000 {
		id := "job-" + strconv.Itoa(i)
		require.Equal(t, jobs.LiveShard(id), jobs.LiveShardOf(id, 16), id)
		s := jobs.LiveShardOf(id, 64)
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		require.True(t, n >= 0 && n < 64, s)
		require.Equal(t, jobs.LiveShard(id), strconv.Itoa(n%16), "64 is a multiple of 16: %s", id)
		seen[s] = true
	}
	require.Len(t, seen, 64, "every shard is used")
}

// TestDynamoWalksItsShardCount: Live and Finished query each of the
// store's shards, "0" to LiveShards-1, once per page.
func TestDynamoWalksItsShardCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{jobs.MinLiveShards, 64, jobs.MaxLiveShards} {
		shards := map[string]int{}
		api := &fakeDynamo{t: t, query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
			shards[aws.ToString(in.IndexName)+"/"+in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value]++
			return &dynamodb.QueryOutput{}, nil
		}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: n})
		require.NoError(t, err)
		_, err = store.Live(t.Context(), time.Now(), 10)
		require.NoError(t, err)
		_, err = store.Finished(t.Context(), "", time.Now(), 10)
		require.NoError(t, err)
		want := map[string]int{}
		for s := range n {
			want[jobs.LiveIndex+"/"+strconv.Itoa(s)] = 1
			want[jobs.FinishedIndex+"/"+strconv.Itoa(s)] = 1
		}
		require.Equal(t, want, shards, n)
	}
}

// TestDynamoCreateRecordsALargerShardCountFirst: a store above 16 shards
// raises the table's record (never lowers it) before its first Create
// writes a job, once per store; one at 16 writes no record (a table
// without one was written with 16); a failed record writes no job.
func TestDynamoCreateRecordsALargerShardCountFirst(t *testing.T) {
	t.Parallel()
	var calls []string
	recordErr := error(nil)
	api := &fakeDynamo{t: t,
		update: func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
			calls = append(calls, "record "+in.ExpressionAttributeValues[":n"].(*types.AttributeValueMemberN).Value)
			require.Equal(t, &types.AttributeValueMemberS{Value: "config#live-shards"}, in.Key["job_id"])
			require.Equal(t, "attribute_not_exists(#n) OR #n < :n", aws.ToString(in.ConditionExpression), "it only grows")
			return nil, recordErr
		},
		transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			calls = append(calls, "create")
			return &dynamodb.TransactWriteItemsOutput{}, nil
		}}
	create := func(store *jobs.DynamoStore, id string) error {
		_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "i-" + id, Tenant: "t"})
		return err
	}
	at16, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	require.NoError(t, create(at16, "job-1"))
	require.Equal(t, []string{"create"}, calls, "16 is recorded by no record")

	calls = nil
	recordErr = errors.New("throttled")
	at64, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: 64})
	require.NoError(t, err)
	require.ErrorContains(t, create(at64, "job-2"), "throttled")
	require.Equal(t, []string{"record 64"}, calls, "no job written under an unrecorded count")

	calls = nil
	recordErr = &types.ConditionalCheckFailedException{} // the record is at least 64 already
	require.NoError(t, create(at64, "job-3"))
	require.NoError(t, create(at64, "job-4"))
	require.Equal(t, []string{"record 64", "create", "create"}, calls, "recorded once per store")
}

// TestDynamoCheckLiveShardsRefusesFewerThanRecorded: a store whose count is
// below the table's record is refused, at exactly the record; no record is
// the default's 16.
func TestDynamoCheckLiveShardsRefusesFewerThanRecorded(t *testing.T) {
	t.Parallel()
	record := map[string]types.AttributeValue{}
	api := &fakeDynamo{t: t, get: func(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		require.True(t, aws.ToBool(in.ConsistentRead))
		require.Equal(t, &types.AttributeValueMemberS{Value: "config#live-shards"}, in.Key["job_id"])
		return &dynamodb.GetItemOutput{Item: record}, nil
	}}
	check := func(n int) error {
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: n})
		require.NoError(t, err)
		return store.CheckLiveShards(t.Context())
	}
	require.NoError(t, check(16), "no record")
	require.Equal(t, jobs.LiveShards, must(jobs.RecordedLiveShards(t.Context(), api, "jobs")), "no record: 16")
	record["live_shards"] = &types.AttributeValueMemberN{Value: "64"}
	require.Equal(t, 64, must(jobs.RecordedLiveShards(t.Context(), api, "jobs")))
	require.NoError(t, check(64))
	require.NoError(t, check(65))
	err := check(63)
	require.ErrorIs(t, err, jobs.ErrLiveShardsShrunk)
	require.ErrorContains(t, err, "LiveShards 63, but jobs were written with 64")
	require.ErrorIs(t, check(16), jobs.ErrLiveShardsShrunk)
}

// TestDynamoTransitionRecordsALargerShardCountFirst: a transition writes the
// job's shard again under the store's count, so it records the count first
// too (once per store), and a failed record writes nothing.
func TestDynamoTransitionRecordsALargerShardCountFirst(t *testing.T) {
	t.Parallel()
	var calls []string
	recordErr := errors.New("throttled")
	api := &fakeDynamo{t: t, update: func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
		key := in.Key["job_id"].(*types.AttributeValueMemberS).Value
		calls = append(calls, key)
		if key == "config#live-shards" {
			return nil, recordErr
		}
		return nil, errors.New("no such job here") // the transition's own write
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: 64})
	require.NoError(t, err)
	nudge := func() error {
		_, err := store.Nudge(t.Context(), jobs.NudgeRequest{JobID: "job-1", Generation: 1, Version: 1})
		return err
	}
	require.ErrorContains(t, nudge(), "throttled")
	require.Equal(t, []string{"config#live-shards"}, calls, "nothing written under an unrecorded count")
	calls = nil
	recordErr = nil
	require.Error(t, nudge())
	require.Error(t, nudge())
	require.Equal(t, []string{"config#live-shards", "job-1", "job-1"}, calls, "recorded once per store")
}
