package quarantine

import (
	"context"
	"fmt"
)

// RecordSender produces the redriven copy of a parked Kafka record and
// returns once the brokers acknowledged it (nil) or refused it. The
// Operator sends one copy at a time, oldest first, each after the previous
// one's acknowledgement, so that the partition keeps them in that order.
// internal/app/outbox/kafkaout's RedriveSender is the one on franz-go: an
// idempotent producer, acks from all in-sync replicas.
type RecordSender interface {
	SendRecord(ctx context.Context, c KafkaCopy) error
}

// KafkaCopy is a redriven copy of a parked Kafka record: the record's key,
// value and headers (CopyHeader replaced by the copy's identity), to the
// partition its hold is on. The copy is sent to that partition, not to the
// one its key hashes to now: it stands for a record of that partition's
// sequence, and runs only there (a key whose topic's partition count
// changed since still drains where it was held).
type KafkaCopy struct {
	Topic     string
	Partition int64
	Key       []byte
	Value     []byte
	Headers   []KafkaHeader
}

// sendRecord produces the copy of the parked Kafka record p under epoch.
func (o *Operator) sendRecord(ctx context.Context, epoch int64, p Parked) error {
	if o.cfg.Records == nil {
		return fmt.Errorf("quarantine: record %s is a Kafka record, and the operator has no RecordSender", SeqNumber(p.Sequence))
	}
	partition, _, ok := KafkaPosition(p.Sequence)
	if !ok {
		return fmt.Errorf("quarantine: record %s: its sequence is not a Kafka record's", SeqNumber(p.Sequence))
	}
	value := p.Kafka.Value
	if p.BodyKey != "" {
		if o.cfg.Bodies == nil {
			return fmt.Errorf("quarantine: record %s's value is in %s, and no body store is configured", SeqNumber(p.Sequence), p.BodyKey)
		}
		b, err := o.cfg.Bodies.GetBody(ctx, p.BodyKey)
		if err != nil {
			return fmt.Errorf("quarantine: record %s's value: %w", SeqNumber(p.Sequence), err)
		}
		value = []byte(b)
	}
	c := KafkaCopy{Topic: o.cfg.Queue, Partition: partition, Key: p.Kafka.Key, Value: value}
	for _, h := range p.Kafka.Headers {
		// A record that claimed to be a copy, and was parked as the
		// ordinary record it is, loses the claim: its copy has one identity.
		if h.Key != CopyHeader {
			c.Headers = append(c.Headers, h)
		}
	}
	c.Headers = append(c.Headers, KafkaHeader{Key: CopyHeader, Value: []byte(Copy{Epoch: epoch, Nonce: p.Nonce, Sequence: p.Sequence}.Header())})
	return retrySend(ctx, p, func() error { return o.cfg.Records.SendRecord(ctx, c) })
}
