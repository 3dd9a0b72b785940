package localesm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"
)

// fakeShard is a shard of fakeStreams: its records' keys, and whether it
// is closed (a closed shard's iterator ends after its last record).
type fakeShard struct {
	id, parent string
	keys       []string
	closed     bool
}

// fakeStreams serves shards from memory. Iterators are "shard/position".
type fakeStreams struct {
	mu         sync.Mutex
	shards     []fakeShard
	expireOnce map[string]bool // shards whose first GetRecords fails with an expired iterator
	iterTypes  map[string][]streamtypes.ShardIteratorType
}

func (f *fakeStreams) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	desc := &streamtypes.StreamDescription{StreamArn: in.StreamArn}
	for _, s := range f.shards {
		sh := streamtypes.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &streamtypes.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		if s.closed {
			sh.SequenceNumberRange.EndingSequenceNumber = aws.String("999")
		}
		desc.Shards = append(desc.Shards, sh)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStreams) shard(id string) fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	panic("no shard " + id)
}

func (f *fakeStreams) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := aws.ToString(in.ShardId)
	f.iterTypes[id] = append(f.iterTypes[id], in.ShardIteratorType)
	pos := 0
	switch in.ShardIteratorType {
	case streamtypes.ShardIteratorTypeLatest:
		pos = len(f.shard(id).keys)
	case streamtypes.ShardIteratorTypeAfterSequenceNumber:
		_, seq, _ := strings.Cut(aws.ToString(in.SequenceNumber), "-")
		n, _ := strconv.Atoi(seq)
		pos = n + 1
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s/%d", id, pos))}, nil
}

func (f *fakeStreams) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, p, _ := strings.Cut(aws.ToString(in.ShardIterator), "/")
	if f.expireOnce[id] {
		delete(f.expireOnce, id)
		return nil, &streamtypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	pos, _ := strconv.Atoi(p)
	s := f.shard(id)
	end := min(len(s.keys), pos+int(aws.ToInt32(in.Limit)))
	out := &dynamodbstreams.GetRecordsOutput{}
	for i := pos; i < end; i++ {
		seq := fmt.Sprintf("%s-%d", id, i) // unique per shard; position recoverable
		out.Records = append(out.Records, streamtypes.Record{
			EventName: streamtypes.OperationTypeInsert,
			Dynamodb: &streamtypes.StreamRecord{
				SequenceNumber: aws.String(seq),
				Keys:           map[string]streamtypes.AttributeValue{"job_id": &streamtypes.AttributeValueMemberS{Value: s.keys[i]}},
			},
		})
	}
	if !s.closed || end < len(s.keys) {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s/%d", id, end))
	}
	return out, nil
}

var _ StreamsAPI = (*fakeStreams)(nil)

type invocationLog struct {
	mu    sync.Mutex
	order []string // job ids in invocation order
	calls int
}

func (l *invocationLog) handler(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	for _, r := range ev.Records {
		l.order = append(l.order, r.Change.Keys["job_id"].String())
	}
	return events.DynamoDBEventResponse{}, nil
}

func (l *invocationLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

func TestStreamReadsParentShardsBeforeChildren(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{
			shards: []fakeShard{
				// Described child first: order in the description must not matter.
				{id: "child", parent: "parent", keys: []string{"c1", "c2"}},
				{id: "parent", parent: "grandparent-trimmed", keys: []string{"p1", "p2", "p3"}, closed: true},
			},
			expireOnce: map[string]bool{"child": true},
			iterTypes:  map[string][]streamtypes.ShardIteratorType{},
		}
		var log invocationLog
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(log.handler), StreamARN: testStreamARN, BatchSize: 2, PollInterval: 5 * time.Millisecond})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		waitFor(t, time.Minute, "five records", func() bool { return len(log.seen()) >= 5 })
		cancel()
		require.NoError(t, <-done)

		require.Equal(t, []string{"p1", "p2", "p3", "c1", "c2"}, log.seen(), "a child shard is read only after its parent")
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Equal(t, []streamtypes.ShardIteratorType{streamtypes.ShardIteratorTypeTrimHorizon, streamtypes.ShardIteratorTypeTrimHorizon},
			f.iterTypes["child"], "an expired iterator is replaced")
	})
}

func TestStreamLatestSkipsClosedShardsAndStartsAtTheTip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{
			shards: []fakeShard{
				{id: "old", keys: []string{"o1"}, closed: true},
				{id: "open", parent: "old", keys: []string{"n1"}},
			},
			iterTypes: map[string][]streamtypes.ShardIteratorType{},
		}
		var log invocationLog
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(log.handler), StreamARN: testStreamARN, StartingPosition: Latest, PollInterval: 5 * time.Millisecond})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		waitFor(t, time.Minute, "the open shard to be read", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return len(f.iterTypes["open"]) > 0
		})
		f.mu.Lock()
		f.shards[1].keys = append(f.shards[1].keys, "n2") // written after the mapping started
		f.mu.Unlock()
		waitFor(t, time.Minute, "the new record to be invoked", func() bool { return len(log.seen()) >= 1 })
		cancel()
		require.NoError(t, <-done)
		require.Equal(t, []string{"n2"}, log.seen())
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Empty(t, f.iterTypes["old"], "a shard closed before a LATEST mapping starts is not read")
		require.Equal(t, streamtypes.ShardIteratorTypeLatest, f.iterTypes["open"][0])
	})
}
