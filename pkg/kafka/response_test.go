package kafka_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// batch builds a KafkaEvent whose records sit under their own
// "topic-partition" key, in the order given.
func batch(recs ...events.KafkaRecord) events.KafkaEvent {
	ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
	for _, r := range recs {
		k := kafka.TopicPartition(r.Topic, r.Partition)
		ev.Records[k] = append(ev.Records[k], r)
	}
	return ev
}

func rec(topic string, partition, offset int64) events.KafkaRecord {
	return events.KafkaRecord{Topic: topic, Partition: partition, Offset: offset}
}

func id(tp string, offset int64) kafka.ItemIdentifier {
	return kafka.ItemIdentifier{TopicPartition: tp, Offset: offset}
}

func done(ids ...kafka.ItemIdentifier) map[kafka.ItemIdentifier]bool {
	m := map[kafka.ItemIdentifier]bool{}
	for _, i := range ids {
		m[i] = true
	}
	return m
}

func failures(ids ...kafka.ItemIdentifier) kafka.EventResponse {
	r := kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{}}
	for _, i := range ids {
		r.BatchItemFailures = append(r.BatchItemFailures, kafka.BatchItemFailure{ItemIdentifier: i})
	}
	return r
}

func TestResponseAndCommitOffsets(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		batch     events.KafkaEvent
		completed map[kafka.ItemIdentifier]bool
		want      kafka.EventResponse
		commit    map[string]int64
	}{
		"an empty batch": {
			batch: events.KafkaEvent{}, completed: done(),
			want: failures(), commit: map[string]int64{},
		},
		"all completed commits one past the last record": {
			batch:     batch(rec("t", 0, 3), rec("t", 0, 4)),
			completed: done(id("t-0", 3), id("t-0", 4)),
			want:      failures(), commit: map[string]int64{"t-0": 5},
		},
		"none completed reports every record and commits the first": {
			batch: batch(rec("t", 0, 3), rec("t", 0, 4)), completed: done(),
			want: failures(id("t-0", 3), id("t-0", 4)), commit: map[string]int64{"t-0": 3},
		},
		"a hole in the middle: the prefix stops at it, later completions are not reported": {
			batch:     batch(rec("t", 0, 10), rec("t", 0, 11), rec("t", 0, 12), rec("t", 0, 13)),
			completed: done(id("t-0", 10), id("t-0", 12), id("t-0", 13)),
			want:      failures(id("t-0", 11)), commit: map[string]int64{"t-0": 11},
		},
		"offset gaps (compaction, transaction markers) never hold the commit back": {
			batch:     batch(rec("t", 0, 5), rec("t", 0, 7), rec("t", 0, 9), rec("t", 0, 20)),
			completed: done(id("t-0", 5), id("t-0", 7)),
			want:      failures(id("t-0", 9), id("t-0", 20)), commit: map[string]int64{"t-0": 9},
		},
		"gaps, all completed: one past the last record, not past the highest completed of a prefix": {
			batch:     batch(rec("t", 0, 5), rec("t", 0, 7), rec("t", 0, 9)),
			completed: done(id("t-0", 5), id("t-0", 7), id("t-0", 9)),
			want:      failures(), commit: map[string]int64{"t-0": 10},
		},
		"records out of order in the event are read in offset order": {
			batch:     batch(rec("t", 0, 9), rec("t", 0, 5), rec("t", 0, 7)),
			completed: done(id("t-0", 5), id("t-0", 9)),
			want:      failures(id("t-0", 7)), commit: map[string]int64{"t-0": 7},
		},
		"several partitions and topics, each on its own": {
			batch:     batch(rec("a-b", 0, 1), rec("a-b", 0, 2), rec("a-b", 1, 1), rec("c", 0, 40), rec("c", 0, 42)),
			completed: done(id("a-b-0", 1), id("a-b-1", 1), id("c-0", 42)),
			want:      failures(id("a-b-0", 2), id("c-0", 40)),
			commit:    map[string]int64{"a-b-0": 2, "a-b-1": 2, "c-0": 40},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := kafka.Response(tc.batch, tc.completed)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			commit, err := kafka.CommitOffsets(tc.batch, tc.completed)
			require.NoError(t, err)
			require.Equal(t, tc.commit, commit)
		})
	}
}

func TestTheResponseHasTheDocumentedJSONShape(t *testing.T) {
	t.Parallel()
	got, err := kafka.Response(batch(rec("mytopic", 0, 1)), done())
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"mytopic-0","offset":1}}]}`, string(b))
	none, err := kafka.Response(batch(rec("mytopic", 0, 1)), done(id("mytopic-0", 1)))
	require.NoError(t, err)
	b, err = json.Marshal(none)
	require.NoError(t, err)
	require.JSONEq(t, `{"batchItemFailures":[]}`, string(b))
}

func TestBadBatchesAreRefusedWithTheirReason(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		batch     events.KafkaEvent
		completed map[kafka.ItemIdentifier]bool
		want      error
		says      string
	}{
		"a duplicate offset in a partition": {
			batch: batch(rec("t", 0, 3), rec("t", 0, 3)), want: kafka.ErrInvalidBatch, says: `"t-0" holds offset 3 twice`,
		},
		"a record whose topic disagrees with its key": {
			batch: events.KafkaEvent{Records: map[string][]events.KafkaRecord{"t-0": {rec("u", 0, 3)}}},
			want:  kafka.ErrInvalidBatch, says: `key "t-0" holds a record of "u-0"`,
		},
		"a record whose partition disagrees with its key": {
			batch: events.KafkaEvent{Records: map[string][]events.KafkaRecord{"t-0": {rec("t", 0, 2), rec("t", 1, 3)}}},
			want:  kafka.ErrInvalidBatch, says: `key "t-0" holds a record of "t-1"`,
		},
		"a negative offset": {
			batch: batch(rec("t", 0, -1)), want: kafka.ErrInvalidBatch, says: `"t-0" holds offset -1`,
		},
		"a key with another separator": {
			batch: events.KafkaEvent{Records: map[string][]events.KafkaRecord{"t_0": {rec("t", 0, 3)}}},
			want:  kafka.ErrInvalidBatch, says: `key "t_0" holds a record of "t-0"`,
		},
		"a key with the partition's digits padded": {
			batch: events.KafkaEvent{Records: map[string][]events.KafkaRecord{"t-00": {rec("t", 0, 3)}}},
			want:  kafka.ErrInvalidBatch, says: `key "t-00" holds a record of "t-0"`,
		},
		"a completion of a record not in the batch": {
			batch: batch(rec("t", 0, 3)), completed: done(id("t-0", 4)),
			want: kafka.ErrUnknownRecord, says: `"t-0" offset 4`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := kafka.Response(tc.batch, tc.completed)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.says)
			_, err = kafka.CommitOffsets(tc.batch, tc.completed)
			require.ErrorIs(t, err, tc.want)
			require.True(t, errors.Is(err, tc.want) && strings.Contains(err.Error(), tc.says), err)
		})
	}
}
