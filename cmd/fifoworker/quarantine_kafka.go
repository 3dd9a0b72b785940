package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The quarantine verbs on a Kafka deployment (quarantineExit says how one
// is chosen): a topic's held keys, their parked records by partition and
// offset, and a redrive that produces its copies to each key's partition.

// kafkaRecords is the quarantine.RecordSender of a redrive on Kafka: each
// copy produced to the partition it names and waited for, on
// kafkaout.NewRedriveProducer's client (the relay's producer settings).
type kafkaRecords struct{ cl *kgo.Client }

var _ quarantine.RecordSender = kafkaRecords{}

// newKafkaRecords opens the redrive's producer on brokers, with SASL
// mechanism auth (AWS_MSK_IAM signs with creds; "" is none). It connects
// at the first copy. It is not closed: each copy was acknowledged before
// the redrive went on, so nothing is left to flush when the command ends.
func newKafkaRecords(brokers []string, auth string, creds kafkaout.ProducerConfig) (kafkaRecords, error) {
	creds.Brokers, creds.Auth, creds.ClientID = brokers, kafkaout.Auth(auth), "fifoworker-cli"
	cl, err := kafkaout.NewRedriveProducer(creds)
	if err != nil {
		return kafkaRecords{}, fmt.Errorf("the redrive's producer (--brokers, --sasl-mechanism): %w", err)
	}
	return kafkaRecords{cl: cl}, nil
}

// SendRecord implements quarantine.RecordSender.
func (k kafkaRecords) SendRecord(ctx context.Context, c quarantine.KafkaCopy) error {
	if c.Partition < 0 || c.Partition > 1<<31-1 {
		return fmt.Errorf("redrive: partition %d is not a Kafka partition", c.Partition)
	}
	rec := &kgo.Record{Topic: c.Topic, Partition: int32(c.Partition), Key: c.Key, Value: c.Value}
	for _, h := range c.Headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if err := k.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("redrive: produce a copy to %s partition %d: %w", c.Topic, c.Partition, err)
	}
	return nil
}

// kafkaSeqNumber is the sequence number of group's parked record at
// offset, in the partition the group is held on.
func kafkaSeqNumber(ctx context.Context, op *quarantine.Operator, group, offset string) (string, error) {
	o, err := strconv.ParseInt(offset, 10, 64)
	if err != nil || o < 0 {
		return "", usageError(fmt.Errorf("--seq %q: on Kafka, an offset", offset))
	}
	h, err := op.Hold(ctx, group)
	if err != nil {
		return "", err
	}
	partition, _, _ := quarantine.KafkaPosition(h.From)
	seq, err := quarantine.KafkaSeq(partition, o)
	if err != nil {
		return "", err
	}
	return quarantine.SeqNumber(seq), nil
}

// kafkaHoldJSON is a held key, its records' positions as offsets of its
// partition.
type kafkaHoldJSON struct {
	Topic     string        `json:"topic"`
	Key       string        `json:"key"`
	State     string        `json:"state"`
	Epoch     int64         `json:"epoch"`
	Parked    int64         `json:"parked"`
	Cause     string        `json:"cause"`
	Partition *int64        `json:"partition,omitempty"`
	From      *int64        `json:"first_offset,omitempty"`
	Through   *int64        `json:"last_offset,omitempty"`
	Next      *int64        `json:"next_offset,omitempty"` // the oldest still parked: the only one whose copy may run
	Attempts  *attemptsJSON `json:"attempts,omitempty"`
	HeldAt    time.Time     `json:"held_at"`
	UpdatedAt time.Time     `json:"updated_at"`
}

// attemptsJSON is the failed attempts a key's hold counts.
type attemptsJSON struct {
	Partition int64  `json:"partition"`
	Offset    int64  `json:"offset"`
	Failed    int64  `json:"failed"`
	Cause     string `json:"cause"`
}

