package transport_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/transport"
	"github.com/fifoworker/fifoworker/internal/base/ids"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

func TestFromSQSReadsTheMessageAsHandleAlwaysHas(t *testing.T) {
	t.Parallel()
	msg := events.SQSMessage{
		MessageId: "0e1f6a8e-5b3a-4a7e-9f11-5c8e2d0c7a11", Body: `{"job_id":"job-42"}`,
		Attributes: map[string]string{"MessageGroupId": "job-42", "ApproximateReceiveCount": "4"},
	}
	require.Equal(t, transport.Delivery{
		ID: msg.MessageId, Ref: msg.MessageId, Key: "job-42", Body: msg.Body, Count: 4,
	}, transport.FromSQS(&msg))

	// SQS counts the first receive as 1: a message without a usable count
	// was received once. A message without a group has the empty key, and
	// no key is required of it.
	for raw, want := range map[string]int{"": 1, "0": 1, "-3": 1, "x": 1, "1": 1, "2": 2} {
		msg := events.SQSMessage{MessageId: "m", Attributes: map[string]string{"ApproximateReceiveCount": raw}}
		d := transport.FromSQS(&msg)
		require.Equal(t, want, d.Count, "ApproximateReceiveCount %q", raw)
		require.Empty(t, d.Key)
		require.False(t, d.KeyRequired)
	}
	d := transport.FromSQS(&events.SQSMessage{MessageId: "m"})
	require.Equal(t, 1, d.Count, "no attributes at all")
}

func TestFromRecordNamesTheRecordAndRequiresItsKey(t *testing.T) {
	t.Parallel()
	rec := kafka.Record{Topic: "fifoworker.commands", Partition: 3, Offset: 1207, Key: []byte("job-42"), Value: []byte(`{"job_id":"job-42"}`)}
	d := transport.FromRecord(&rec)
	require.Equal(t, "fifoworker.commands-3@1207", d.ID)
	require.Equal(t, "job-42", d.Key)
	require.True(t, d.KeyRequired, "a record's key is its lane: it must be its job's")
	require.Equal(t, `{"job_id":"job-42"}`, d.Body)
	require.Zero(t, d.Count, "a Kafka record carries no delivery count")

	// The ref goes into an attempt id: an id's characters, however the
	// topic is named (a dot, 249 bytes), and short enough to leave room
	// for a request id.
	require.Empty(t, ids.Problem(d.Ref), "ref %q", d.Ref)
	require.True(t, strings.HasSuffix(d.Ref, "-3-1207"), "ref %q ends in the partition and the offset", d.Ref)
	long := kafka.Record{Topic: strings.Repeat("t.", 124) + "t", Partition: 1<<31 - 1, Offset: 1<<63 - 1}
	ref := transport.FromRecord(&long).Ref
	require.Empty(t, ids.Problem(ref), "ref %q", ref)
	require.LessOrEqual(t, len("c0ffee00-0000-4000-8000-000000000001_"+ref), ids.MaxLen, "the longest topic, partition and offset")

	// Two records differing in any of topic, partition and offset have two
	// refs: an invocation may hold two topics.
	refs := map[string]kafka.Record{}
	for _, r := range []kafka.Record{
		{Topic: "a", Partition: 1, Offset: 2}, {Topic: "b", Partition: 1, Offset: 2},
		{Topic: "a", Partition: 12, Offset: 2}, {Topic: "a", Partition: 1, Offset: 22},
		{Topic: "a-1", Partition: 2, Offset: 2}, {Topic: "a.b", Partition: 1, Offset: 2}, {Topic: "a_b", Partition: 1, Offset: 2},
	} {
		ref := transport.FromRecord(&r).Ref
		require.NotContains(t, refs, ref, "%+v and %+v", r, refs[ref])
		refs[ref] = r
	}

	// A null key (Lambda's event does not tell it from an empty or absent
	// one) is the empty key, still required.
	d = transport.FromRecord(&kafka.Record{Topic: "t", Key: nil})
	require.Empty(t, d.Key)
	require.True(t, d.KeyRequired)
	require.Empty(t, d.Body, "a null value is the empty body")
}
