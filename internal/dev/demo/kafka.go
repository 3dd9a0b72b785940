package demo

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The demo on Kafka (template-kafka.yaml) runs the same scenario and holds
// the tables and the bucket to the same invariants. What differs:
//   - The running example's takeover comes from the invocation's timeout
//     and the commands mapping's retry, not from a visibility timeout:
//     worker A's accept gets no answer before its invocation's deadline,
//     so A reports the command failed (or, stuck, times out and the batch
//     is bisected); the mapping retries the partition from it (one
//     invocation per partition at a time); the retry finds A's lease held
//     (it ends at A's deadline plus the clock skew) and, since that end
//     comes before the retry's own last moment to start, waits it out and
//     claims generation 2 (internal/app/worker: the lease wait on Kafka);
//     a lease ending later fails the retry, and a later one, within the
//     mapping's MaximumRetryAttempts (7: 8 invocations), takes over.
//   - "No queue holds a message" becomes: every consumer group's lag is 0
//     (each committed past every record of its topic), no on-failure
//     bucket holds a record given up, and the relay's stream failure
//     queue (SQS on both transports) holds nothing.
//   - The events the projector consumed are the records of the events
//     topic below its group's commit, told by their outbox-id header (the
//     event id): a record is committed past only once completed or given
//     up, and none was given up when the buckets are empty.
//   - The poison job's records are produced to the commands topic keyed by
//     the job's id; the topic's quarantine holds the key, and the redrive
//     produces the parked records' copies to the key's partition
//     (poisonKafka).

// kafkaTransport is template-kafka.yaml's TRANSPORT.
const kafkaTransport = "kafka"

// poisonKafka is the commands topic's source of the poison job: records
// keyed by the job's id, to the key's partition as the relay's producer
// puts them (murmur2), each with the outbox-id header of its copy's id,
// held under the key (quarantine.KafkaGroup); the redrive produces its
// copies to the hold's partition (kafkaout.NewRedriveProducer).
func (d *demoRun) poisonKafka(id string) (poisonSource, error) {
	i := slices.IndexFunc(d.p.KafkaMappings(), func(m pipeline.KafkaMapping) bool { return m.Function == "worker" })
	if i < 0 {
		return poisonSource{}, fmt.Errorf("demo: the template has no Kafka mapping of the worker")
	}
	m := d.p.KafkaMappings()[i]
	producer, err := kgo.NewClient(kgo.SeedBrokers(m.Brokers...))
	if err != nil {
		return poisonSource{}, err
	}
	redrive, err := kafkaout.NewRedriveProducer(kafkaout.ProducerConfig{Brokers: m.Brokers})
	if err != nil {
		producer.Close()
		return poisonSource{}, err
	}
	return poisonSource{queue: m.Topic, group: quarantine.KafkaGroup(id),
		close: func() { producer.Close(); redrive.Close() },
		send: func(ctx context.Context, body []byte, dedup string) error {
			rec := &kgo.Record{Topic: m.Topic, Key: []byte(id), Value: body,
				Headers: []kgo.RecordHeader{{Key: kafkaout.HeaderOutboxID, Value: []byte(dedup)}}}
			return producer.ProduceSync(ctx, rec).FirstErr()
		},
		operator: func(store quarantine.Store) (*quarantine.Operator, error) {
			return quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: m.Topic, Records: copies{redrive}, Poll: 200 * time.Millisecond})
		},
	}, nil
}

// copies produces a redrive's copies, each to the partition it names,
// waited for.
type copies struct{ cl *kgo.Client }

func (c copies) SendRecord(ctx context.Context, cp quarantine.KafkaCopy) error {
	rec := &kgo.Record{Topic: cp.Topic, Partition: int32(cp.Partition), Key: cp.Key, Value: cp.Value} //nolint:gosec // a partition of the topic, from the hold
	for _, h := range cp.Headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return c.cl.ProduceSync(ctx, rec).FirstErr()
}

// onKafkaBatch counts, for the progress lines, the events the projector's
// mapping committed past: offsets start at 0, so a partition's commit is
// its count.
func (d *demoRun) onKafkaBatch(fn string, r localesm.KafkaBatchResult) {
	if fn != "projector" || len(r.Committed) == 0 {
		return
	}
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	if d.committed == nil {
		d.committed = map[string]int64{}
	}
	var total int64
	for tp, off := range r.Committed {
		d.committed[tp] = max(d.committed[tp], off)
	}
	for _, off := range d.committed {
		total += off
	}
	d.events.Store(total)
}

