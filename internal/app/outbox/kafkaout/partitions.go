package kafkaout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// ErrPartitionCount is the cause of a record not produced because its
// topic's partition count, on the brokers or in the producer's metadata,
// is not the relay's (Config.PartitionCount): produced, it would be
// partitioned over another count than the consumers check, so a job whose
// key moved partition could have a record run before an older one.
var ErrPartitionCount = errors.New("kafkaout: the topic's partition count is not the relay's")

// checkPartitions asks the brokers, in one metadata request, for the
// topics msgs go to, and returns why each topic that may not be produced
// to may not (a topic missing from the result may be): its partition count
// is not s.partitions (ErrPartitionCount), it does not exist, or the
// brokers gave no answer. Asking at every round, rather than trusting the
// producer's metadata (kgo refreshes it every 5 minutes, MetadataMaxAge,
// and an execution environment thawed after longer may produce before the
// refresh), is what keeps an environment that learnt the old count from
// producing after partitions were added: it costs one round trip to a
// broker per round, beside the round's produce and its acknowledgements.
func (s *sink) checkPartitions(ctx context.Context, msgs []outbox.Message) map[string]error {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // the relay creates no topic
	var topics []string
	for i := range msgs {
		if t, ok := s.topics[msgs[i].Kind]; ok && !slices.Contains(topics, t) {
			topics = append(topics, t)
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	refused := make(map[string]error, len(topics))
	if len(topics) == 0 {
		return refused
	}
	resp, err := req.RequestWith(ctx, s.producer)
	for _, t := range topics {
		switch {
		case err != nil && ctx.Err() != nil:
			refused[t] = fmt.Errorf("the brokers' metadata of topic %q: not answered by %v before the invocation's deadline (are the brokers reachable?): %w", t, s.reserve, context.Cause(ctx))
		case err != nil:
			refused[t] = fmt.Errorf("the brokers' metadata of topic %q: no answer (are the brokers reachable?): %w", t, err)
		default:
			refused[t] = s.partitionsOf(resp, t)
		}
	}
	return refused
}

// partitionsOf is why resp does not let the relay produce to topic, or
// nil.
func (s *sink) partitionsOf(resp *kmsg.MetadataResponse, topic string) error {
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		err := kerr.ErrorForCode(rt.ErrorCode)
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return missingTopic(topic, err)
		case err != nil:
			return fmt.Errorf("the brokers' metadata of topic %q: %w", topic, err)
		case len(rt.Partitions) != s.partitions:
			return fmt.Errorf("topic %q has %d partitions on the brokers, the relay expects %d (PartitionCount, the consumers' TOPIC_PARTITIONS): nothing is produced to it until they agree (docs/KAFKA.md, \"A key that moves partition\"): %w",
				topic, len(rt.Partitions), s.partitions, ErrPartitionCount)
		}
		return nil
	}
	return fmt.Errorf("the brokers' metadata did not describe topic %q", topic)
}

// missingTopic is the error of a record to topic, which does not exist.
func missingTopic(topic string, err error) error {
	return fmt.Errorf("topic %q does not exist (the relay creates no topic): %w", topic, err)
}

// countingPartitioner is kgo's default partitioner (murmur2 of the key,
// as Kafka's own client; sticky for a record without one) that partitions
// a keyed record only over the partition count its
// kafka.PartitionCountHeader names, and writes the count into a keyed
// record without one. A consumer configured with the topic's count
// (kafka.Config.PartitionCount) then knows a record whose key may have
// moved partition (the topic's partitions were added to) and holds it
// rather than run it ahead of the key's older records in the old
// partition. The relay's records carry its Config.PartitionCount, which
// the brokers confirmed (checkPartitions); the producer's own metadata may
// still have another count (it learnt the topic before partitions were
// added, and has not refreshed it yet), and the record is then refused
// rather than written to a partition its count does not name.
//
// Setting a header there works, as read in kgo v1.22.3's source: the
// client calls the partitioner (producer.go doPartition) before it sizes
// and encodes the record (sink.go bufferRecord, tryBuffer:
// calculateRecordNumbers), so the header is in the record written; and a
// partitioner with OnNewBatch may be called twice for one record, so the
// header is set once, never added twice. A choice out of range (-1) fails
// the record at once, before it is buffered ("invalid record partitioning
// choice", producer.go doPartition), so nothing of it is written. n is the
// topic's partition count
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

// Partition partitions a keyed record as the inner partitioner does, over
// n if the record names n, or names no count (it is then stamped with n);
// a keyed record that names another count is refused (-1), and n is
// reported to its producer (refusedOver). A record without a key is not
// stamped: it is in no key order, and its n may be only the writable
// partitions.
func (p *countingTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if p.inner.RequiresConsistency(r) {
		switch stamp, ok := partitionCount(r); {
		case !ok:
			stampPartitionCount(r, n)
		case !bytes.Equal(stamp, strconv.AppendInt(nil, int64(n), 10)):
			refusedOver(r, n)
			return -1
		}
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

// partitionCount is the value of r's kafka.PartitionCountHeader, and
// whether it has one.
func partitionCount(r *kgo.Record) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == kafka.PartitionCountHeader {
			return h.Value, true
		}
	}
	return nil, false
}

// stampPartitionCount adds n as r's kafka.PartitionCountHeader.
func stampPartitionCount(r *kgo.Record, n int) {
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: kafka.PartitionCountHeader, Value: strconv.AppendInt(nil, int64(n), 10)})
}

// seenKey keys, in the context of a record the sink produces, where the
// partitioner writes the partition count it saw when it refuses the
// record: the sink reads it after the record's promise (which kgo calls
// after the partitioner) to say why.
type seenKey struct{}

// refusedOver writes n where r's context asks for it (seenKey), if it
// does.
func refusedOver(r *kgo.Record, n int) {
	if r.Context == nil {
		return
	}
	if seen, ok := r.Context.Value(seenKey{}).(*int); ok {
		*seen = n
	}
}
