package kafkaout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// Producer is the part of a kgo.Client the relay calls: Produce hands the
// client a record and returns; the client calls promise once, with nil
// when the brokers acknowledged the record, or with why not. Request
// sends a request to the brokers and returns their response: the relay
// asks for the round's topics' metadata before each round
// (checkPartitions).
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

var _ Producer = (*kgo.Client)(nil)

// The headers of every record the relay publishes (see the package doc).
const (
	// HeaderOutboxID holds the message's outbox id ("job-42/v3"), whole:
	// a copy published again carries the same, as its body's id does.
	HeaderOutboxID = "outbox-id"
	// HeaderType holds the body's type: "job.run" for a command, the
	// event's type ("job.started", ...) for an event.
	HeaderType = "message-type"
	// HeaderTrace holds the relay invocation's X-Ray trace header; a
	// record of an invocation without one has no such header.
	HeaderTrace = "X-Amzn-Trace-Id"
)

// DefaultResponseReserve is how long before the invocation's deadline the
// relay stops waiting for the brokers, by default: enough to return its
// response, as pkg/lanes reserves.
const DefaultResponseReserve = 200 * time.Millisecond

// ErrInvalidConfig is outbox.ErrInvalidConfig: every relay's constructor
// refuses a configuration with the same error.
var ErrInvalidConfig = outbox.ErrInvalidConfig

// Config configures the Kafka relay.
type Config struct {
	// Producer produces the records. Required. A *kgo.Client must write
	// idempotently (kgo's default, which also requires acks from all
	// in-sync replicas: kgo's config.go refuses idempotence with fewer);
	// NewProducer's does, and lingers 0, since the relay waits for each
	// round's acknowledgements.
	Producer Producer
	// CommandsTopic is the topic of the commands (the worker's). Required:
	// a Kafka topic name, 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
	CommandsTopic string
	// EventsTopic is the topic of the events (the projector's). Required,
	// the same rule, and not CommandsTopic.
	EventsTopic string
	// PartitionCount is the partitions each topic has, the count the
	// consumers check (TOPIC_PARTITIONS; template-kafka.yaml's
	// TopicPartitions). Required, at least 1. The relay stamps every record
	// with it (kafka.PartitionCountHeader) and produces to a topic only
	// while the brokers' metadata, asked for at each round, shows the topic
	// with exactly this many partitions (checkPartitions).
	PartitionCount int
	// ResponseReserve is how long before the invocation's deadline the
	// relay stops waiting for acknowledgements, so that its response still
	// reaches Lambda; what is not acknowledged by then counts as not
	// published. Default (0): DefaultResponseReserve. Not negative.
	ResponseReserve time.Duration
	// Logger logs what could not be published. Default (nil): nothing is
	// logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Producer == nil:
		return fmt.Errorf("%w: Producer is nil", ErrInvalidConfig)
	case !idempotent(c.Producer):
		return fmt.Errorf("%w: Producer writes without idempotence: a retried batch could be written twice or out of order", ErrInvalidConfig)
	case !validTopic(c.CommandsTopic):
		return fmt.Errorf("%w: CommandsTopic %q is not a Kafka topic name (1 to 249 of [a-zA-Z0-9._-], not . or ..)", ErrInvalidConfig, c.CommandsTopic)
	case !validTopic(c.EventsTopic):
		return fmt.Errorf("%w: EventsTopic %q is not a Kafka topic name (1 to 249 of [a-zA-Z0-9._-], not . or ..)", ErrInvalidConfig, c.EventsTopic)
	case c.PartitionCount < 1:
		return fmt.Errorf("%w: PartitionCount %d is not at least 1 (the topics' partition count, which each record carries)", ErrInvalidConfig, c.PartitionCount)
	case c.EventsTopic == c.CommandsTopic:
		return fmt.Errorf("%w: EventsTopic %q is CommandsTopic too: the worker would read the events and the projector the commands", ErrInvalidConfig, c.EventsTopic)
	case c.ResponseReserve < 0:
		return fmt.Errorf("%w: ResponseReserve %v is negative", ErrInvalidConfig, c.ResponseReserve)
	}
	return nil
}

// maxTopicLength is the longest topic name Kafka accepts.
const maxTopicLength = 249

