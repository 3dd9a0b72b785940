//go:build integration

package quarantine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

type dynamoBundle struct {
	client  *dynamodb.Client
	table   string
	counter *awstest.Requests
	faults  *awstest.LostResponses
}

// setupDynamo creates a table of quarantine.Table's shape (its keys and
// index; template.yaml's QuarantineTable is held to the same shape) with
// TTL on quarantine.AttrExpiresAt, unique to the test, and a client that
// counts requests and can lose responses.
func setupDynamo(t *testing.T) *dynamoBundle {
	t.Helper()
	b := &dynamoBundle{counter: &awstest.Requests{}, faults: &awstest.LostResponses{}}
	b.client = awstest.DynamoDB(t, func(o *dynamodb.Options) { // fails the test unless an endpoint is configured
		o.APIOptions = append(o.APIOptions, b.counter.Count(""), b.faults.Install)
		// DynamoDB Local sends no X-Amz-Crc32 with error responses.
		o.DisableValidateResponseChecksum = true
	})
	b.table = awstest.Table(t, b.client, quarantine.Table(awstest.Name(t, "quarantine")), quarantine.AttrExpiresAt)

	desc, err := b.client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(b.table)})
	require.NoError(t, err)
	require.Len(t, desc.Table.GlobalSecondaryIndexes, 1)
	require.Equal(t, quarantine.HeldIndex, aws.ToString(desc.Table.GlobalSecondaryIndexes[0].IndexName))
	ttl, err := b.client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(b.table)})
	require.NoError(t, err)
	require.Equal(t, quarantine.AttrExpiresAt, aws.ToString(ttl.TimeToLiveDescription.AttributeName))
	b.counter.Take()
	return b
}

// setupStore is a DynamoStore on a table of the test's own, and a queue
// name for the test (prefix and the end of the test's name).
func setupStore(t *testing.T, prefix string) (*dynamoBundle, *quarantine.DynamoStore, string) {
	t.Helper()
	b := setupDynamo(t)
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: b.client, Table: b.table})
	require.NoError(t, err)
	return b, store, queueFor(t, prefix)
}

func queueFor(t *testing.T, prefix string) string {
	return prefix + "-" + strings.ToLower(t.Name()[len(t.Name())-6:]) + ".fifo"
}

func TestDynamoStoreConformance(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	quarantinetest.Run(t, func(t *testing.T) quarantine.Store {
		store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: b.client, Table: b.table})
		require.NoError(t, err)
		return store
	})
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func seqKey(t *testing.T, n string) string {
	t.Helper()
	k, err := quarantine.SeqKey(n)
	require.NoError(t, err)
	return k
}

// rawItem reads an item as the table keeps it.
func (b *dynamoBundle) rawItem(t *testing.T, pk, sk string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := b.client.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(b.table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			quarantine.KeyHold: &ddbtypes.AttributeValueMemberS{Value: pk},
			quarantine.KeySort: &ddbtypes.AttributeValueMemberS{Value: sk},
		},
	})
	require.NoError(t, err)
	return out.Item
}

func attrS(t *testing.T, item map[string]ddbtypes.AttributeValue, name string) (string, bool) {
	t.Helper()
	v, ok := item[name]
	if !ok {
		return "", false
	}
	s, ok := v.(*ddbtypes.AttributeValueMemberS)
	require.True(t, ok, "%s is a %T", name, v)
	return s.Value, true
}

func attrN(t *testing.T, item map[string]ddbtypes.AttributeValue, name string) (string, bool) {
	t.Helper()
	v, ok := item[name]
	if !ok {
		return "", false
	}
	n, ok := v.(*ddbtypes.AttributeValueMemberN)
	require.True(t, ok, "%s is a %T", name, v)
	return n.Value, true
}

