package localesm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	testClusterARN = "arn:aws:kafka:eu-west-1:123456789012:cluster/fifoworker/0b4a6f21-6c1d-4d55-9d1e-1a2b3c4d5e6f-2"
	testTopic      = "fifoworker-commands"
)

// kafkaRec is a fetched record of testTopic with the given partition,
// offset, key and value (nil for null), produced at second sec of 2026.
func kafkaRec(partition int32, offset int64, key, value []byte) *kgo.Record {
	return &kgo.Record{
		Topic: testTopic, Partition: partition, Offset: offset, Key: key, Value: value,
		Timestamp: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(offset) * time.Millisecond),
	}
}

func TestKafkaEventIsLambdasJSON(t *testing.T) {
	t.Parallel()
	withHeaders := kafkaRec(0, 7, []byte("job-1"), []byte(`{"n":1}`))
	withHeaders.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte{118, 0xdc, 0, 127, 0x80}}, {Key: "h", Value: []byte("2")}, {Key: "null", Value: nil}}
	nullKey := kafkaRec(0, 9, nil, []byte("v"))
	emptyKey := kafkaRec(1, 3, []byte{}, nil) // an empty key is not a null one; a null value (tombstone) is absent
	appended := kafkaRec(1, 4, []byte("k"), []byte("v"))
	appended.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{TimestampType: 1})

	src := kafkaSource{eventSource: EventSourceMSK, arn: testClusterARN, bootstrap: "b-1:9092,b-2:9092"}
	parts := []kafkaPart{
		{tp: kafkaTP{testTopic, 1}, recs: []*kafkaRecord{newKafkaRecord(emptyKey, time.Time{}), newKafkaRecord(appended, time.Time{})}},
		{tp: kafkaTP{testTopic, 0}, recs: []*kafkaRecord{newKafkaRecord(withHeaders, time.Time{}), newKafkaRecord(nullKey, time.Time{})}},
	}
	got := src.encode(parts)

	ts := func(r *kgo.Record) int64 { return r.Timestamp.UnixMilli() }
	want := `{"eventSource":"aws:kafka","eventSourceArn":"` + testClusterARN + `","bootstrapServers":"b-1:9092,b-2:9092","records":{` +
		`"fifoworker-commands-0":[` +
		fmt.Sprintf(`{"topic":"fifoworker-commands","partition":0,"offset":7,"timestamp":%d,"timestampType":"CREATE_TIME","key":"am9iLTE=","value":"eyJuIjoxfQ==","headers":[{"h":[118,-36,0,127,-128]},{"h":[50]},{"null":[]}]},`, ts(withHeaders)) +
		fmt.Sprintf(`{"topic":"fifoworker-commands","partition":0,"offset":9,"timestamp":%d,"timestampType":"CREATE_TIME","value":"dg==","headers":[]}],`, ts(nullKey)) +
		`"fifoworker-commands-1":[` +
		fmt.Sprintf(`{"topic":"fifoworker-commands","partition":1,"offset":3,"timestamp":%d,"timestampType":"CREATE_TIME","key":"","headers":[]},`, ts(emptyKey)) +
		fmt.Sprintf(`{"topic":"fifoworker-commands","partition":1,"offset":4,"timestamp":%d,"timestampType":"LOG_APPEND_TIME","key":"aw==","value":"dg==","headers":[]}]}}`, ts(appended))
	require.JSONEq(t, want, string(got))

	// aws-lambda-go reads it back: what a Go function receives.
	var ev events.KafkaEvent
	require.NoError(t, json.Unmarshal(got, &ev))
	require.Equal(t, "aws:kafka", ev.EventSource)
	require.Equal(t, testClusterARN, ev.EventSourceARN)
	require.Len(t, ev.Records["fifoworker-commands-0"], 2)
	r0 := ev.Records["fifoworker-commands-0"][0]
	require.Equal(t, withHeaders.Timestamp, r0.Timestamp.UTC())
	require.Equal(t, []byte{118, 0xdc, 0, 127, 0x80}, []byte(r0.Headers[0]["h"]), "headers are signed bytes, read back whole")

	// Self-managed Kafka has no eventSourceArn at all.
	self := kafkaSource{eventSource: EventSourceSelfManagedKafka, bootstrap: "127.0.0.1:9092"}
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(self.encode(parts[:1]), &top))
	require.NotContains(t, top, "eventSourceArn")
	require.JSONEq(t, `"SelfManagedKafka"`, string(top["eventSource"]))
	require.JSONEq(t, `"127.0.0.1:9092"`, string(top["bootstrapServers"]))
}

