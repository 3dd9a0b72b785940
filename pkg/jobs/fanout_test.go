package jobs_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// inFlightDynamo is a jobs.DynamoDBAPI for the listings and GetMany whose
// scripted answers see the caller's context and may take (synctest's) time;
// it counts the calls in flight and keeps the most there were at once.
type inFlightDynamo struct {
	t        *testing.T
	query    func(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	batchGet func(ctx context.Context, in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
	now      atomic.Int64
	most     atomic.Int64
}

var _ jobs.DynamoDBAPI = (*inFlightDynamo)(nil)

// enter counts a call in; the function it returns counts it out.
func (f *inFlightDynamo) enter() func() {
	n := f.now.Add(1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	return func() { f.now.Add(-1) }
}

func (f *inFlightDynamo) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.t.Errorf("unexpected GetItem")
	return nil, errors.New("unexpected GetItem")
}

func (f *inFlightDynamo) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.t.Errorf("unexpected UpdateItem")
	return nil, errors.New("unexpected UpdateItem")
}

func (f *inFlightDynamo) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.t.Errorf("unexpected TransactWriteItems")
	return nil, errors.New("unexpected TransactWriteItems")
}

func (f *inFlightDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	defer f.enter()()
	return f.query(ctx, in)
}

func (f *inFlightDynamo) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	defer f.enter()()
	return f.batchGet(ctx, in)
}

func queryShard(in *dynamodb.QueryInput) string {
	return in.ExpressionAttributeValues[":s"].(*types.AttributeValueMemberS).Value
}

// waitOrCancel waits d, or until ctx ends (its error).
func waitOrCancel(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// scriptedIndexes is a live and a finished index over many shards, whose
// jobs share a few milliseconds within and across shards. Each shard gives
// its entries of one millisecond in its own scrambled order (as the index
// may) and in pages of at most three, after a delay of its own.
type scriptedIndexes struct {
	live     map[string][]jobs.LivePosition // by shard, by time, ties scrambled
	finished map[string][]jobs.FinishedJob  // by shard, by key
	delay    map[string]time.Duration
}

func newScriptedIndexes(rng *rand.Rand, shards, perShard int) *scriptedIndexes {
	x := &scriptedIndexes{live: map[string][]jobs.LivePosition{}, finished: map[string][]jobs.FinishedJob{}, delay: map[string]time.Duration{}}
	for i := range shards * perShard {
		shard := strconv.Itoa(rng.IntN(shards))
		id := fmt.Sprintf("job-%04d", rng.IntN(10000)*10+i%10) // ids not in shard order
		ms := 100 + rng.Int64N(8)                              // eight milliseconds: many ties
		x.live[shard] = append(x.live[shard], jobs.LivePosition{UpdatedAt: ms, ID: id})
		x.finished[shard] = append(x.finished[shard], jobs.FinishedJob{ID: id, Key: jobs.FinishedKey(id, time.UnixMilli(ms))})
	}
	for shard, ps := range x.live {
		rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		slices.SortStableFunc(ps, func(a, b jobs.LivePosition) int { return cmp.Compare(a.UpdatedAt, b.UpdatedAt) })
		slices.SortFunc(x.finished[shard], func(a, b jobs.FinishedJob) int { return cmp.Compare(a.Key, b.Key) })
	}
	return x
}

// answer is the shard's next page for in, after its delay.
func (x *scriptedIndexes) answer(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	shard := queryShard(in)
	if err := waitOrCancel(ctx, x.delay[shard]); err != nil {
		return nil, err
	}
	v := in.ExpressionAttributeValues
	start := 0
	if in.ExclusiveStartKey != nil {
		start = must(strconv.Atoi(in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN).Value))
	}
	var keys []types.AttributeValue // every entry's range key, and its item
	var items []map[string]types.AttributeValue
	if aws.ToString(in.IndexName) == jobs.LiveIndex {
		for _, p := range x.live[shard] {
			keys = append(keys, &types.AttributeValueMemberN{Value: strconv.FormatInt(p.UpdatedAt, 10)})
			items = append(items, map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: p.ID},
				"live_shard": &types.AttributeValueMemberS{Value: shard}, "updated_at": keys[len(keys)-1]})
		}
	} else {
		for _, f := range x.finished[shard] {
			keys = append(keys, &types.AttributeValueMemberS{Value: f.Key})
			items = append(items, map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: f.ID},
				"finished_shard": &types.AttributeValueMemberS{Value: shard}, "finished_key": keys[len(keys)-1]})
		}
	}
	in2 := func(k types.AttributeValue) bool { // the key condition on the range key
		c := func(name string) int {
			switch a := k.(type) {
			case *types.AttributeValueMemberN:
				return cmp.Compare(must(strconv.ParseInt(a.Value, 10, 64)), must(strconv.ParseInt(v[name].(*types.AttributeValueMemberN).Value, 10, 64)))
			default:
				return strings.Compare(a.(*types.AttributeValueMemberS).Value, v[name].(*types.AttributeValueMemberS).Value)
			}
		}
		switch cond := aws.ToString(in.KeyConditionExpression); {
		case strings.HasSuffix(cond, "BETWEEN :lo AND :hi"):
			return c(":lo") >= 0 && c(":hi") <= 0
		case strings.HasSuffix(cond, "< :u"):
			return c(":u") < 0
		default:
			return c(":hi") < 0
		}
	}
	out := &dynamodb.QueryOutput{}
	i := start
	for ; i < len(items) && len(out.Items) < min(int(aws.ToInt32(in.Limit)), 3); i++ {
		if in2(keys[i]) {
			out.Items = append(out.Items, items[i])
		}
	}
	if i < len(items) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: strconv.Itoa(i)}}
	}
	return out, nil
}

