package localesm

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// KafkaEventSource is the eventSource of the events a Kafka mapping sends:
// Lambda's value for Amazon MSK or for self-managed Apache Kafka.
type KafkaEventSource string

// The two Kafka event sources, as Lambda names them in the event.
const (
	EventSourceMSK              KafkaEventSource = "aws:kafka"        // Amazon MSK; the event carries the cluster's ARN
	EventSourceSelfManagedKafka KafkaEventSource = "SelfManagedKafka" // self-managed Apache Kafka; no eventSourceArn
)

// kafkaTP is one partition of a topic.
type kafkaTP struct {
	topic     string
	partition int32
}

// String is the partition's key in the event and in itemIdentifiers:
// "topic-partition".
func (tp kafkaTP) String() string { return kafka.TopicPartition(tp.topic, int64(tp.partition)) }

// kafkaRecord is a fetched record as the mapping holds it.
type kafkaRecord struct {
	rec     *kgo.Record
	json    []byte    // the record as an element of the event's list
	arrived time.Time // when the mapping fetched it: a batching window starts at its first record's arrival
}

func newKafkaRecord(rec *kgo.Record, arrived time.Time) *kafkaRecord {
	b, err := json.Marshal(kafkaEventRecordOf(rec))
	if err != nil { // cannot happen: strings, numbers and byte lists
		panic(fmt.Sprintf("localesm: encode a Kafka record: %v", err))
	}
	return &kafkaRecord{rec: rec, json: b, arrived: arrived}
}

// kafkaEventRecord is one record of Lambda's KafkaEvent, the shape
// aws-lambda-go's events.KafkaRecord reads. Key and value are base64; a
// null key or value (a tombstone) leaves its field out, an empty one is "".
// Headers are a list of one-key objects, in the record's order, duplicates
// kept, each value a list of signed bytes (events.JSONNumberBytes, the one
// codec aws-lambda-go reads them with); a null header value is [].
type kafkaEventRecord struct {
	Topic         string                              `json:"topic"`
	Partition     int64                               `json:"partition"`
	Offset        int64                               `json:"offset"`
	Timestamp     int64                               `json:"timestamp"`
	TimestampType string                              `json:"timestampType"`
	Key           *string                             `json:"key,omitempty"`
	Value         *string                             `json:"value,omitempty"`
	Headers       []map[string]events.JSONNumberBytes `json:"headers"`
}

func kafkaEventRecordOf(r *kgo.Record) kafkaEventRecord {
	headers := make([]map[string]events.JSONNumberBytes, len(r.Headers))
	for i, h := range r.Headers {
		headers[i] = map[string]events.JSONNumberBytes{h.Key: h.Value}
	}
	return kafkaEventRecord{
		Topic:         r.Topic,
		Partition:     int64(r.Partition),
		Offset:        r.Offset,
		Timestamp:     r.Timestamp.UnixMilli(),
		TimestampType: timestampType(r.Attrs.TimestampType()),
		Key:           base64OrNil(r.Key),
		Value:         base64OrNil(r.Value),
		Headers:       headers,
	}
}

// timestampType names Kafka's timestamp types as Java's TimestampType
// constants, which Lambda's events use ("CREATE_TIME" in AWS's samples).
func timestampType(t int8) string {
	switch t {
	case 0:
		return "CREATE_TIME"
	case 1:
		return "LOG_APPEND_TIME"
	}
	return "NO_TIMESTAMP_TYPE"
}

