package projection_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
)

// scriptedDynamo answers TransactWriteItems from a script (nil: success)
// and GetItem with item, and records every request. It reaches the paths a
// real table takes only under races or on endpoints that ignore
// ReturnValuesOnConditionCheckFailure; the tables themselves are held to
// the conformance suite in dynamo_integration_test.go.
type scriptedDynamo struct {
	mu        sync.Mutex
	transact  []error
	item      map[string]types.AttributeValue
	updates   []*dynamodb.UpdateItemInput
	txs       []*dynamodb.TransactWriteItemsInput
	gets      []*dynamodb.GetItemInput
	batchGets []*dynamodb.BatchGetItemInput
	puts      []*dynamodb.PutItemInput
	put       error // PutItem's answer
	scans     []*dynamodb.ScanInput
	scanned   []map[string]types.AttributeValue // Scan's answer
	// batch answers BatchGetItem (nil: nothing found).
	batch func(*dynamodb.BatchGetItemInput) *dynamodb.BatchGetItemOutput
	// gotItems answer GetItem in turn, then item.
	gotItems []map[string]types.AttributeValue
}

func (s *scriptedDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets = append(s.gets, in)
	if len(s.gotItems) > 0 {
		item := s.gotItems[0]
		s.gotItems = s.gotItems[1:]
		return &dynamodb.GetItemOutput{Item: item}, nil
	}
	return &dynamodb.GetItemOutput{Item: s.item}, nil
}

func (s *scriptedDynamo) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, in)
	return &dynamodb.UpdateItemOutput{}, nil
}

func (s *scriptedDynamo) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batchGets = append(s.batchGets, in)
	if s.batch != nil {
		return s.batch(in), nil
	}
	return &dynamodb.BatchGetItemOutput{}, nil
}

func (s *scriptedDynamo) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts = append(s.puts, in)
	return &dynamodb.PutItemOutput{}, s.put
}

func (s *scriptedDynamo) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scans = append(s.scans, in)
	return &dynamodb.ScanOutput{Items: s.scanned}, nil
}

func (s *scriptedDynamo) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txs = append(s.txs, in)
	if len(s.transact) == 0 {
		return &dynamodb.TransactWriteItemsOutput{}, nil
	}
	err := s.transact[0]
	s.transact = s.transact[1:]
	return nil, err
}

// cancelled is a cancelled transaction with one reason code per item ("" is
// None).
func cancelled(codes ...string) error {
	e := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled")}
	for _, c := range codes {
		e.CancellationReasons = append(e.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
	}
	return e
}

func cursorItem(version, progress int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"tenant": &types.AttributeValueMemberS{Value: "t-1"}, "key": &types.AttributeValueMemberS{Value: "cursor#job-42"},
		"job_id": &types.AttributeValueMemberS{Value: "job-42"}, "status": &types.AttributeValueMemberS{Value: "running"},
		"version":  &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
		"progress": &types.AttributeValueMemberN{Value: strconv.FormatInt(progress, 10)},
	}
}

var tables = projection.Tables{Views: "views", Totals: "totals"}

