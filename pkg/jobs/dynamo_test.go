package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// fakeDynamo is a jobs.DynamoDBAPI whose answers a test scripts. Calls it
// was not given an answer for fail the test. It answers one call at a time
// (the store's listings and GetMany call it from several goroutines), so a
// script may keep state without a lock of its own.
type fakeDynamo struct {
	mu       sync.Mutex
	t        *testing.T
	get      func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	update   func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	transact func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error)
	query    func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	batchGet func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
}

var _ jobs.DynamoDBAPI = (*fakeDynamo)(nil)

func (f *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.get == nil {
		f.t.Errorf("unexpected GetItem")
		return nil, errors.New("unexpected GetItem")
	}
	return f.get(in)
}

func (f *fakeDynamo) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.update == nil {
		f.t.Errorf("unexpected UpdateItem")
		return nil, errors.New("unexpected UpdateItem")
	}
	return f.update(in)
}

func (f *fakeDynamo) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.transact == nil {
		f.t.Errorf("unexpected TransactWriteItems")
		return nil, errors.New("unexpected TransactWriteItems")
	}
	return f.transact(in)
}

func (f *fakeDynamo) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.query == nil {
		f.t.Errorf("unexpected Query")
		return nil, errors.New("unexpected Query")
	}
	return f.query(in)
}

func (f *fakeDynamo) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.batchGet == nil {
		f.t.Errorf("unexpected BatchGetItem")
		return nil, errors.New("unexpected BatchGetItem")
	}
	return f.batchGet(in)
}

// TestNewDynamoStoreTakesTheExportedInterface: a caller outside the package
// can hand the store its own implementation of jobs.DynamoDBAPI.
func TestNewDynamoStoreTakesTheExportedInterface(t *testing.T) {
	t.Parallel()
	var asked string
	api := &fakeDynamo{t: t, get: func(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
		asked = *in.TableName
		require.True(t, *in.ConsistentRead, "Get reads strongly consistent")
		return &dynamodb.GetItemOutput{}, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	_, err = store.Get(t.Context(), "job-42")
	require.ErrorIs(t, err, jobs.ErrNotFound)
	require.Equal(t, "jobs", asked)
}

// conflict is how DynamoDB cancels a transaction that raced another on the
// same items.
func conflict() error {
	reason := types.CancellationReason{Code: aws.String("TransactionConflict")}
	return &types.TransactionCanceledException{Message: aws.String("conflict"),
		CancellationReasons: []types.CancellationReason{reason, reason}}
}

// TestDynamoCreateBacksOffBetweenConflicts: a create whose transaction keeps
// conflicting tries a bounded number of times, waiting a jittered, doubling,
// capped delay between tries, and stops waiting when its context ends.
func TestDynamoCreateBacksOffBetweenConflicts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls []time.Time
		api := &fakeDynamo{t: t, transact: func(*dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsOutput, error) {
			calls = append(calls, time.Now())
			return nil, conflict()
		}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
		require.NoError(t, err)
		start := time.Now()
		_, err = store.Create(t.Context(), jobs.CreateRequest{JobID: "job-42", IntentID: "export-intent-7", Tenant: "t-1"})
		require.ErrorContains(t, err, "kept changing; giving up")
		require.Len(t, calls, 8, "a bounded number of tries")
		// The wait after try r is 10 ms doubled r-1 times, at most 1 s, of
		// which the upper half is random.
		require.Equal(t, start, calls[0], "the first try does not wait")
		end := time.Now()
		for r, at := range calls {
			next := end
			if r+1 < len(calls) {
				next = calls[r+1]
			}
			nominal := min(10*time.Millisecond<<r, time.Second)
			require.GreaterOrEqual(t, next.Sub(at), nominal/2, "wait after try %d", r+1)
			require.LessOrEqual(t, next.Sub(at), nominal, "wait after try %d", r+1)
		}

		// A context that ends during a wait ends the create at once.
		calls = nil
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-43", IntentID: "export-intent-8", Tenant: "t-1"})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, len(calls), 8)
		require.Equal(t, 15*time.Millisecond, time.Since(start))
	})
}