// TestDynamoListingsMergeShardsAsInOrderWhateverAnswersFirst: the shards
// are queried together, so they answer in any order; the listings' answers
// are the same whatever the order: LiveAfter and Finished exactly the first
// limit entries after the position in the whole index (ties by id, across
// shards), Live the same answer each time, as old as theirs.
func TestDynamoListingsMergeShardsAsInOrderWhateverAnswersFirst(t *testing.T) {
	t.Parallel()
	const shards = 32
	x := newScriptedIndexes(rand.New(rand.NewPCG(20, 20)), shards, 12)
	var all []jobs.LivePosition
	var allFinished []jobs.FinishedJob
	for shard := range x.live {
		all = append(all, x.live[shard]...)
		allFinished = append(allFinished, x.finished[shard]...)
	}
	slices.SortFunc(all, func(a, b jobs.LivePosition) int {
		return cmp.Or(cmp.Compare(a.UpdatedAt, b.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(allFinished, func(a, b jobs.FinishedJob) int { return cmp.Compare(a.Key, b.Key) })
	before := time.UnixMilli(107) // the last millisecond left out
	n := slices.IndexFunc(all, func(p jobs.LivePosition) bool { return p.UpdatedAt >= 107 })
	live, finished := all[:n], allFinished[:n]
	require.Greater(t, len(live), 200)

	orders := map[string]func(shard int) time.Duration{
		"at once":        func(int) time.Duration { return 0 },
		"in order":       func(s int) time.Duration { return time.Duration(s) * time.Millisecond },
		"in reverse":     func(s int) time.Duration { return time.Duration(shards-s) * time.Millisecond },
		"scrambled":      func(s int) time.Duration { return time.Duration((s*7)%shards) * time.Millisecond },
		"odd ones first": func(s int) time.Duration { return time.Duration(1-s%2) * time.Millisecond },
	}
	type answers struct {
		Live      [][]string
		LiveAfter [][]jobs.LivePosition
		Finished  [][]jobs.FinishedJob
	}
	var first *answers
	for name, delay := range orders {
		synctest.Test(t, func(t *testing.T) {
			for s := range shards {
				x.delay[strconv.Itoa(s)] = delay(s)
			}
			store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: &inFlightDynamo{t: t, query: x.answer}, Table: "jobs", LiveShards: shards})
			require.NoError(t, err)
			var got answers
			for _, limit := range []int{1, 2, 5, 37, 1000} {
				for _, k := range []int{-1, 0, 3, 50, 150, len(live) - 1} {
					after, afterKey := jobs.LivePosition{}, ""
					if k >= 0 {
						after, afterKey = live[k], finished[k].Key
					}
					page, err := store.LiveAfter(t.Context(), after, before, limit)
					require.NoError(t, err)
					require.Equal(t, live[k+1:][:min(limit, len(live)-k-1)], nonNil(page), "%s: live after %d, limit %d", name, k, limit)
					got.LiveAfter = append(got.LiveAfter, page)
					f, err := store.Finished(t.Context(), afterKey, before, limit)
					require.NoError(t, err)
					require.Equal(t, finished[k+1:][:min(limit, len(finished)-k-1)], nonNil(f), "%s: finished after %d, limit %d", name, k, limit)
					got.Finished = append(got.Finished, f)
				}
				ids, err := store.Live(t.Context(), before, limit)
				require.NoError(t, err)
				require.Len(t, ids, min(limit, len(live)))
				got.Live = append(got.Live, ids)
			}
			if first == nil {
				first = &got
			}
			require.Equal(t, *first, got, "%s: the same answers whatever order the shards answer in", name)
		})
	}
}

// jobIDs is job-0 to job-(n-1).
func jobIDs(n int) []string {
	ids := make([]string, 0, n)
	for i := range n {
		ids = append(ids, fmt.Sprintf("job-%d", i))
	}
	return ids
}

// nonNil is s, or an empty slice for nil: the listings answer nothing
// with nil.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// TestDynamoRequestsInFlightStayWithinTheBound: a listing over 32 shards and
// a GetMany of 20 chunks have exactly MaxInFlight requests in flight at most,
// and a GetMany of three chunks has all three at once.
func TestDynamoRequestsInFlightStayWithinTheBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := &inFlightDynamo{t: t,
			query: func(ctx context.Context, _ *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				return &dynamodb.QueryOutput{}, waitOrCancel(ctx, time.Millisecond)
			},
			batchGet: func(ctx context.Context, _ *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
				return &dynamodb.BatchGetItemOutput{}, waitOrCancel(ctx, time.Millisecond)
			}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: 32})
		require.NoError(t, err)
		for _, c := range []struct {
			name     string
			requests int
			call     func() error
		}{
			{"live", 32, func() error { _, err := store.Live(t.Context(), time.Now(), 10); return err }},
			{"finished", 32, func() error { _, err := store.Finished(t.Context(), "", time.Now(), 10); return err }},
			{"get many", 20, func() error { _, err := store.GetMany(t.Context(), jobIDs(2000)); return err }},
		} {
			api.most.Store(0)
			start := time.Now()
			require.NoError(t, c.call(), c.name)
			require.Equal(t, int64(jobs.MaxInFlight), api.most.Load(), c.name)
			rounds := (c.requests + jobs.MaxInFlight - 1) / jobs.MaxInFlight
			require.Equal(t, time.Duration(rounds)*time.Millisecond, time.Since(start), "%s: %d requests in rounds of %d", c.name, c.requests, jobs.MaxInFlight)
		}
		api.most.Store(0)
		_, err = store.GetMany(t.Context(), jobIDs(300))
		require.NoError(t, err)
		require.Equal(t, int64(3), api.most.Load(), "fewer chunks than the bound: all at once")
	})
}