func base64OrNil(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

// kafkaPart is a run of one partition's records, in offset order.
type kafkaPart struct {
	tp   kafkaTP
	recs []*kafkaRecord
	// retries counts the retries used at offset at, the partition's
	// first record when the count was last taken. A bisection uses none;
	// countRetries starts the count again whenever the first record is no
	// longer at, whatever moved the commit (a partial batch response, a
	// bisected half that succeeded, an expiry): see the package
	// documentation.
	retries int
	at      int64
}

// with is p holding recs, a run of its records, and keeping its count.
func (p kafkaPart) with(recs []*kafkaRecord) kafkaPart {
	p.recs = recs
	return p
}

// kafkaSpan is records invoked together: a batch, what is left of one
// after a partial batch response, or a half of a bisected one. Its parts
// are in topic-partition order.
type kafkaSpan struct {
	parts       []kafkaPart
	invocations int // invocations so far that included every record of the span
	// requestID and status are the last invocation's, for an on-failure
	// record: "" and nil before the first.
	requestID string
	status    *Status
}

func (s kafkaSpan) len() int {
	n := 0
	for _, p := range s.parts {
		n += len(p.recs)
	}
	return n
}

// bisect splits a span of two records or more in two, each partition's
// records staying in order across the halves: the first ⌊n/2⌋ records of
// each partition make the first half and the rest the second. When each
// partition has one record, which would leave the first half empty, the
// first ⌊k/2⌋ partitions make the first half instead. The halves keep the
// span's invocations, and each partition its retry count.
func (s kafkaSpan) bisect() (first, second kafkaSpan) {
	first = kafkaSpan{invocations: s.invocations, requestID: s.requestID, status: s.status}
	second = first
	for _, p := range s.parts {
		half := len(p.recs) / 2
		if half > 0 {
			first.parts = append(first.parts, p.with(p.recs[:half]))
		}
		second.parts = append(second.parts, p.with(p.recs[half:]))
	}
	if len(first.parts) == 0 {
		k := len(s.parts) / 2
		first.parts, second.parts = s.parts[:k], s.parts[k:]
	}
	return first, second
}

// kafkaSource is what every event of a mapping carries besides records.
type kafkaSource struct {
	eventSource KafkaEventSource
	arn         string // MSK only
	bootstrap   string // the bootstrap servers, comma-separated
}

// prefix is the event up to its records' first key.
func (s kafkaSource) prefix() []byte {
	var b bytes.Buffer
	b.WriteString(`{"eventSource":`)
	b.Write(jsonString(string(s.eventSource)))
	if s.eventSource == EventSourceMSK {
		b.WriteString(`,"eventSourceArn":`)
		b.Write(jsonString(s.arn))
	}
	b.WriteString(`,"bootstrapServers":`)
	b.Write(jsonString(s.bootstrap))
	b.WriteString(`,"records":{`)
	return b.Bytes()
}

// encode writes the event of parts, each partition under its
// "topic-partition" key. Records are copied as encoded when fetched.
func (s kafkaSource) encode(parts []kafkaPart) []byte {
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b kafkaPart) int { return cmp.Compare(a.tp.String(), b.tp.String()) })
	b := bytes.NewBuffer(s.prefix())
	for i, p := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(p.tp.String()))
		b.WriteString(":[")
		for j, r := range p.recs {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(r.json)
		}
		b.WriteByte(']')
	}
	b.WriteString("}}")
	return b.Bytes()
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// kafkaEventSize counts the length of an event as records are added to
// it, without encoding it: the batch builder stops before the event
// would cross MaxRequestSize.
type kafkaEventSize struct {
	total int
	parts map[kafkaTP]bool
}

func (z *kafkaEventSize) reset(s kafkaSource) {
	z.total = len(s.prefix()) + len("}}")
	z.parts = map[kafkaTP]bool{}
}

// grow is how much adding rec to partition tp lengthens the event.
func (z *kafkaEventSize) grow(tp kafkaTP, rec *kafkaRecord) int {
	if z.parts[tp] {
		return 1 + len(rec.json) // a comma and the record
	}
	n := len(jsonString(tp.String())) + len(":[]") + len(rec.json)
	if len(z.parts) > 0 {
		n++ // the comma before the key
	}
	return n
}

func (z *kafkaEventSize) add(tp kafkaTP, rec *kafkaRecord) {
	z.total += z.grow(tp, rec)
	z.parts[tp] = true
}

// kafkaItem is one itemIdentifier of a Kafka partial batch response.
type kafkaItem struct {
	tp     string // the topic-partition, as the event's records key
	offset int64
}

// parseKafkaItemFailures reads a Kafka partial batch response in AWS's
// schema, {"batchItemFailures":[{"itemIdentifier":{"topic-partition":"topic-0","offset":5}}]}
// (kafka.EventResponse), with the rules batchItemIdentifiers keeps for
// every source. Each itemIdentifier must be an object with an integer
// "offset" and its topic-partition as a non-empty string under
// "topic-partition", AWS's key, or "partition", the key Powertools for AWS
// Lambda (Python) sends, or under both with the same value; keys are
// matched exactly and others ignored. Both keys disagreeing, or neither,
// is a malformed response.
func parseKafkaItemFailures(payload []byte) ([]kafkaItem, error) {
	raws, err := batchItemIdentifiers(payload)
	if err != nil {
		return nil, err
	}
	var items []kafkaItem
	for i, raw := range raws {
		var id map[string]json.RawMessage
		if err := json.Unmarshal(raw, &id); err != nil || id == nil {
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is not an object {topic-partition, offset}", ErrInvalidResponse, i)
		}
		tp, err := itemTopicPartition(id)
		if err != nil {
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier: %w", ErrInvalidResponse, i, err)
		}
		offset, err := jsonInteger(id["offset"])
		if err != nil {
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier.offset is not an integer", ErrInvalidResponse, i)
		}
		items = append(items, kafkaItem{tp: tp, offset: offset})
	}
	return items, nil
}

