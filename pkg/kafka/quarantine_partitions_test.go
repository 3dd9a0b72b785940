package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A record with two PartitionCountHeaders is judged by the last, as
// kafkaout's stamp replaces a header it finds and a producer that adds one
// after another's leaves its own last: the topic's count last runs, another
// count last holds the key, whatever the first says.
func TestQuarantinePartitionCountIsTheLastHeaders(t *testing.T) {
	t.Parallel()
	ev := records(t, "t-0/1:a", "t-0/2:b")
	ev = withHeader(ev, kafka.PartitionCountHeader, "7", "t-0/1")
	ev = withHeader(ev, kafka.PartitionCountHeader, "6", "t-0/1") // last: the topic's
	ev = withHeader(ev, kafka.PartitionCountHeader, "6", "t-0/2")
	ev = withHeader(ev, kafka.PartitionCountHeader, "7", "t-0/2") // last: another
	q := &fakeQuarantine{}
	r := runQuarantine(t, q, ev, nil, func(c *kafka.Config) { c.PartitionCount = 6 })
	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-0/1"}, r.started)
	require.Equal(t, []string{"park t-0/2 hold"}, q.Of("b"))
	require.ErrorIs(t, q.Nth(t, "b", 0).Cause, kafka.ErrPartitionCountChanged)
}

// The procedure of docs/KAFKA.md once a topic's partitions were added
// (6 to 7): the consumers keep the old count while the old partitions
// drain. Key a's older record, still in its old partition 0 and stamped
// with the old count, runs; its newer record, on its new partition 1 and
// stamped with the new count, is held on partition 1 with every later one
// there, in the same batch or a later one, and never runs before it. Once
// the new count is deployed, a record with the new count of a key not held
// runs, and a record of a held key is parked still.
func TestQuarantineTheOldCountHoldsTheNewRecordsWhileTheOldPartitionsDrain(t *testing.T) {
	t.Parallel()
	q := &fakeQuarantine{}
	ev := records(t, "t-1/10:a", "t-1/11:a", "t-0/3:a")
	ev = withHeader(ev, kafka.PartitionCountHeader, "7", "t-1/10", "t-1/11")
	ev = withHeader(ev, kafka.PartitionCountHeader, "6", "t-0/3")
	old := func(c *kafka.Config) { c.PartitionCount = 6 }
	r := runQuarantine(t, q, ev, nil, old)
	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-0/3"}, r.started, "the older record, in the old partition, runs")
	require.Equal(t, []string{"park t-1/10 t-1/11 hold"}, q.Of("a"))
	require.Equal(t, int64(1), q.HoldOf("a").Partition)

	// Deployed with the new count: the held key's records are parked; a key
	// not held runs its new records.
	q2 := &fakeQuarantine{view: kafka.QuarantineView{Holds: map[kafka.TopicKey]kafka.Hold{tk("a"): heldOn(1, 0)}}}
	ev = withHeader(records(t, "t-1/12:a", "t-1/13:b"), kafka.PartitionCountHeader, "7", "t-1/12", "t-1/13")
	r = runQuarantine(t, q2, ev, nil, func(c *kafka.Config) { c.PartitionCount = 7 })
	require.Empty(t, r.resp.BatchItemFailures)
	require.Equal(t, []string{"t-1/13"}, r.started)
	require.Equal(t, []string{"park t-1/12"}, q2.Of("a"))
}