// TestDynamoLayout checks the items as the package documentation and the
// template describe them: keys, the sparse index attribute, and the TTL of
// tombstones.
func TestDynamoLayout(t *testing.T) {
	t.Parallel()
	b, store, queue := setupStore(t, "layout")
	ctx := t.Context()
	pk := queue + "#g#1"
	one, two := seqKey(t, "1"), seqKey(t, "2")

	_, err := store.Park(ctx, queue, "g#1", []quarantine.Parked{{Sequence: one, Body: "a"}, {Sequence: two, Body: "b"}}, true, "boom", t0)
	require.NoError(t, err)
	hold := b.rawItem(t, pk, quarantine.SortHold)
	q, ok := attrS(t, hold, quarantine.AttrHeldQueue)
	require.True(t, ok, "a held hold is in the held index")
	require.Equal(t, queue, q)
	at, ok := attrN(t, hold, quarantine.AttrHeldAt)
	require.True(t, ok)
	require.Equal(t, t0.UnixMilli(), mustInt(t, at))
	_, ok = hold[quarantine.AttrExpiresAt]
	require.False(t, ok, "a held hold does not expire")
	msg := b.rawItem(t, pk, quarantine.MessagePrefix+one)
	require.NotEmpty(t, msg)
	_, ok = msg[quarantine.AttrExpiresAt]
	require.False(t, ok, "a parked message does not expire")

	_, err = store.BeginRedrive(ctx, queue, "g#1", t0.Add(time.Minute))
	require.NoError(t, err)
	done := t0.Add(2 * time.Minute)
	_, err = store.Done(ctx, queue, "g#1", one, 1, done)
	require.NoError(t, err)
	exp, ok := attrN(t, b.rawItem(t, pk, quarantine.MessagePrefix+one), quarantine.AttrExpiresAt)
	require.True(t, ok, "a message done is a tombstone with a TTL")
	require.Equal(t, done.Add(quarantine.TombstoneTTL).Unix(), mustInt(t, exp))
	_, ok = b.rawItem(t, pk, quarantine.SortHold)[quarantine.AttrHeldQueue]
	require.True(t, ok, "a draining hold is in the held index")

	released := t0.Add(3 * time.Minute)
	h, err := store.Discard(ctx, queue, "g#1", two, released)
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
	hold = b.rawItem(t, pk, quarantine.SortHold)
	_, ok = hold[quarantine.AttrHeldQueue]
	require.False(t, ok, "a released hold leaves the held index")
	exp, ok = attrN(t, hold, quarantine.AttrExpiresAt)
	require.True(t, ok, "a released hold is a tombstone with a TTL")
	require.Equal(t, released.Add(quarantine.TombstoneTTL).Unix(), mustInt(t, exp))
	holds, err := store.Holds(ctx, queue)
	require.NoError(t, err)
	require.Empty(t, holds)

	// Held anew (a new message parked; a park of nothing new holds
	// nothing): the TTL is gone again.
	_, err = store.Park(ctx, queue, "g#1", []quarantine.Parked{{Sequence: seqKey(t, "9")}}, true, "again", released.Add(time.Minute))
	require.NoError(t, err)
	hold = b.rawItem(t, pk, quarantine.SortHold)
	_, ok = hold[quarantine.AttrExpiresAt]
	require.False(t, ok)
	_, ok = hold[quarantine.AttrHeldQueue]
	require.True(t, ok)
}