// TestDynamoLiveQueriesEveryShardOldestFirst: Live reads each shard of the
// live index oldest first, page by page, asks no shard for more than it
// still needs, and merges the shards' lists, oldest first, cut to the limit.
func TestDynamoLiveQueriesEveryShardOldestFirst(t *testing.T) {
	t.Parallel()
	cutoff := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
	// Shard "3" has five entries (two pages), shard "7" one, the rest none.
	index := map[string][]int64{"3": {100, 200, 300, 400, 500}, "7": {150}}
	var asked []string
	api := &fakeDynamo{t: t, query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		require.Equal(t, "jobs", aws.ToString(in.TableName))
		require.Equal(t, jobs.LiveIndex, aws.ToString(in.IndexName))
		require.Equal(t, "#s = :s AND #u < :u", aws.ToString(in.KeyConditionExpression))
		require.Equal(t, map[string]string{"#s": "live_shard", "#u": "updated_at"}, in.ExpressionAttributeNames)
		require.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(cutoff.UnixMilli())}, in.ExpressionAttributeValues[":u"])
		require.True(t, aws.ToBool(in.ScanIndexForward), "oldest first")
		shard := in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value
		start := 0
		if in.ExclusiveStartKey != nil {
			start = must(strconv.Atoi(in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN).Value))
		}
		asked = append(asked, fmt.Sprintf("%s@%d limit %d", shard, start, aws.ToInt32(in.Limit)))
		entries := index[shard][start:]
		out := &dynamodb.QueryOutput{}
		n := min(len(entries), int(aws.ToInt32(in.Limit)), 2) // pages of at most two
		for i, ms := range entries[:n] {
			out.Items = append(out.Items, map[string]types.AttributeValue{
				"job_id":     &types.AttributeValueMemberS{Value: fmt.Sprintf("job-%s-%d", shard, start+i)},
				"live_shard": &types.AttributeValueMemberS{Value: shard},
				"updated_at": &types.AttributeValueMemberN{Value: fmt.Sprint(ms)},
			})
		}
		if start+n < len(index[shard]) {
			out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: fmt.Sprint(start + n)}}
		}
		return out, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	ids, err := store.Live(t.Context(), cutoff, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"job-3-0", "job-7-0", "job-3-1"}, ids)
	want := []string{}
	for shard := range jobs.LiveShards {
		switch shard {
		case 3:
			want = append(want, "3@0 limit 3", "3@2 limit 1") // it has 3 after two pages: stop
		default:
			want = append(want, fmt.Sprintf("%d@0 limit 3", shard))
		}
	}
	require.ElementsMatch(t, want, asked, "the shards are asked concurrently, each shard's pages in turn")

	_, err = store.Live(t.Context(), cutoff, 0)
	require.ErrorIs(t, err, jobs.ErrInvalid)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDynamoGetManyBatchesAndRetriesUnprocessedKeys: GetMany asks for each
