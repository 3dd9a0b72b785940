package kafka_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// capture processes ev and returns the records the handler saw, in the
// order they started (Concurrency 1: one lane at a time).
func capture(t *testing.T, ev events.KafkaEvent) []kafka.Record {
	t.Helper()
	var mu sync.Mutex
	var seen []kafka.Record
	p := newProcessor(t, kafka.Config{Concurrency: 1, LaneKey: func(kafka.Record) (string, bool) { return "", true },
		Handler: func(_ context.Context, r kafka.Record) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, r)
			return nil
		}})
	resp, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	return seen
}

// The event as Lambda sends it (aws-lambda-go's sample shape): each field
// decoded into a Record.
func TestRecordsAreDecodedFromTheEventLambdaSends(t *testing.T) {
	t.Parallel()
	const raw = `{"eventSource":"aws:kafka","bootstrapServers":"b-1:9092","records":{"orders-0":[
	  {"topic":"orders","partition":0,"offset":15,"timestamp":1545084650987,"timestampType":"CREATE_TIME",
	   "key":"am9iLTQy","value":"eyJrIjoxfQ==","headers":[{"trace":[118,-36,0,127,-128]},{"trace":[]},{"b":[1],"a":[2]}]},
	  {"topic":"orders","partition":0,"offset":16,"timestamp":1545084650988,"timestampType":"LOG_APPEND_TIME",
	   "key":null,"value":"","headers":[]},
	  {"topic":"orders","partition":0,"offset":17,"timestamp":0,"timestampType":"CREATE_TIME","key":"","headers":null}
	]}}`
	var ev events.KafkaEvent
	require.NoError(t, json.Unmarshal([]byte(raw), &ev))
	got := capture(t, ev)
	require.Len(t, got, 3)

	r := got[0]
	require.Equal(t, "orders", r.Topic)
	require.Equal(t, int64(0), r.Partition)
	require.Equal(t, int64(15), r.Offset)
	require.True(t, time.UnixMilli(1545084650987).Equal(r.Timestamp))
	require.Equal(t, "CREATE_TIME", r.TimestampType)
	require.Equal(t, []byte("job-42"), r.Key)
	require.Equal(t, []byte(`{"k":1}`), r.Value)
	require.Equal(t, []kafka.Header{
		{Key: "trace", Value: []byte{118, 0xdc, 0, 127, 0x80}}, // signed bytes, as a Java byte[]
		{Key: "trace", Value: []byte{}},                        // a repeated key keeps its place
		{Key: "a", Value: []byte{2}},                           // an object of several keys, in key order
		{Key: "b", Value: []byte{1}},
	}, r.Headers)
	require.Equal(t, "orders-0", r.TopicPartition())
	require.Equal(t, kafka.ItemIdentifier{TopicPartition: "orders-0", Offset: 15}, r.ID())

	// null, empty and absent keys and values are all nil: aws-lambda-go's
	// omitempty strings cannot tell them apart.
	require.Nil(t, got[1].Key)
	require.Nil(t, got[1].Value)
	require.Equal(t, "LOG_APPEND_TIME", got[1].TimestampType)
	require.Nil(t, got[1].Headers)
	require.Nil(t, got[2].Key)
	require.Nil(t, got[2].Value)
	require.Nil(t, got[2].Headers)
}

// Records reach the handler in topic-partition, then offset order,
// whatever the event's order (Concurrency 1 and one lane per partition
// make the start order the processing order).
func TestRecordsAreOrderedByTopicPartitionThenOffset(t *testing.T) {
	t.Parallel()
	ev := records(t, "b-0/9:k", "a-1/3:k", "b-0/2:k", "a-1/1:k", "a-0/7:k", "b-0/5:k")
	var names []string
	for _, r := range capture(t, ev) {
		names = append(names, name(r))
	}
	// Concurrency 1 takes the longest lane first: b-0 (3 records), then
	// a-1 (2), then a-0.
	require.Equal(t, []string{"b-0/2", "b-0/5", "b-0/9", "a-1/1", "a-1/3", "a-0/7"}, names)

	var m kafka.BatchMetrics
	p := newProcessor(t, kafka.Config{Handler: noop, Metrics: func(bm kafka.BatchMetrics) { m = bm }})
	_, err := p.Process(context.Background(), ev)
	require.NoError(t, err)
	var order []string
	for _, r := range m.Records {
		order = append(order, r.TopicPartition+"/"+itoa(r.Offset))
	}
	require.Equal(t, []string{"a-0/7", "a-1/1", "a-1/3", "b-0/2", "b-0/5", "b-0/9"}, order, "the metrics' order")
}