// TestDynamoRedriveNamesTheOldestParkedOfAHoldWithoutNext: a hold record
// written before holds kept their next (the attribute "next") names no
// message whose copy may run, so every copy would hold the group again. A
// redrive of such a hold reads the oldest message still parked, from the
// hold's first, and names it: the redrive repairs the record. A hold that
// names its next is not read again.
func TestDynamoRedriveNamesTheOldestParkedOfAHoldWithoutNext(t *testing.T) {
	t.Parallel()
	b, store, queue := setupStore(t, "upgrade")
	ctx := t.Context()
	var parked []quarantine.Parked
	for _, n := range []string{"3", "4", "5", "7"} {
		parked = append(parked, quarantine.Parked{Sequence: seqKey(t, n)})
	}
	_, err := store.Park(ctx, queue, "g", parked, true, "boom", t0)
	require.NoError(t, err)
	for _, n := range []string{"3", "4"} { // done and discarded messages come first: paged past
		_, err = store.Discard(ctx, queue, "g", seqKey(t, n), t0)
		require.NoError(t, err)
	}
	_, err = b.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.table),
		Key: map[string]ddbtypes.AttributeValue{
			quarantine.KeyHold: &ddbtypes.AttributeValueMemberS{Value: queue + "#g"}, quarantine.KeySort: &ddbtypes.AttributeValueMemberS{Value: quarantine.SortHold},
		},
		UpdateExpression: aws.String("REMOVE #n"), ExpressionAttributeNames: map[string]string{"#n": "next"},
	})
	require.NoError(t, err)
	old, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Empty(t, old.Next)
	// A later message parked meanwhile is not named next over the older
	// ones.
	old, err = store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: seqKey(t, "8")}}, false, "", t0)
	require.NoError(t, err)
	require.Empty(t, old.Next)

	b.counter.Take()
	h, err := store.BeginRedrive(ctx, queue, "g", t0.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"GetItem": 1, "Query": 2, "PutItem": 1}, b.counter.Take(), "the hold, a page of one message (3, discarded), one of ten (4 discarded, then 5), the write")
	require.Equal(t, seqKey(t, "5"), h.Next)
	require.Equal(t, quarantine.StateDraining, h.State)
	got, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	require.Equal(t, h, got)
	h, err = store.Done(ctx, queue, "g", seqKey(t, "5"), h.Epoch, t0.Add(2*time.Minute))
	require.NoError(t, err, "the copy of the oldest runs")
	require.Equal(t, seqKey(t, "7"), h.Next)

	b.counter.Take()
	_, err = store.BeginRedrive(ctx, queue, "g", t0.Add(3*time.Minute))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"GetItem": 1, "PutItem": 1}, b.counter.Take(), "a hold that names its next is not read again")
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', "not a number: %q", s)
		n = n*10 + int64(c-'0')
	}
	return n
}

// TestDynamoRequestCounts measures what each operation costs in requests.
func TestDynamoRequestCounts(t *testing.T) {
	t.Parallel()
	b, store, queue := setupStore(t, "counts")
	ctx := t.Context()
	measure := func(op string, want map[string]int, call func() error) {
		t.Helper()
		b.counter.Take()
		require.NoError(t, call(), op)
		require.Equal(t, want, b.counter.Take(), op)
	}
	parked := []quarantine.Parked{{Sequence: seqKey(t, "1")}, {Sequence: seqKey(t, "2")}, {Sequence: seqKey(t, "3")}}
	measure("park", map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}, func() error {
		_, err := store.Park(ctx, queue, "g", parked, true, "boom", t0)
		return err
	})
	measure("park again (nothing new)", map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}, func() error {
		_, err := store.Park(ctx, queue, "g", parked, false, "", t0)
		return err
	})
	measure("redrive", map[string]int{"GetItem": 1, "PutItem": 1}, func() error {
		_, err := store.BeginRedrive(ctx, queue, "g", t0)
		return err
	})
	// The hold's next, the oldest message parked after the one done, is
	// read with a query, but for the last one parked.
	measure("done", map[string]int{"GetItem": 1, "Query": 1, "TransactWriteItems": 1}, func() error {
		_, err := store.Done(ctx, queue, "g", seqKey(t, "1"), 1, t0)
		return err
	})
	measure("read", map[string]int{"BatchGetItem": 1}, func() error {
		_, _, err := store.Read(ctx, queue, []string{"g"}, []quarantine.ItemKey{{Group: "g", Sequence: seqKey(t, "1")}})
		return err
	})
	measure("holds", map[string]int{"Query": 1, "BatchGetItem": 1}, func() error {
		_, err := store.Holds(ctx, queue)
		return err
	})
	measure("refused done", map[string]int{"GetItem": 1}, func() error {
		_, err := store.Done(ctx, queue, "g", seqKey(t, "2"), 7, t0)
		if errors.Is(err, quarantine.ErrConflict) {
			return nil
		}
		return err
	})
	measure("discard of the next, then of the last", map[string]int{"GetItem": 2, "Query": 1, "TransactWriteItems": 2}, func() error {
		if _, err := store.Discard(ctx, queue, "g", seqKey(t, "2"), t0); err != nil {
			return err
		}
		h, err := store.Discard(ctx, queue, "g", seqKey(t, "3"), t0)
		if err == nil && h.State != quarantine.StateReleased {
			return errors.New("not released")
		}
		return err
	})
}