// itemTopicPartition is an itemIdentifier's topic-partition, under
// "topic-partition", "partition" or both alike. Beside a "topic-partition",
// a "partition" counts only as a non-empty string, which must agree with
// it: any other value (a tool's bare partition number, a null) is not a
// topic-partition and is ignored. Alone, "partition" must be one.
func itemTopicPartition(id map[string]json.RawMessage) (string, error) {
	raw, ok := id["topic-partition"]
	if !ok {
		raw, ok := id["partition"]
		if !ok {
			return "", errors.New(`neither "topic-partition" nor "partition" is set`)
		}
		return nonEmptyString("partition", raw)
	}
	tp, err := nonEmptyString("topic-partition", raw)
	if err != nil {
		return "", err
	}
	if other, err := nonEmptyString("partition", id["partition"]); err == nil && other != tp {
		return "", fmt.Errorf(`"topic-partition" %q and "partition" %q disagree`, tp, other)
	}
	return tp, nil
}

// nonEmptyString reads the JSON value raw of key as a non-empty string.
func nonEmptyString(key string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", fmt.Errorf("%s is not a non-empty string", key)
	}
	return s, nil
}

// jsonInteger reads a JSON number that is a whole int64. A string of
// digits is not one: json.Number would accept it.
func jsonInteger(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, fmt.Errorf("not a number: %.20s", raw)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return n.Int64()
}

// kafkaDecision is what to do with a span after its invocation.
type kafkaDecision struct {
	outcome Outcome
	// done says, per partition, how many of the span's leading records of
	// that partition are finished.
	done map[kafkaTP]int
	err  error // why the span (or its rest) failed
}

// decideKafka applies Lambda's rules for a Kafka batch. A success finishes
// it; so does any answer when reportItemFailures is off. With it, a valid
// partial batch response finishes, in each partition it names, the records
// before the lowest offset it names there, and every record of the
// partitions it does not name; an empty or null list is a success. A
// response that names an offset or a partition the span does not hold, or
// is malformed, fails the span whole (AWS: "Any invalid
// topic-partition_number or offset returned that was not present in the
// invoked event will be treated as failure and entire batch will be
// retried"), as does a function error or a timeout.
func decideKafka(span kafkaSpan, res Result, reportItemFailures bool) kafkaDecision {
	done := make(map[kafkaTP]int, len(span.parts))
	for _, p := range span.parts {
		done[p.tp] = 0
	}
	if outcome, failed := failedOutcome(res.Status); failed {
		return kafkaDecision{outcome: outcome, done: done, err: fmt.Errorf("localesm: %s: %s", res.Status, strings.TrimSpace(string(res.Payload)))}
	}
	for _, p := range span.parts {
		done[p.tp] = len(p.recs)
	}
	if !reportItemFailures {
		return kafkaDecision{outcome: OutcomeSuccess, done: done}
	}
	items, err := parseKafkaItemFailures(res.Payload)
	if err != nil {
		return kafkaDecision{outcome: OutcomeInvalidResponse, done: zeroed(done), err: err}
	}
	if len(items) == 0 {
		return kafkaDecision{outcome: OutcomeSuccess, done: done}
	}
	index := make(map[kafkaItem]kafkaTP, span.len())
	position := make(map[kafkaItem]int, span.len())
	for _, p := range span.parts {
		for i, r := range p.recs {
			it := kafkaItem{tp: p.tp.String(), offset: r.rec.Offset}
			index[it], position[it] = p.tp, i
		}
	}
	var first []string
	for _, it := range items {
		tp, ok := index[it]
		if !ok {
			return kafkaDecision{outcome: OutcomeInvalidResponse, done: zeroed(done),
				err: fmt.Errorf("%w: itemIdentifier {%q, %d} is not a record of the batch", ErrInvalidResponse, it.tp, it.offset)}
		}
		if position[it] < done[tp] {
			done[tp] = position[it]
		}
	}
	for _, p := range span.parts {
		if done[p.tp] < len(p.recs) {
			first = append(first, fmt.Sprintf("%s@%d", p.tp, p.recs[done[p.tp]].rec.Offset))
		}
	}
	return kafkaDecision{outcome: OutcomePartialFailure, done: done, err: fmt.Errorf("localesm: records reported failed from %s", strings.Join(first, ", "))}
}

func zeroed(done map[kafkaTP]int) map[kafkaTP]int {
	for tp := range done {
		done[tp] = 0
	}
	return done
}
