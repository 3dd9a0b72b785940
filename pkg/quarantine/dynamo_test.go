package quarantine_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// batchOnly is a DynamoAPI that answers BatchGetItem from items, leaving
// the keys of the first request unprocessed, and refuses everything else:
// DynamoDB Local never leaves keys unprocessed, so this is where that path
// is checked.
type batchOnly struct {
	items    map[[2]string]map[string]types.AttributeValue
	requests [][]map[string]types.AttributeValue
}

var errNotHere = errors.New("batchOnly: not implemented")

func (f *batchOnly) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	ka := in.RequestItems["quarantine"]
	if len(in.RequestItems) != 1 || !aws.ToBool(ka.ConsistentRead) || len(ka.Keys) > 100 {
		return nil, fmt.Errorf("batchOnly: want one table, consistent, at most 100 keys: %+v", in.RequestItems)
	}
	f.requests = append(f.requests, ka.Keys)
	if len(f.requests) == 1 {
		return &dynamodb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
	}
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for _, k := range ka.Keys {
		pk := k[quarantine.KeyHold].(*types.AttributeValueMemberS).Value
		sk := k[quarantine.KeySort].(*types.AttributeValueMemberS).Value
		if item, ok := f.items[[2]string{pk, sk}]; ok {
			out.Responses["quarantine"] = append(out.Responses["quarantine"], item)
		}
	}
	return out, nil
}

func (f *batchOnly) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errNotHere
}

func (f *batchOnly) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errNotHere
}

func (f *batchOnly) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errNotHere
}

func (f *batchOnly) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errNotHere
}

func (f *batchOnly) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errNotHere
}

var _ quarantine.DynamoAPI = (*batchOnly)(nil)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func TestDynamoReadSplitsItsKeysAndAsksAgainForUnprocessedOnes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	f := &batchOnly{items: map[[2]string]map[string]types.AttributeValue{
		{"orders.fifo#g", quarantine.SortHold}: {
			quarantine.KeyHold: s("orders.fifo#g"), quarantine.KeySort: s(quarantine.SortHold),
			"queue": s("orders.fifo"), "group": s("g"), "state": s("draining"), "epoch": n(3), "parked": n(2),
			"version": n(9), quarantine.AttrHeldAt: n(at.UnixMilli()), "updated_at": n(at.UnixMilli() + 1500),
			"from": s("1"), "through": s("2"), quarantine.AttrHeldQueue: s("orders.fifo"),
		},
	}}
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: f, Table: "quarantine"})
	require.NoError(t, err)
	var keys []quarantine.ItemKey
	for i := range 150 {
		keys = append(keys, quarantine.ItemKey{Group: "g", Sequence: strconv.Itoa(i)})
	}
	holds, items, err := store.Read(t.Context(), "orders.fifo", []string{"g", "g", "h"}, append(keys, keys[:10]...))
	require.NoError(t, err)
	require.Empty(t, items)
	require.Equal(t, map[string]quarantine.HoldRecord{"g": {
		Queue: "orders.fifo", Group: "g", State: quarantine.StateDraining, Epoch: 3, Parked: 2,
		From: "1", Through: "2", HeldAt: at, UpdatedAt: at.Add(1500 * time.Millisecond),
	}}, holds)
	var sizes []int
	for _, r := range f.requests {
		sizes = append(sizes, len(r))
	}
	// 152 distinct keys: 100 left unprocessed and asked again, then 52.
	require.Equal(t, []int{100, 100, 52}, sizes)
}

func TestDynamoStoreRefusesWhatOneTableCannotHold(t *testing.T) {
	t.Parallel()
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: &batchOnly{}, Table: "quarantine"})
	require.NoError(t, err)
	ctx := t.Context()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

	// A queue name with '#' would share a partition key with another
	// queue's group.
	_, err = store.Hold(ctx, "a#b", "c")
	require.ErrorContains(t, err, "contains '#'")
	require.NotErrorIs(t, err, quarantine.ErrNoHold)

	// One transaction holds 99 messages and the hold.
	var many []quarantine.Parked
	for i := range quarantine.MaxParkMessages + 1 {
		k, err := quarantine.SeqKey(strconv.Itoa(i + 1))
		require.NoError(t, err)
		many = append(many, quarantine.Parked{Sequence: k})
	}
	_, err = store.Park(ctx, "orders.fifo", "g", many, true, "boom", at)
	require.ErrorContains(t, err, "more than the 99 messages")

	// A record that is not a hold's is an error, not a hold.
	f := &batchOnly{items: map[[2]string]map[string]types.AttributeValue{
		{"orders.fifo#g", quarantine.SortHold}: {
			quarantine.KeyHold: s("orders.fifo#g"), quarantine.KeySort: s(quarantine.SortHold),
			"queue": s("orders.fifo"), "group": s("g"), "state": s("paused"),
		},
	}}
	other, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: f, Table: "quarantine"})
	require.NoError(t, err)
	_, _, err = other.Read(ctx, "orders.fifo", []string{"g"}, nil)
	require.ErrorContains(t, err, `hold record "orders.fifo#g"`)
}