// TestDynamoLostResponsesAreRecognised applies each write, loses its
// answer, and lets the SDK retry it: the write must count once and report
// success, as the memory store does.
func TestDynamoLostResponsesAreRecognised(t *testing.T) {
	t.Parallel()
	b, store, queue := setupStore(t, "lost")
	ctx := t.Context()
	one, two := seqKey(t, "1"), seqKey(t, "2")

	lost := func(op, api string, call func() (quarantine.HoldRecord, error)) quarantine.HoldRecord {
		t.Helper()
		fired := b.faults.Fired()
		b.counter.Take()
		b.faults.Arm(api)
		h, err := call()
		require.NoError(t, err, "%s after a lost answer", op)
		require.Equal(t, fired+1, b.faults.Fired(), "%s: the fault fired", op)
		t.Logf("%s after a lost answer: requests %v", op, b.counter.Take())
		got, err := store.Hold(ctx, queue, "g")
		require.NoError(t, err)
		require.Equal(t, got, h, op)
		return h
	}
	h := lost("park", "TransactWriteItems", func() (quarantine.HoldRecord, error) {
		return store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: one}, {Sequence: two}}, true, "boom", t0)
	})
	require.Equal(t, int64(2), h.Parked)
	h = lost("redrive", "PutItem", func() (quarantine.HoldRecord, error) {
		return store.BeginRedrive(ctx, queue, "g", t0.Add(time.Second))
	})
	require.Equal(t, int64(1), h.Epoch, "a redrive whose answer was lost raised the epoch once")
	h = lost("done", "TransactWriteItems", func() (quarantine.HoldRecord, error) {
		return store.Done(ctx, queue, "g", one, 1, t0.Add(2*time.Second))
	})
	require.Equal(t, int64(1), h.Parked)
	h = lost("discard", "TransactWriteItems", func() (quarantine.HoldRecord, error) {
		return store.Discard(ctx, queue, "g", two, t0.Add(3*time.Second))
	})
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
}

// replayAPI is the table's client, but the next TransactWriteItems it is
// armed for is sent twice, the second time under a new client request
// token and its answer the one returned: a retry DynamoDB does not take
// for the first try (its token window of ten minutes is over), which the
// store must still recognise as its own write.
type replayAPI struct {
	*dynamodb.Client
	armed bool
}

func (r *replayAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if !r.armed {
		return r.Client.TransactWriteItems(ctx, in, optFns...)
	}
	r.armed = false
	if _, err := r.Client.TransactWriteItems(ctx, in, optFns...); err != nil {
		return nil, err
	}
	again := *in
	again.ClientRequestToken = nil // the SDK fills in a new one
	return r.Client.TransactWriteItems(ctx, &again, optFns...)
}

