package kafkaout

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// countingPartitioner is kgo's default partitioner (murmur2 of the key,
// as Kafka's own client; sticky for a record without one) that writes the
// partition count it partitioned a keyed record over into the record's
// kafka.PartitionCountHeader. A consumer configured with the topic's count
// (kafka.Config.PartitionCount) then knows a record whose key may have
// moved partition (the topic's partitions were added to) and holds it
// rather than run it ahead of the key's older records in the old
// partition.
//
// Setting a header there works, as read in kgo v1.22.3's source: the
// client calls the partitioner (producer.go doPartition) before it sizes
// and encodes the record (sink.go bufferRecord, tryBuffer:
// calculateRecordNumbers), so the header is in the record written; and a
// partitioner with OnNewBatch may be called twice for one record, so the
// header is replaced, never added twice. n is the topic's partition count
// for a keyed record: the default partitioner requires consistency for a
// key, so doPartition passes every partition, not only the writable ones.
// The one thing computed before is the record's size for
// MaxBufferedBytes (producer.go, Produce's userSize), which NewProducer
// does not set: a count kept a few bytes short changes nothing.
type countingPartitioner struct{ inner kgo.Partitioner }

func (p countingPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &countingTopicPartitioner{inner: p.inner.ForTopic(topic)}
}

type countingTopicPartitioner struct{ inner kgo.TopicPartitioner }

func (p *countingTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return p.inner.RequiresConsistency(r)
}

// Partition stamps a keyed record with n and partitions it as the inner
// partitioner does. A record without a key is not stamped: it is in no key
// order, and its n may be only the writable partitions.
func (p *countingTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if p.inner.RequiresConsistency(r) {
		stampPartitionCount(r, n)
	}
	return p.inner.Partition(r, n)
}

// OnNewBatch passes kgo's call on, so that the sticky partitioning of
// records without a key moves on as it would without the wrapper.
func (p *countingTopicPartitioner) OnNewBatch() {
	if o, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// stampPartitionCount sets r's kafka.PartitionCountHeader to n, replacing
// one it has.
func stampPartitionCount(r *kgo.Record, n int) {
	v := strconv.AppendInt(nil, int64(n), 10)
	for i := range r.Headers {
		if r.Headers[i].Key == kafka.PartitionCountHeader {
			r.Headers[i].Value = v
			return
		}
	}
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: kafka.PartitionCountHeader, Value: v})
}