// TestDynamoApplyFencesEveryWrite pins the conditions that make Apply safe
// to repeat and to race: the view is written only over an older version,
// the cursor moves only from a version behind the event's, at the
// progress the event's delta starts from, and not from a final status (or
// from none, when that progress is 0), and a refused cursor returns its
// old item. Cursor and total are in the job's shard.
func TestDynamoApplyFencesEveryWrite(t *testing.T) {
	t.Parallel()
	api := &scriptedDynamo{}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	evs := projectiontest.Lifecycle("job-42", "t-1")
	for _, i := range []int{1, 2} {
		_, err := store.Apply(t.Context(), projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
	}
	require.Len(t, api.updates, 2)
	view := api.updates[1]
	require.Equal(t, "views", aws.ToString(view.TableName))
	require.Equal(t, "attribute_not_exists(#version) OR #version < :version", aws.ToString(view.ConditionExpression))
	require.Equal(t, &types.AttributeValueMemberN{Value: "3"}, view.ExpressionAttributeValues[":version"])

	require.Len(t, api.txs, 2)
	second, third := api.txs[0].TransactItems, api.txs[1].TransactItems
	require.Len(t, third, 2)
	const live = "#version < :version AND #progress = :prev_progress AND NOT (#status IN (:completed, :failed, :cancelled))"
	require.Equal(t, "attribute_not_exists(#version) OR ("+live+")", aws.ToString(second[0].Update.ConditionExpression),
		"v2 starts from progress 0: no cursor is that state too")
	cursor := third[0].Update
	require.Equal(t, "totals", aws.ToString(cursor.TableName))
	shard := "t-1#" + strconv.Itoa(projection.ShardOf("job-42", projection.DefaultShards))
	require.Equal(t, shard, cursor.Key["tenant"].(*types.AttributeValueMemberS).Value)
	require.Equal(t, "cursor#job-42", cursor.Key["key"].(*types.AttributeValueMemberS).Value)
	require.Equal(t, live, aws.ToString(cursor.ConditionExpression))
	require.Equal(t, &types.AttributeValueMemberN{Value: "3"}, cursor.ExpressionAttributeValues[":version"])
	require.Equal(t, &types.AttributeValueMemberN{Value: "10"}, cursor.ExpressionAttributeValues[":prev_progress"],
		"v3's progress 30 minus its delta 20")
	require.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, cursor.ReturnValuesOnConditionCheckFailure)
	total := third[1].Update
	require.Equal(t, shard, total.Key["tenant"].(*types.AttributeValueMemberS).Value)
	require.Equal(t, "total", total.Key["key"].(*types.AttributeValueMemberS).Value)
	require.Equal(t, "ADD #processed :processed, #completed :completed", aws.ToString(total.UpdateExpression))
	require.Equal(t, &types.AttributeValueMemberN{Value: "20"}, total.ExpressionAttributeValues[":processed"])
}

// TestDynamoApplyWritesOnlyWhatAnEventAdds: an event that adds nothing
// writes its view alone (no cursor, no total); a final event that adds to
// neither counter (a failure at the progress counted) moves the cursor by
// one conditional UpdateItem, no transaction; with CountEveryEvent (the
// design before sharding) every event is a transaction of cursor and
// total, and with one shard the partition key is the tenant.
func TestDynamoApplyWritesOnlyWhatAnEventAdds(t *testing.T) {
	t.Parallel()
	evs := projectiontest.Failing("job-44", "t-1") // started, 7, failed at 7
	api := &scriptedDynamo{}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	outcomes := []projection.Outcome{projection.Skipped, projection.Applied, projection.Applied}
	for i := range evs {
		res, err := store.Apply(t.Context(), projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
		require.Equal(t, outcomes[i], res.Outcome, evs[i].EventID)
	}
	require.Len(t, api.txs, 1, "v2 alone adds: one transaction")
	require.Len(t, api.updates, 4, "three views and the failure's cursor")
	failed := api.updates[3]
	require.Equal(t, "totals", aws.ToString(failed.TableName))
	require.Equal(t, "cursor#job-44", failed.Key["key"].(*types.AttributeValueMemberS).Value)
	require.Contains(t, aws.ToString(failed.ConditionExpression), "#version < :version AND #progress = :prev_progress")
	require.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, failed.ReturnValuesOnConditionCheckFailure)

	api = &scriptedDynamo{}
	store, err = projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables, Shards: 1, CountEveryEvent: true})
	require.NoError(t, err)
	for i := range evs {
		res, err := store.Apply(t.Context(), projection.ViewOfEvent(&evs[i]), evs[i].Delta)
		require.NoError(t, err)
		require.Equal(t, projection.Applied, res.Outcome, evs[i].EventID)
	}
	require.Len(t, api.txs, 3, "every event, as before sharding")
	require.Len(t, api.updates, 3, "the views")
	for _, tx := range api.txs {
		require.Len(t, tx.TransactItems, 2)
		for _, it := range tx.TransactItems {
			require.Equal(t, "t-1", it.Update.Key["tenant"].(*types.AttributeValueMemberS).Value, "one shard: the tenant is the key")
		}
	}
}

// TestDynamoTotalsReadEveryShardConsistently: the totals of a tenant are
// one BatchGetItem of its shards' total items, strongly consistent, in
// calls of at most 100 keys; one shard is one GetItem.
func TestDynamoTotalsReadEveryShardConsistently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ shards, calls, last int }{{0, 1, 32}, {100, 1, 100}, {101, 2, 1}, {256, 3, 56}} {
		api := &scriptedDynamo{}
		store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables, Shards: tc.shards})
		require.NoError(t, err)
		_, err = store.Totals(t.Context(), "t-1")
		require.NoError(t, err)
		require.Len(t, api.batchGets, tc.calls, "%d shards", tc.shards)
		last := api.batchGets[tc.calls-1].RequestItems["totals"]
		require.Len(t, last.Keys, tc.last)
		require.True(t, aws.ToBool(last.ConsistentRead))
		require.Empty(t, api.gets)
	}
	api := &scriptedDynamo{}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables, Shards: 1})
	require.NoError(t, err)
	_, err = store.Totals(t.Context(), "t-1")
	require.NoError(t, err)
	require.Empty(t, api.batchGets)
	require.Len(t, api.gets, 1)
	require.Equal(t, "t-1", api.gets[0].Key["tenant"].(*types.AttributeValueMemberS).Value)
}