// TestKafkaEventSizeIsTheEncodedLength: the size the batch builder counts
// is the length of the event it sends, so no batch crosses MaxRequestSize
// by a miscount.
func TestKafkaEventSizeIsTheEncodedLength(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range []kafkaSource{
		{eventSource: EventSourceMSK, arn: testClusterARN, bootstrap: "b-1:9092"},
		{eventSource: EventSourceSelfManagedKafka, bootstrap: "a:1,b:2,c:3"},
	} {
		for range 200 {
			var size kafkaEventSize
			size.reset(src)
			var parts []kafkaPart
			for p := range rng.IntN(4) {
				part := kafkaPart{tp: kafkaTP{fmt.Sprintf("t%d", rng.IntN(3)), int32(p)}}
				for o := range 1 + rng.IntN(5) {
					r := kafkaRec(int32(p), int64(o), []byte(strings.Repeat("k", rng.IntN(3))), []byte(strings.Repeat("v", rng.IntN(40))))
					r.Topic = part.tp.topic
					rec := newKafkaRecord(r, time.Time{})
					size.add(part.tp, rec)
					part.recs = append(part.recs, rec)
				}
				parts = append(parts, part)
			}
			require.Equal(t, len(src.encode(parts)), size.total, "%d partitions", len(parts))
		}
	}
}

func TestParseKafkaItemFailures(t *testing.T) {
	t.Parallel()
	ok := map[string][]kafkaItem{
		``:                           nil,
		`null`:                       nil,
		`{}`:                         nil,
		`{"batchItemFailures":null}`: nil,
		`{"batchItemFailures":[]}`:   nil,
		// AWS's documented key.
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","offset":5}},{"itemIdentifier":{"topic-partition":"t-1","offset":0,"extra":true}}]}`: {
			{tp: "t-0", offset: 5}, {tp: "t-1", offset: 0},
		},
		// Powertools for AWS Lambda (Python)'s key, and both keys agreeing.
		`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":5}},{"itemIdentifier":{"partition":"t-1","topic-partition":"t-1","offset":0}}]}`: {
			{tp: "t-0", offset: 5}, {tp: "t-1", offset: 0},
		},
		// Beside a valid "topic-partition", a "partition" that is not a
		// non-empty string (another tool's bare partition number, a null)
		// is not a topic-partition: it is ignored.
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","partition":0,"offset":5}},{"itemIdentifier":{"topic-partition":"t-1","partition":null,"offset":0}},{"itemIdentifier":{"topic-partition":"t-2","partition":"","offset":1}}]}`: {
			{tp: "t-0", offset: 5}, {tp: "t-1", offset: 0}, {tp: "t-2", offset: 1},
		},
	}
	for payload, want := range ok {
		got, err := parseKafkaItemFailures([]byte(payload))
		require.NoError(t, err, payload)
		require.Equal(t, want, got, payload)
	}
	for _, payload := range []string{
		`[]`,
		`{"batchItemFailures":{}}`,
		`{"batchItemFailures":[{}]}`,
		`{"batchItemFailures":[{"itemIdentifier":null}]}`,
		`{"batchItemFailures":[{"itemIdentifier":"t-0-5"}]}`, // the string form middy documents is not Lambda's
		`{"batchItemFailures":[{"itemIdentifier":{"offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0"}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"Topic-Partition":"t-0","offset":5}}]}`, // keys match exactly
		`{"batchItemFailures":[{"itemIdentifier":{"Partition":"t-0","offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic_partition":"t-0","offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"","offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"partition":"","offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":0,"offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":0,"partition":"t-0","offset":5}}]}`, // the documented key malformed
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","partition":"t-0 ","offset":5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"partition":0,"offset":5}}]}`,                             // the bare partition number
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","partition":"t-1","offset":5}}]}`, // the two keys disagree
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","offset":"5"}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","offset":5.5}}]}`,
		`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-0","offset":null}}]}`,
	} {
		_, err := parseKafkaItemFailures([]byte(payload))
		require.ErrorIs(t, err, ErrInvalidResponse, payload)
	}
}

// testSpan is a span of two partitions of testTopic: offsets 10, 11, 13
// (12 compacted away) of partition 0 and 4, 5 of partition 1.
func testSpan() kafkaSpan {
	rec := func(p int32, o int64) *kafkaRecord {
		return newKafkaRecord(kafkaRec(p, o, []byte("k"), []byte("v")), time.Time{})
	}
	return kafkaSpan{parts: []kafkaPart{
		{tp: kafkaTP{testTopic, 0}, recs: []*kafkaRecord{rec(0, 10), rec(0, 11), rec(0, 13)}},
		{tp: kafkaTP{testTopic, 1}, recs: []*kafkaRecord{rec(1, 4), rec(1, 5)}},
	}}
}