func TestDynamoRetriesOutsideTheTokenWindowAreRecognised(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	api := &replayAPI{Client: b.client}
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: api, Table: b.table})
	require.NoError(t, err)
	ctx := t.Context()
	queue := queueFor(t, "replay")
	one, two := seqKey(t, "1"), seqKey(t, "2")
	replayed := func(op string, call func() (quarantine.HoldRecord, error)) quarantine.HoldRecord {
		t.Helper()
		b.counter.Take()
		api.armed = true
		h, err := call()
		require.NoError(t, err, "%s replayed", op)
		require.False(t, api.armed)
		require.Equal(t, 2, b.counter.Take()["TransactWriteItems"], "%s: the replay was recognised without another write", op)
		got, err := store.Hold(ctx, queue, "g")
		require.NoError(t, err)
		require.Equal(t, got, h, op)
		return h
	}
	h := replayed("park", func() (quarantine.HoldRecord, error) {
		return store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: one}, {Sequence: two}}, true, "boom", t0)
	})
	require.Equal(t, int64(2), h.Parked)
	_, err = store.BeginRedrive(ctx, queue, "g", t0.Add(time.Second))
	require.NoError(t, err)
	h = replayed("done", func() (quarantine.HoldRecord, error) {
		return store.Done(ctx, queue, "g", one, 1, t0.Add(2*time.Second))
	})
	require.Equal(t, int64(1), h.Parked)
	require.Equal(t, quarantine.StateDraining, h.State)
	h = replayed("discard", func() (quarantine.HoldRecord, error) {
		return store.Discard(ctx, queue, "g", two, t0.Add(3*time.Second))
	})
	require.Equal(t, quarantine.StateReleased, h.State)

	// A replay that is not the store's own write is still refused: Done
	// of a message an operator discarded in between.
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: seqKey(t, "3")}}, true, "again", t0.Add(4*time.Second))
	require.NoError(t, err)
	_, err = store.BeginRedrive(ctx, queue, "g", t0.Add(5*time.Second))
	require.NoError(t, err)
	_, err = store.Discard(ctx, queue, "g", seqKey(t, "3"), t0.Add(6*time.Second))
	require.NoError(t, err)
	_, err = store.Done(ctx, queue, "g", seqKey(t, "3"), 2, t0.Add(6*time.Second))
	require.ErrorIs(t, err, quarantine.ErrNoHold)
}

// TestS3Bodies keeps bodies in a bucket of the test's own on the local S3.
func TestS3Bodies(t *testing.T) {
	t.Parallel()
	client := awstest.S3(t)
	bucket := awstest.Name(t, "bodies")
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if region := awstest.Config(t).Region; region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
	}
	_, err := client.CreateBucket(t.Context(), in)
	require.NoError(t, err)
	var keys []string
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range keys {
			_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
			require.NoError(t, err)
		}
		_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
		require.NoError(t, err)
	})
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: client, Bucket: bucket})
	require.NoError(t, err)
	ctx := t.Context()

	key := quarantine.BodyKey("orders.fifo", "group/with spaces#1", seqKey(t, "42"))
	body := strings.Repeat("héllo ✓ ", 40_000) // 400 KB, larger than a DynamoDB item
	keys = append(keys, key)
	require.NoError(t, bodies.PutBody(ctx, key, body))
	got, err := bodies.GetBody(ctx, key)
	require.NoError(t, err)
	require.Equal(t, body, got)

	// A second put of the key replaces it (an archive rewritten by a
	// retried discard).
	require.NoError(t, bodies.PutBody(ctx, key, "short"))
	got, err = bodies.GetBody(ctx, key)
	require.NoError(t, err)
	require.Equal(t, "short", got)

	empty := quarantine.ArchiveKey("orders.fifo", "g", seqKey(t, "7"))
	keys = append(keys, empty)
	require.NoError(t, bodies.PutBody(ctx, empty, ""))
	got, err = bodies.GetBody(ctx, empty)
	require.NoError(t, err)
	require.Empty(t, got)

	_, err = bodies.GetBody(ctx, "quarantine/nothing/here.body")
	require.ErrorIs(t, err, quarantine.ErrNoBody)
	require.Contains(t, err.Error(), "quarantine/nothing/here.body")
}