func toKafkaHoldJSON(h quarantine.HoldRecord) kafkaHoldJSON {
	j := kafkaHoldJSON{Topic: h.Queue, Key: h.Group, State: string(h.State), Epoch: h.Epoch, Parked: h.Parked, Cause: h.Cause, HeldAt: h.HeldAt, UpdatedAt: h.UpdatedAt}
	offset := func(seq string) (*int64, *int64) {
		p, o, ok := quarantine.KafkaPosition(seq)
		if !ok {
			return nil, nil
		}
		return &p, &o
	}
	j.Partition, j.From = offset(h.From)
	_, j.Through = offset(h.Through)
	_, j.Next = offset(h.Next)
	if p, o, ok := quarantine.KafkaPosition(h.Attempts.Sequence); ok {
		j.Attempts = &attemptsJSON{Partition: p, Offset: o, Failed: h.Attempts.Failed, Cause: h.Attempts.Cause}
	}
	return j
}

func printKafkaHolds(w io.Writer, topic string, holds []quarantine.HoldRecord, asJSON bool) error {
	if asJSON {
		out := make([]kafkaHoldJSON, 0, len(holds))
		for _, h := range holds {
			out = append(out, toKafkaHoldJSON(h))
		}
		return printJSON(w, map[string]any{"topic": topic, "holds": out})
	}
	if len(holds) == 0 {
		fmt.Fprintf(w, "no key of %s is held\n", topic)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPARTITION\tSTATE\tEPOCH\tPARKED\tHELD SINCE\tCAUSE")
	for _, h := range holds {
		p, _, _ := quarantine.KafkaPosition(h.From)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%s\n", h.Group, p, h.State, h.Epoch, h.Parked, h.HeldAt.UTC().Format(time.RFC3339), oneLine(h.Cause, 80))
	}
	return tw.Flush()
}

// kafkaParkedJSON is a parked record.
type kafkaParkedJSON struct {
	Partition int64             `json:"partition"`
	Offset    int64             `json:"offset"`
	Key       []byte            `json:"key"` // base64, as every byte field: Kafka's bytes need not be UTF-8
	Value     []byte            `json:"value,omitempty"`
	ValueKey  string            `json:"value_key,omitempty"` // where a large value is kept
	ValueSize int64             `json:"value_size"`
	Headers   []kafkaHeaderJSON `json:"headers,omitempty"`
	Status    string            `json:"status"`
	Cause     string            `json:"cause"`
	ParkedAt  time.Time         `json:"parked_at"`
}

type kafkaHeaderJSON struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

func printKafkaShow(w io.Writer, key string, h quarantine.HoldRecord, items []quarantine.Parked, asJSON bool) error {
	if asJSON {
		out := make([]kafkaParkedJSON, 0, len(items))
		for _, p := range items {
			part, off, _ := quarantine.KafkaPosition(p.Sequence)
			j := kafkaParkedJSON{Partition: part, Offset: off, ValueKey: p.BodyKey, ValueSize: p.BodySize, Status: string(p.Status), Cause: p.Cause, ParkedAt: p.ParkedAt}
			if p.Kafka != nil {
				j.Key, j.Value = p.Kafka.Key, p.Kafka.Value
				for _, hd := range p.Kafka.Headers {
					j.Headers = append(j.Headers, kafkaHeaderJSON{Key: hd.Key, Value: hd.Value})
				}
			}
			out = append(out, j)
		}
		return printJSON(w, map[string]any{"hold": toKafkaHoldJSON(h), "records": out})
	}
	j := toKafkaHoldJSON(h)
	fmt.Fprintf(w, "key %s on %s: %s, epoch %d, %d parked", key, h.Queue, h.State, h.Epoch, h.Parked)
	if j.Partition != nil {
		fmt.Fprintf(w, ", partition %d", *j.Partition)
	}
	fmt.Fprintf(w, "\ncause: %s\n", oneLine(h.Cause, 200))
	if j.Attempts != nil {
		fmt.Fprintf(w, "attempts: %d failed of offset %d (partition %d): %s\n", j.Attempts.Failed, j.Attempts.Offset, j.Attempts.Partition, oneLine(j.Attempts.Cause, 160))
	}
	fmt.Fprintln(w)
	if len(items) == 0 {
		fmt.Fprintln(w, "no record to show")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OFFSET\tSTATUS\tSIZE\tVALUE")
	for _, p := range items {
		_, off, _ := quarantine.KafkaPosition(p.Sequence)
		value := "(in " + p.BodyKey + ")"
		if p.BodyKey == "" && p.Kafka != nil {
			value = oneLine(strconv.QuoteToGraphic(string(p.Kafka.Value)), 60)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", off, p.Status, p.BodySize, value)
	}
	return tw.Flush()
}