// An invalid batch runs nothing: Process returns an error wrapping
// ErrInvalidBatch that says what is wrong, and logs it at Error.
func TestInvalidBatchesAreRefusedWhole(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		corrupt func(ev events.KafkaEvent)
		says    string
	}{
		"a duplicate offset": {func(ev events.KafkaEvent) { ev.Records["t-0"][2].Offset = 1 }, `"t-0" holds offset 1 twice`},
		"a negative offset":  {func(ev events.KafkaEvent) { ev.Records["t-0"][1].Offset = -1 }, `"t-0" holds offset -1`},
		"a record under another partition's key": {func(ev events.KafkaEvent) { ev.Records["t-0"][1].Partition = 1 },
			`key "t-0" holds a record of "t-1" (offset 2)`},
		"a record of another topic": {func(ev events.KafkaEvent) { ev.Records["t-0"][0].Topic = "u" },
			`key "t-0" holds a record of "u-0" (offset 1)`},
		"a negative partition": {func(ev events.KafkaEvent) {
			ev.Records["t--1"] = []events.KafkaRecord{{Topic: "t", Partition: -1, Offset: 1}}
		}, `"t--1" holds partition -1`},
		"a key that is not base64":   {func(ev events.KafkaEvent) { ev.Records["t-0"][1].Key = "a" }, `"t-0" offset 2: the key is not base64`},
		"a value that is not base64": {func(ev events.KafkaEvent) { ev.Records["u-3"][0].Value = "!!!!" }, `"u-3" offset 7: the value is not base64`},
		"unpadded base64":            {func(ev events.KafkaEvent) { ev.Records["u-3"][0].Key = "YQ" }, `"u-3" offset 7: the key is not base64`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev := records(t, "t-0/1:a", "t-0/2:b", "t-0/3:a", "u-3/7:a")
			tc.corrupt(ev)
			var calls atomic.Int32
			var logs logBuffer
			p := newProcessor(t, kafka.Config{Handler: func(context.Context, kafka.Record) error {
				calls.Add(1)
				return nil
			}, Logger: logs.Logger()})
			resp, err := p.Process(context.Background(), ev)
			require.ErrorIs(t, err, kafka.ErrInvalidBatch)
			require.ErrorContains(t, err, tc.says)
			require.Empty(t, resp.BatchItemFailures)
			require.Zero(t, calls.Load(), "nothing of an invalid batch runs")
			line := logs.last(t)
			require.Equal(t, "ERROR", line["level"])
			require.Equal(t, "kafka: batch refused", line["msg"])
			require.Contains(t, line["error"], tc.says)
			require.EqualValues(t, 4+len(ev.Records["t--1"]), line["records"])
		})
	}
}

// Keys and values share one buffer per batch; a handler that appends to
// its key cannot write into its value or the next record's key.
func TestAppendingToAKeyLeavesTheOtherBytesAlone(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	values := map[string]string{}
	p := newProcessor(t, kafka.Config{Concurrency: 1, Handler: func(_ context.Context, r kafka.Record) error {
		_ = append(r.Key, "XXXXXXXXXXXXXXXX"...)
		_ = append(r.Value, "YYYYYYYYYYYYYYYY"...)
		mu.Lock()
		defer mu.Unlock()
		values[name(r)] = string(r.Key) + "=" + string(r.Value)
		return nil
	}})
	_, err := p.Process(context.Background(), records(t, "t-0/1:a", "t-0/2:b", "t-0/3:c"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"t-0/1": "a=t-0/1:a", "t-0/2": "b=t-0/2:b", "t-0/3": "c=t-0/3:c"}, values)
}