// validTopic is Kafka's rule for a topic name (Kafka's Topic.validate:
// 1 to 249 of [a-zA-Z0-9._-], and neither "." nor ".."). A loop over the
// bytes rather than a regular expression, which the package would compile
// at every cold start.
func validTopic(name string) bool {
	if len(name) == 0 || len(name) > maxTopicLength || name == "." || name == ".." {
		return false
	}
	for i := range len(name) {
		if !topicByte(name[i]) {
			return false
		}
	}
	return true
}

// topicByte reports whether c is one of a topic name's [a-zA-Z0-9._-].
func topicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// idempotent reports whether p writes idempotently, when it can tell (a
// *kgo.Client can; a fake of the tests cannot, and is taken as it is).
func idempotent(p Producer) bool {
	o, ok := p.(interface{ OptValue(opt any) any })
	if !ok {
		return true
	}
	disabled, _ := o.OptValue(kgo.DisableIdempotentWrite).(bool)
	return !disabled
}

// NewRelay returns a relay that produces commands to cfg.CommandsTopic and
// events to cfg.EventsTopic, or an error wrapping ErrInvalidConfig.
func NewRelay(cfg Config) (*outbox.Relay, error) {
	s, err := NewSink(cfg)
	if err != nil {
		return nil, err
	}
	return outbox.NewRelay(outbox.RelayConfig{Sink: s, Logger: cfg.Logger})
}

// NewSink returns the sink NewRelay's relay produces through, for another
// relay to publish with: the PostgreSQL outbox's
// (internal/app/outbox/pgsource). Or an error wrapping ErrInvalidConfig.
func NewSink(cfg Config) (outbox.Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reserve := cfg.ResponseReserve
	if reserve == 0 {
		reserve = DefaultResponseReserve
	}
	return &sink{producer: cfg.Producer, reserve: reserve, partitions: cfg.PartitionCount,
		topics: map[outbox.Kind]string{outbox.KindCommand: cfg.CommandsTopic, outbox.KindEvent: cfg.EventsTopic}}, nil
}

// sink produces each round's records at once and waits for all their
// acknowledgements: the relay hands it at most one message per job, so
// records of one round never order one job, and the next round (a job's
// next version) starts only after this one's answers.
//
// It does not lean on kgo to order a job's versions. What kgo (v1.22.3)
// guarantees, read in its source (pkg/kgo in the module cache): with
// idempotence on, a batch the broker refuses with a non-retriable error
// fails every record buffered behind it in its partition with that same
// error, never writing one of them first (sink.go: handleReqRespBatch,
// line 1045, ends in finishBatch, line 1338, which calls
// recBuf.failAllRecords, line 1906, for any error; so do
// handleRetryBatches, line 1383, at the record's retry or time limit and
// bumpRepeatedLoadErr, line 1837, for a partition that cannot load, and
// only while no request of the partition is in flight, since the client
// cannot fail a batch the broker may have written). Sequence errors
// (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID) are not failures:
// kgo bumps the producer epoch and retries. That holds within one
// partition, and for failures after buffering only: a record too large
// for a batch on its own is failed at once with kerr.MessageTooLarge and
// nothing behind it is (sink.go bufferRecord, line 1711; producer.go line
// 640 for MaxBufferedBytes), so its job's next record would be written
// without it; and a job's commands and events are on two topics, which no
// client orders. broker_test.go pins both facts. Waiting per round costs
// one round trip per version of the batch's busiest job, and the
// partition check (checkPartitions) one more.
type sink struct {
	producer   Producer
	topics     map[outbox.Kind]string
	partitions int // Config.PartitionCount
	reserve    time.Duration
}

// answer is a promise's result: the record's index in the round and its
// error.
type answer struct {
	i   int
	err error
}