func TestDecideKafka(t *testing.T) {
	t.Parallel()
	span := testSpan()
	all := map[kafkaTP]int{{testTopic, 0}: 3, {testTopic, 1}: 2}
	none := map[kafkaTP]int{{testTopic, 0}: 0, {testTopic, 1}: 0}
	failures := func(items ...string) []byte {
		return []byte(`{"batchItemFailures":[` + strings.Join(items, ",") + `]}`)
	}
	item := func(tp string, off int64) string {
		return fmt.Sprintf(`{"itemIdentifier":{"topic-partition":%q,"offset":%d}}`, tp, off)
	}
	cases := []struct {
		name    string
		res     Result
		report  bool
		outcome Outcome
		done    map[kafkaTP]int
	}{
		{"success", Result{Status: StatusOK, Payload: []byte(`null`)}, true, OutcomeSuccess, all},
		{"empty list", Result{Status: StatusOK, Payload: failures()}, true, OutcomeSuccess, all},
		{"function error", Result{Status: StatusFunctionError, Payload: []byte(`{}`)}, true, OutcomeFunctionError, none},
		{"timeout", Result{Status: StatusTimeout}, true, OutcomeTimeout, none},
		{"report ignored when off", Result{Status: StatusOK, Payload: failures(item("fifoworker-commands-0", 11))}, false, OutcomeSuccess, all},
		{"malformed ignored when off", Result{Status: StatusOK, Payload: []byte(`{"batchItemFailures":7}`)}, false, OutcomeSuccess, all},
		{"lowest reported offset per partition", Result{Status: StatusOK, Payload: failures(
			item("fifoworker-commands-0", 13), item("fifoworker-commands-0", 11),
		)}, true, OutcomePartialFailure, map[kafkaTP]int{{testTopic, 0}: 1, {testTopic, 1}: 2}},
		{"both partitions", Result{Status: StatusOK, Payload: failures(
			item("fifoworker-commands-1", 4), item("fifoworker-commands-0", 10),
		)}, true, OutcomePartialFailure, none},
		{"an offset not in the batch (a gap)", Result{Status: StatusOK, Payload: failures(
			item("fifoworker-commands-0", 11), item("fifoworker-commands-0", 12),
		)}, true, OutcomeInvalidResponse, none},
		{"a partition not in the batch", Result{Status: StatusOK, Payload: failures(item("fifoworker-commands-2", 4))}, true, OutcomeInvalidResponse, none},
		{"the bare partition number", Result{Status: StatusOK, Payload: failures(item("1", 4))}, true, OutcomeInvalidResponse, none},
		{"malformed", Result{Status: StatusOK, Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":"fifoworker-commands-0-10"}]}`)}, true, OutcomeInvalidResponse, none},
	}
	for _, tc := range cases {
		d := decideKafka(span, tc.res, tc.report)
		require.Equal(t, tc.outcome, d.outcome, tc.name)
		require.Equal(t, tc.done, d.done, tc.name)
		if tc.outcome == OutcomeSuccess {
			require.NoError(t, d.err, tc.name)
		} else {
			require.Error(t, d.err, tc.name)
		}
		if tc.outcome == OutcomeInvalidResponse {
			require.ErrorIs(t, d.err, ErrInvalidResponse, tc.name)
		}
	}
}

func TestBisectKafkaSpanKeepsEachPartitionsOrder(t *testing.T) {
	t.Parallel()
	offsets := func(s kafkaSpan) map[string][]int64 {
		out := map[string][]int64{}
		for _, p := range s.parts {
			for _, r := range p.recs {
				out[p.tp.String()] = append(out[p.tp.String()], r.rec.Offset)
			}
		}
		return out
	}
	first, second := testSpan().bisect()
	require.Equal(t, map[string][]int64{"fifoworker-commands-0": {10}, "fifoworker-commands-1": {4}}, offsets(first), "the first ⌊n/2⌋ records of each partition")
	require.Equal(t, map[string][]int64{"fifoworker-commands-0": {11, 13}, "fifoworker-commands-1": {5}}, offsets(second))

	// One record per partition: the partitions are split instead, so that
	// neither half is empty.
	span := testSpan()
	span.parts[0].recs = span.parts[0].recs[:1]
	span.parts[1].recs = span.parts[1].recs[:1]
	span.parts = append(span.parts, kafkaPart{tp: kafkaTP{testTopic, 2}, recs: []*kafkaRecord{newKafkaRecord(kafkaRec(2, 0, nil, nil), time.Time{})}})
	first, second = span.bisect()
	require.Equal(t, map[string][]int64{"fifoworker-commands-0": {10}}, offsets(first))
	require.Equal(t, map[string][]int64{"fifoworker-commands-1": {4}, "fifoworker-commands-2": {0}}, offsets(second))
}