// TestDynamoConfigRefusesAShardCountOutOfRange tests the bounds at their
// values.
func TestDynamoConfigRefusesAShardCountOutOfRange(t *testing.T) {
	t.Parallel()
	for shards, ok := range map[int]bool{-1: false, 0: true, 1: true, projection.MaxShards: true, projection.MaxShards + 1: false} {
		_, err := projection.NewDynamoStore(projection.DynamoConfig{Client: &scriptedDynamo{}, Tables: tables, Shards: shards})
		if ok {
			require.NoError(t, err, "%d", shards)
			continue
		}
		require.ErrorIs(t, err, projection.ErrInvalidConfig, "%d", shards)
		require.ErrorContains(t, err, "Shards", "%d", shards)
	}
}

func TestDynamoApplyRetriesATransactionConflict(t *testing.T) {
	t.Parallel()
	api := &scriptedDynamo{transact: []error{cancelled("None", "TransactionConflict"), cancelled("TransactionConflict", "None")}}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	e := projectiontest.Lifecycle("job-42", "t-1")[1]
	res, err := store.Apply(t.Context(), projection.ViewOfEvent(&e), e.Delta)
	require.NoError(t, err)
	require.Equal(t, projection.Applied, res.Outcome)
	require.Equal(t, 2, res.Conflicts)
	require.Len(t, api.txs, 3)
}

