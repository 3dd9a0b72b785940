package sim

import (
	"encoding/json"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// MaxRequestSize is the largest event, in bytes, a simulated Kafka event
// source mapping sends, as pkg/localesm's (MaxRequestSize there, which the
// simulation may not import): one byte under Lambda's 6 MB quota for a
// synchronous invocation's request, whose error reads "Request must be
// smaller than 6291456 bytes". AWS's EventSourceMappingConfiguration says
// of BatchSize that Lambda passes the batch's records "in a single call,
// up to the payload limit for synchronous invocation (6 MB)": a batch
// closes before its event would cross it, and a record whose event alone
// crosses it is never invoked.
const MaxRequestSize = 6<<20 - 1

// EventSize is the length of ev as JSON (json.Marshal of aws-lambda-go's
// events.KafkaEvent, the event Lambda sends), counted without encoding it.
func EventSize(ev events.KafkaEvent) int {
	z := newEventSize(ev)
	for tp, recs := range ev.Records {
		for _, r := range recs {
			z.add(tp, EventRecordSize(r))
		}
	}
	return z.total
}

// eventSize counts an event's length as records are added to it, as
// pkg/localesm's batch builder does, so that a batch stops before its
// event would cross MaxRequestSize.
type eventSize struct {
	total int
	parts map[string]bool
}

// newEventSize counts ev's fields but its records, which it leaves out.
func newEventSize(ev events.KafkaEvent) eventSize {
	n := len(`{"eventSource":,"eventSourceArn":,"records":{},"bootstrapServers":}`) +
		jsonStringLen(ev.EventSource) + jsonStringLen(ev.EventSourceARN) + jsonStringLen(ev.BootstrapServers)
	return eventSize{total: n, parts: map[string]bool{}}
}

// grow is how much a record of n bytes added to topic-partition tp
// lengthens the event.
func (z *eventSize) grow(tp string, n int) int {
	if z.parts[tp] {
		return 1 + n // a comma and the record
	}
	n += jsonStringLen(tp) + len(`:[]`)
	if len(z.parts) > 0 {
		n++ // the comma before the key
	}
	return n
}

func (z *eventSize) add(tp string, n int) {
	z.total += z.grow(tp, n)
	z.parts[tp] = true
}

// EventRecordSize is the length of r as JSON in Lambda's event
// (json.Marshal of events.KafkaRecord), counted without encoding it: a
// header bomb's bytes are numbers there, one to four characters each and
// a comma. Its key and value are base64, as the event has them, whose
// characters JSON does not escape.
func EventRecordSize(r events.KafkaRecord) int {
	n := len(`{"topic":,"partition":,"offset":,"timestamp":,"timestampType":,"headers":}`) +
		jsonStringLen(r.Topic) + intLen(r.Partition) + intLen(r.Offset) +
		intLen(r.Timestamp.UnixNano()/int64(1e6)) + jsonStringLen(r.TimestampType)
	if r.Key != "" {
		n += len(`,"key":""`) + len(r.Key) // base64: nothing to escape
	}
	if r.Value != "" {
		n += len(`,"value":""`) + len(r.Value)
	}
	if r.Headers == nil {
		return n + len("null")
	}
	n += len("[]") + max(len(r.Headers)-1, 0)
	for _, h := range r.Headers {
		n += len("{}") + max(len(h)-1, 0)
		for k, v := range h {
			n += jsonStringLen(k) + len(":[]") + max(len(v)-1, 0)
			for _, b := range v {
				n += int8Len[b]
			}
		}
	}
	return n
}

// int8Len is the length of each byte as a header's JSON has it: a signed
// number.
var int8Len = func() (l [256]int) {
	for b := range l {
		l[b] = intLen(int64(int8(b))) //nolint:gosec // the header's bytes are signed in the event: the bits are the point
	}
	return l
}()

func intLen(v int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], v, 10))
}

// jsonStringLen is the length of s as a JSON string, json.Marshal's
// escapes included.
func jsonStringLen(s string) int {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return len(b)
		}
	}
	return len(s) + 2
}