// id once, at most 100 per strongly consistent BatchGetItem, the chunks
// together, and asks again, after a backoff, for the keys DynamoDB left
// unprocessed.
func TestDynamoGetManyBatchesAndRetriesUnprocessedKeys(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var sizes []int
		var waits []time.Duration // since the start, by call
		start := time.Now()
		throttled := false
		api := &fakeDynamo{t: t, batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
			waits = append(waits, time.Since(start))
			ka := in.RequestItems["jobs"]
			require.True(t, aws.ToBool(ka.ConsistentRead))
			sizes = append(sizes, len(ka.Keys))
			out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
			keys := ka.Keys
			if !throttled && len(keys) > 10 {
				// The first time, leave the last ten unprocessed.
				throttled = true
				out.UnprocessedKeys = map[string]types.KeysAndAttributes{"jobs": {Keys: keys[len(keys)-10:]}}
				keys = keys[:len(keys)-10]
			}
			for _, k := range keys {
				id := k["job_id"].(*types.AttributeValueMemberS).Value
				if strings.HasPrefix(id, "missing") {
					continue
				}
				out.Responses["jobs"] = append(out.Responses["jobs"], map[string]types.AttributeValue{
					"job_id": &types.AttributeValueMemberS{Value: id}, "status": &types.AttributeValueMemberS{Value: "pending"},
				})
			}
			return out, nil
		}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
		require.NoError(t, err)
		ids := append(jobIDs(240), "job-0", "job-7", "missing-1") // repeats, and one that does not exist
		got, err := store.GetMany(t.Context(), ids)
		require.NoError(t, err)
		require.Len(t, got, 240)
		require.Equal(t, jobs.StatusPending, got["job-239"].Status)
		require.NotContains(t, got, "missing-1")
		require.Len(t, sizes, 4)
		require.ElementsMatch(t, []int{100, 100, 41}, sizes[:3], "chunks of 100 ids, each once, together")
		require.Equal(t, 10, sizes[3], "the unprocessed ten asked again")
		require.Equal(t, []time.Duration{0, 0, 0}, waits[:3], "the chunks are asked at once")
		require.Positive(t, waits[3], "a backoff before asking again")

		_, err = store.GetMany(t.Context(), []string{"job-1", "intent#t#i"})
		require.ErrorIs(t, err, jobs.ErrInvalid)
		require.Len(t, sizes, 4, "nothing read for an invalid request")
		none, err := store.GetMany(t.Context(), nil)
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// TestDynamoGetManyLeavesOutItemsThatDoNotDecode: an item FromItem refuses
// (written by hand, or by a version that stored something else) does not
// fail the read of the others: GetMany reads every chunk and returns every
// job that decodes, with an *UndecodableError naming the items left out.
func TestDynamoGetManyLeavesOutItemsThatDoNotDecode(t *testing.T) {
	t.Parallel()
	bad := map[string]types.AttributeValue{
		"job-3":   &types.AttributeValueMemberS{Value: "three"}, // a version that is not a number
		"job-150": &types.AttributeValueMemberN{Value: "7"},     // a status that is not a string
	}
	var asked int
	api := &fakeDynamo{t: t, batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		for _, k := range in.RequestItems["jobs"].Keys {
			asked++
			id := k["job_id"].(*types.AttributeValueMemberS).Value
			item := map[string]types.AttributeValue{
				"job_id": &types.AttributeValueMemberS{Value: id}, "status": &types.AttributeValueMemberS{Value: "completed"},
			}
			switch v := bad[id].(type) {
			case *types.AttributeValueMemberS:
				item["version"] = v
			case *types.AttributeValueMemberN:
				item["status"] = v
			}
			out.Responses["jobs"] = append(out.Responses["jobs"], item)
		}
		return out, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	ids := jobIDs(200)
	got, err := store.GetMany(t.Context(), ids)
	var undecodable *jobs.UndecodableError
	require.ErrorAs(t, err, &undecodable)
	require.Equal(t, 200, asked, "every chunk read")
	require.Len(t, got, 198, "every job that decodes")
	require.Equal(t, jobs.StatusCompleted, got["job-199"].Status)
	require.NotContains(t, got, "job-3")
	require.NotContains(t, got, "job-150")
	require.Len(t, undecodable.Items, 2)
	require.ErrorContains(t, undecodable.Items["job-3"], "version")
	require.ErrorContains(t, undecodable.Items["job-150"], "status")
	require.ErrorContains(t, err, "job-150")
	require.ErrorContains(t, err, "job-3")

	// A request that fails is no UndecodableError, and returns no jobs.
	api.batchGet = func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		return nil, errors.New("throttled")
	}
	got, err = store.GetMany(t.Context(), ids)
	require.ErrorContains(t, err, "throttled")
	require.False(t, errors.As(err, &undecodable))
	require.Nil(t, got)
}

// TestDynamoFinishedQueriesEveryShardInKeyOrderAfterTheCursor: Finished
// reads each shard of the finished index in key order between the cursor
// and the bound, page by page, asks no shard for more than it still needs,
// skips the cursor's own entry (BETWEEN includes it), and merges the
// shards' lists in key order, cut to the limit.
func TestDynamoFinishedQueriesEveryShardInKeyOrderAfterTheCursor(t *testing.T) {
	t.Parallel()
	before := time.UnixMilli(1000).UTC()
	// Shard "3" has five entries (pages of two), shard "7" one, the rest none.
	index := map[string][]string{
		"3": {"0000000000100#job-a", "0000000000200#job-b", "0000000000300#job-c", "0000000000400#job-d", "0000000000500#job-e"},
		"7": {"0000000000150#job-f"},
	}
	var asked []string
	api := &fakeDynamo{t: t, query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
		require.Equal(t, "jobs", aws.ToString(in.TableName))
		require.Equal(t, jobs.FinishedIndex, aws.ToString(in.IndexName))
		require.Equal(t, map[string]string{"#s": "finished_shard", "#k": "finished_key"}, in.ExpressionAttributeNames)
		require.Equal(t, &types.AttributeValueMemberS{Value: "0000000001000"}, in.ExpressionAttributeValues[":hi"])
		require.True(t, aws.ToBool(in.ScanIndexForward), "oldest first")
		lo := ""
		switch aws.ToString(in.KeyConditionExpression) {
		case "#s = :s AND #k < :hi":
			require.NotContains(t, in.ExpressionAttributeValues, ":lo")
		case "#s = :s AND #k BETWEEN :lo AND :hi":
			lo = in.ExpressionAttributeValues[":lo"].(*types.AttributeValueMemberS).Value
		default:
			t.Fatalf("key condition %q", aws.ToString(in.KeyConditionExpression))
		}
		shard := in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value
		start := 0
		if in.ExclusiveStartKey != nil {
			start = must(strconv.Atoi(in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN).Value))
		} else {
			for start < len(index[shard]) && index[shard][start] < lo {
				start++
			}
		}
		asked = append(asked, fmt.Sprintf("%s@%d limit %d", shard, start, aws.ToInt32(in.Limit)))
		entries := index[shard][start:]
		out := &dynamodb.QueryOutput{}
		n := min(len(entries), int(aws.ToInt32(in.Limit)), 2)
		for _, k := range entries[:n] {
			_, id, _ := strings.Cut(k, "#")
			out.Items = append(out.Items, map[string]types.AttributeValue{
				"job_id":         &types.AttributeValueMemberS{Value: id},
				"finished_shard": &types.AttributeValueMemberS{Value: shard},
				"finished_key":   &types.AttributeValueMemberS{Value: k},
			})
		}
		if start+n < len(index[shard]) {
			out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: fmt.Sprint(start + n)}}
		}
		return out, nil
	}}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs"})
	require.NoError(t, err)
	// What each shard was asked: from where in it (the fake's position
	// after the key condition's lower bound) and for how many.
	all := func(special map[int][]string) []string {
		var want []string
		for shard := range jobs.LiveShards {
			if s, ok := special[shard]; ok {
				want = append(want, s...)
			} else {
				want = append(want, fmt.Sprintf("%d@0 limit 3", shard))
			}
		}
		return want
	}

	got, err := store.Finished(t.Context(), "", before, 3)
	require.NoError(t, err)
	require.Equal(t, []jobs.FinishedJob{
		{ID: "job-a", Key: "0000000000100#job-a"}, {ID: "job-f", Key: "0000000000150#job-f"}, {ID: "job-b", Key: "0000000000200#job-b"},
	}, got)
	require.ElementsMatch(t, all(map[int][]string{3: {"3@0 limit 3", "3@2 limit 1"}}), asked)

	// From the last key listed: its own entry is read again and skipped.
	asked = nil
	got, err = store.Finished(t.Context(), "0000000000200#job-b", before, 3)
	require.NoError(t, err)
	require.Equal(t, []jobs.FinishedJob{
		{ID: "job-c", Key: "0000000000300#job-c"}, {ID: "job-d", Key: "0000000000400#job-d"}, {ID: "job-e", Key: "0000000000500#job-e"},
	}, got)
	require.ElementsMatch(t, all(map[int][]string{3: {"3@1 limit 3", "3@3 limit 2"}, 7: {"7@1 limit 3"}}), asked)

	// A cursor at or past the bound lists nothing and asks nothing.
	asked = nil
	got, err = store.Finished(t.Context(), jobs.FinishedBound(before), before, 3)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, asked)

	_, err = store.Finished(t.Context(), "", before, 0)
	require.ErrorIs(t, err, jobs.ErrInvalid)
}