// Send produces msgs to the topics whose partition count the brokers
// confirm (checkPartitions) and waits for every acknowledgement, or until
// reserve before ctx's deadline. The records' context ends when Send
// returns, so the client fails the ones it has not sent yet; one it has
// sent may still be written, and its retry is told by its outbox id.
func (s *sink) Send(ctx context.Context, msgs []outbox.Message, trace string) []error {
	ctx, cancel := s.waitContext(ctx)
	defer cancel()
	refused := s.checkPartitions(ctx, msgs)
	errs := make([]error, len(msgs))
	answered := make([]bool, len(msgs))
	// What the partitioner saw of each record it refused (refusedOver).
	seen := make([]int, len(msgs))
	// Buffered for every record: a promise the client calls after Send
	// returned never blocks the client.
	answers := make(chan answer, len(msgs))
	pending := 0
	for i := range msgs {
		topic, ok := s.topics[msgs[i].Kind]
		switch {
		case !ok:
			errs[i] = fmt.Errorf("kafkaout: %s: no topic for a message of kind %v", msgs[i].OutboxID, msgs[i].Kind)
		case refused[topic] != nil:
			errs[i] = fmt.Errorf("kafkaout: %s: %w", msgs[i].OutboxID, refused[topic])
		default:
			pending++
			s.producer.Produce(ctx, s.record(ctx, topic, &msgs[i], trace, &seen[i]), func(_ *kgo.Record, err error) { answers <- answer{i, err} })
			continue
		}
		answered[i] = true
	}
	for ; pending > 0; pending-- {
		select {
		case a := <-answers:
			errs[a.i], answered[a.i] = s.explain(&msgs[a.i], s.topics[msgs[a.i].Kind], a.err, seen[a.i]), true
		case <-ctx.Done():
			for i := range msgs {
				if !answered[i] {
					errs[i] = fmt.Errorf("kafkaout: %s to topic %q: not acknowledged by %v before the invocation's deadline (are the brokers reachable?): %w",
						msgs[i].OutboxID, s.topics[msgs[i].Kind], s.reserve, context.Cause(ctx))
				}
			}
			return errs
		}
	}
	return errs
}

// waitContext is ctx ending reserve before its deadline (at once if that
// is past); without a deadline, ctx.
func (s *sink) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-s.reserve))
	}
	return context.WithCancel(ctx)
}

// record is m as a record of topic: keyed by its job, the body as value,
// and the headers of the package doc, its partition count s.partitions.
// Its context (ctx) carries seen, where the partitioner writes the count
// it saw if it refuses the record (refusedOver).
func (s *sink) record(ctx context.Context, topic string, m *outbox.Message, trace string, seen *int) *kgo.Record {
	headers := []kgo.RecordHeader{{Key: HeaderOutboxID, Value: []byte(m.OutboxID)}, {Key: HeaderType, Value: []byte(m.Type)},
		{Key: kafka.PartitionCountHeader, Value: strconv.AppendInt(nil, int64(s.partitions), 10)}}
	if trace != "" {
		headers = append(headers, kgo.RecordHeader{Key: HeaderTrace, Value: []byte(trace)})
	}
	return &kgo.Record{Topic: topic, Key: []byte(m.GroupID), Value: m.Body, Headers: headers, Context: context.WithValue(ctx, seenKey{}, seen)}
}

// explain says what the brokers' (or the client's) refusal of m means
// for the operator; nil stays nil. seen is the partition count the
// producer's partitioner saw if it refused the record (0 if not): its
// metadata is behind the brokers', and is refreshed for the retry.
func (s *sink) explain(m *outbox.Message, topic string, err error, seen int) error {
	switch {
	case err == nil:
		return nil
	case seen != 0:
		if r, ok := s.producer.(interface{ ForceMetadataRefresh() }); ok {
			r.ForceMetadataRefresh()
		}
		return fmt.Errorf("kafkaout: %s to topic %q: the producer's metadata has %d partitions, the brokers and the relay %d: not produced, lest it be partitioned over another count than it carries (the producer's metadata is refreshed for the retry): %w",
			m.OutboxID, topic, seen, s.partitions, ErrPartitionCount)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return fmt.Errorf("kafkaout: %s: %w", m.OutboxID, missingTopic(topic, err))
	case errors.Is(err, kerr.MessageTooLarge):
		return fmt.Errorf("kafkaout: %s to topic %q: a record of %d bytes of value is over the topic's max.message.bytes (or the producer's batch limit): %w",
			m.OutboxID, topic, len(m.Body), err)
	}
	return fmt.Errorf("kafkaout: %s to topic %q: %w", m.OutboxID, topic, err)
}