// TestDynamoFirstErrorCancelsTheOtherRequests: a shard's query (or a
// chunk's BatchGetItem) that fails ends the listing (GetMany) with its
// error, naming the shard (the chunk's ids); the requests in flight are
// cancelled at once, and no other starts.
func TestDynamoFirstErrorCancelsTheOtherRequests(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var started, cancelled int
		// fail is the failing request's answer (after a millisecond); the
		// others wait an hour unless cancelled.
		answer := func(ctx context.Context, fail bool) error {
			mu.Lock()
			started++
			mu.Unlock()
			if fail {
				time.Sleep(time.Millisecond)
				return boom
			}
			err := waitOrCancel(ctx, time.Hour)
			if err != nil {
				mu.Lock()
				cancelled++
				mu.Unlock()
			}
			return err
		}
		api := &inFlightDynamo{t: t,
			query: func(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
				return &dynamodb.QueryOutput{}, answer(ctx, queryShard(in) == "3")
			},
			batchGet: func(ctx context.Context, in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
				first := in.RequestItems["jobs"].Keys[0]["job_id"].(*types.AttributeValueMemberS).Value
				return &dynamodb.BatchGetItemOutput{}, answer(ctx, first == "job-100")
			}}
		store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: api, Table: "jobs", LiveShards: 32})
		require.NoError(t, err)
		ids := jobIDs(2000)
		for _, c := range []struct {
			name, says string
			call       func() error
		}{
			{"live", "jobs: live: shard 3: boom", func() error { _, err := store.LiveAfter(t.Context(), jobs.LivePosition{}, time.Now(), 10); return err }},
			{"finished", "jobs: finished: shard 3: boom", func() error { _, err := store.Finished(t.Context(), "", time.Now(), 10); return err }},
			{"get many", "jobs: get many: ids 100 to 199: boom", func() error { _, err := store.GetMany(t.Context(), ids); return err }},
		} {
			started, cancelled = 0, 0
			start := time.Now()
			err := c.call()
			require.ErrorIs(t, err, boom, c.name)
			require.EqualError(t, err, c.says, c.name)
			require.Equal(t, time.Millisecond, time.Since(start), "%s: the others cancelled at the error", c.name)
			require.Equal(t, jobs.MaxInFlight, started, "%s: the first round only; none started after the error", c.name)
			require.Equal(t, started-1, cancelled, "%s: every other request cancelled", c.name)
		}

		// A caller's context that ends is the error.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = store.GetMany(ctx, ids)
		require.ErrorIs(t, err, context.Canceled)
		_, err = store.Live(ctx, time.Now(), 10)
		require.ErrorIs(t, err, context.Canceled)
	})
}