// TestDynamoApplyReadsTheCursorARefusalDoesNotCarry covers an endpoint that
// ignores ReturnValuesOnConditionCheckFailure: one consistent read tells a
// duplicate from a gap.
func TestDynamoApplyReadsTheCursorARefusalDoesNotCarry(t *testing.T) {
	t.Parallel()
	evs := projectiontest.Lifecycle("job-42", "t-1")
	for _, tc := range []struct {
		event   int
		outcome projection.Outcome
		gap     bool
	}{
		{event: 2, outcome: projection.Older},
		{event: 4, outcome: projection.Duplicate},
		{event: 5, gap: true},
	} {
		cursor := cursorItem(5, 25)
		if tc.gap {
			cursor = cursorItem(4, 0)
		}
		api := &scriptedDynamo{transact: []error{cancelled("ConditionalCheckFailed", "None")}, item: cursor}
		store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
		require.NoError(t, err)
		e := &evs[tc.event]
		res, err := store.Apply(t.Context(), projection.ViewOfEvent(e), e.Delta)
		require.Len(t, api.gets, 1, e.EventID)
		require.True(t, aws.ToBool(api.gets[0].ConsistentRead))
		if tc.gap {
			require.Equal(t, &projection.GapError{JobID: "job-42", Cursor: 4, Version: 6}, err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.outcome, res.Outcome, e.EventID)
		require.Equal(t, int64(5), res.Cursor)
	}
}

// TestDynamoRecoverLeavesANewerViewOut: when the view holds a newer version
// than the snapshot, the recovery's transaction is cancelled by the view's
// condition and made again without it.
func TestDynamoRecoverLeavesANewerViewOut(t *testing.T) {
	t.Parallel()
	evs := projectiontest.Lifecycle("job-42", "t-1")
	api := &scriptedDynamo{transact: []error{cancelled("ConditionalCheckFailed", "None", "None")}, item: cursorItem(1, 0)}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	r, err := store.Recover(t.Context(), projection.ViewOfEvent(&evs[3]))
	require.NoError(t, err)
	require.False(t, r.ViewUpdated)
	require.Equal(t, int64(4), r.To.Version)
	require.Len(t, api.txs, 2)
	require.Len(t, api.txs[0].TransactItems, 3)
	require.Equal(t, "attribute_not_exists(#version) OR #version <= :version",
		aws.ToString(api.txs[0].TransactItems[0].Update.ConditionExpression))
	require.Len(t, api.txs[1].TransactItems, 2)
	require.Equal(t, "#version = :prev AND #progress = :prev_progress AND #status = :prev_status",
		aws.ToString(api.txs[1].TransactItems[0].Update.ConditionExpression), "the cursor as read")
}

// A refusal that carries no cursor, whose read then finds a cursor the
// event follows (it moved between the write and the read: a concurrent
// recovery put it where the event starts from), is tried again, and the
// second transaction applies: Apply never reports Applied for a write
// that did not happen.
func TestDynamoApplyTriesAgainWhenTheCursorMovedAfterTheRefusal(t *testing.T) {
	t.Parallel()
	evs := projectiontest.Lifecycle("job-42", "t-1")
	api := &scriptedDynamo{transact: []error{cancelled("ConditionalCheckFailed", "None")}, item: cursorItem(2, 10)}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	e := &evs[2] // v3, from progress 10
	res, err := store.Apply(t.Context(), projection.ViewOfEvent(e), e.Delta)
	require.NoError(t, err)
	require.Equal(t, projection.Applied, res.Outcome)
	require.Len(t, api.txs, 2, "the refused transaction and the one that applied")
	require.Len(t, api.gets, 1)
}

// Keys BatchGetItem leaves unprocessed are asked for again until none is
// left, and their totals are summed.
func TestDynamoTotalsReadsTheUnprocessedKeysAgain(t *testing.T) {
	t.Parallel()
	total := func(pk string, processed int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"tenant": &types.AttributeValueMemberS{Value: pk}, "key": &types.AttributeValueMemberS{Value: "total"},
			"processed": &types.AttributeValueMemberN{Value: strconv.Itoa(processed)}, "completed": &types.AttributeValueMemberN{Value: "1"}}
	}
	round := 0
	api := &scriptedDynamo{batch: func(in *dynamodb.BatchGetItemInput) *dynamodb.BatchGetItemOutput {
		round++
		keys := in.RequestItems["totals"]
		if round == 1 { // the first key answered, the rest left for later
			return &dynamodb.BatchGetItemOutput{
				Responses:       map[string][]map[string]types.AttributeValue{"totals": {total("t-1#0", 5)}},
				UnprocessedKeys: map[string]types.KeysAndAttributes{"totals": {Keys: keys.Keys[1:], ConsistentRead: keys.ConsistentRead}},
			}
		}
		require.Len(t, keys.Keys, 3)
		require.True(t, aws.ToBool(keys.ConsistentRead))
		return &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"totals": {total("t-1#1", 7), total("t-1#3", 11)}}}
	}}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables, Shards: 4})
	require.NoError(t, err)
	got, err := store.Totals(t.Context(), "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: 23, Completed: 3}, got)
	require.Len(t, api.batchGets, 2)
}

// A Totals table with items but no record of the shard count was written
// before the count was recorded, with one shard: a store of more is
// refused (its reads would find the old totals nowhere), one of one
// records it. An empty table is recorded at once.
func TestDynamoCheckShardsRefusesTotalsWrittenBeforeTheRecord(t *testing.T) {
	t.Parallel()
	legacy := []map[string]types.AttributeValue{{
		"tenant": &types.AttributeValueMemberS{Value: "t-1"}, "key": &types.AttributeValueMemberS{Value: "total"},
	}}
	for _, tc := range []struct {
		name    string
		shards  int
		scanned []map[string]types.AttributeValue
		refused bool
	}{
		{"legacy totals, 32 shards", 0, legacy, true},
		{"legacy totals, one shard", 1, legacy, false},
		{"an empty table", 0, nil, false},
	} {
		api := &scriptedDynamo{scanned: tc.scanned}
		store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables, Shards: tc.shards})
		require.NoError(t, err)
		err = store.CheckShards(t.Context())
		if tc.refused {
			require.ErrorIs(t, err, projection.ErrShardsChanged, tc.name)
			require.ErrorContains(t, err, "written before the count was recorded, with one shard", tc.name)
			require.Empty(t, api.puts, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Len(t, api.puts, 1, tc.name)
		if tc.shards == 1 {
			require.Empty(t, api.scans, "one shard reads legacy totals as they are")
		}
	}
	// VerifyShards records nothing: no record is ErrShardsUnrecorded.
	api := &scriptedDynamo{}
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: api, Tables: tables})
	require.NoError(t, err)
	require.ErrorIs(t, store.VerifyShards(t.Context()), projection.ErrShardsUnrecorded)
	require.Empty(t, api.puts)
}