// drainKafka waits, up to 4 minutes, until every consumer group's lag is
// 0. What is still there after that, check reports.
func (d *demoRun) drainKafka(ctx context.Context) error {
	deadline := time.Now().Add(4 * time.Minute)
	for said := false; ; {
		lags, err := d.p.KafkaLag(ctx)
		if err != nil {
			return err
		}
		var lag int64
		for _, l := range lags {
			lag += l
		}
		if lag == 0 || time.Now().After(deadline) {
			return nil
		}
		if !said {
			d.say("waiting for the consumer groups' lag to reach 0 (%d records not committed past)", lag)
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// kafkaLeft counts what is left on Kafka: each group's lag, each record
// given up to an on-failure bucket, and the relay's stream failures.
func (d *demoRun) kafkaLeft(ctx context.Context) (int, error) {
	lags, err := d.p.KafkaLag(ctx)
	if err != nil {
		return 0, err
	}
	left := 0
	for group, lag := range lags {
		if lag > 0 {
			d.say("LEFT: consumer group %s has a lag of %d", group, lag)
		}
		left += int(lag)
	}
	for _, m := range d.p.KafkaMappings() {
		if m.FailureBucket == "" {
			continue
		}
		keys, err := FailedRecords(ctx, d.state.S3Client(), m.FailureBucket)
		if err != nil {
			return 0, err
		}
		for _, k := range keys {
			d.say("LEFT: %s's on-failure bucket %s holds %s", m.Name, m.FailureBucket, k)
		}
		left += len(keys)
	}
	if d.postgres() {
		n, err := d.outboxLeft(ctx) // no stream, so no stream failure queue
		return left + n, err
	}
	n, err := d.queuesHold(ctx, "StreamFailureQueue")
	return left + n, err
}

// FailedRecords lists the objects of a Kafka mapping's on-failure bucket
// (localesm.KafkaS3Destination's): one per span of records given up.
func FailedRecords(ctx context.Context, client *s3.Client, bucket string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("demo: list the on-failure bucket %s: %w", bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// consumedOnKafka records the events the projector consumed: the
// outbox-id of each record of its topic below its group's commit.
func (d *demoRun) consumedOnKafka(ctx context.Context) error {
	i := slices.IndexFunc(d.p.KafkaMappings(), func(m pipeline.KafkaMapping) bool { return m.Function == "projector" })
	if i < 0 {
		return fmt.Errorf("demo: the template has no Kafka mapping of the projector")
	}
	recs, err := Committed(ctx, d.p.KafkaMappings()[i])
	if err != nil {
		return err
	}
	d.seenMu.Lock()
	defer d.seenMu.Unlock()
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == "outbox-id" {
				d.seen[string(h.Value)] = true
			}
		}
	}
	d.events.Store(int64(len(recs)))
	return nil
}

// Committed reads the records of m's topic that its consumer group has
// committed past, partition by partition from the log's start.
func Committed(ctx context.Context, m pipeline.KafkaMapping) ([]*kgo.Record, error) {
	admin, err := kgo.NewClient(kgo.SeedBrokers(m.Brokers...))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	offsets, err := kadm.NewClient(admin).FetchOffsets(ctx, m.ConsumerGroupID)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("demo: the commits of %s: %w", m.ConsumerGroupID, err)
	}
	upTo := map[int32]int64{}
	from := map[int32]kgo.Offset{}
	offsets.Each(func(o kadm.OffsetResponse) {
		if o.Topic == m.Topic && o.At > 0 {
			upTo[o.Partition], from[o.Partition] = o.At, kgo.NewOffset().AtStart()
		}
	})
	if len(upTo) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(m.Brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{m.Topic: from}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for len(upTo) > 0 {
		fetches := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, fmt.Errorf("demo: read %s up to its commits (%v left): %w", m.Topic, upTo, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if end, ok := upTo[r.Partition]; ok && r.Offset < end {
				recs = append(recs, r)
				if r.Offset == end-1 {
					delete(upTo, r.Partition)
				}
			}
		})
	}
	return recs, nil
}
