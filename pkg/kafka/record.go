package kafka

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Record is one Kafka record of a batch, decoded from Lambda's KafkaEvent:
// the key and value out of base64, the headers out of their signed bytes,
// the timestamp out of epoch milliseconds.
type Record struct {
	Topic     string
	Partition int64
	Offset    int64
	// Timestamp is the record's timestamp, of the kind TimestampType
	// names: "CREATE_TIME" (the producer's) or "LOG_APPEND_TIME" (the
	// broker's).
	Timestamp     time.Time
	TimestampType string
	// Key and Value are nil for a null key or value. aws-lambda-go's
	// KafkaRecord holds them as strings that omit an empty value, so a
	// null, an absent and an empty ("") key or value arrive alike: each
	// decodes as nil (see the package documentation on lanes for what that
	// means for an empty key).
	Key, Value []byte
	// Headers are the record's headers in the event's order; a key may
	// repeat, as Kafka allows.
	Headers []Header
}

// Header is one Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// TopicPartition is the record's topic-partition, "orders-0": the
// KafkaEvent's records key and an ItemIdentifier's partition.
func (r *Record) TopicPartition() string { return TopicPartition(r.Topic, r.Partition) }

// ID is the record's identifier in a partial batch response.
func (r *Record) ID() ItemIdentifier {
	return ItemIdentifier{TopicPartition: r.TopicPartition(), Offset: r.Offset}
}

// decode decodes the checked records, in their order. The keys and values
// share one buffer, each capped at its own length so that a handler's
// append cannot write into the next: two allocations per batch, not two
// per record.
func decode(recs []checkedRecord) ([]Record, error) {
	size := 0
	for _, c := range recs {
		size += base64.StdEncoding.DecodedLen(len(c.rec.Key)) + base64.StdEncoding.DecodedLen(len(c.rec.Value))
	}
	buf := make([]byte, size)
	out := make([]Record, len(recs))
	for i, c := range recs {
		var key, value []byte
		var err error
		if key, buf, err = decodeBytes(c.rec.Key, buf); err != nil {
			return nil, fmt.Errorf("%w: %q offset %d: the key is not base64: %w", ErrInvalidBatch, c.id.TopicPartition, c.id.Offset, err)
		}
		if value, buf, err = decodeBytes(c.rec.Value, buf); err != nil {
			return nil, fmt.Errorf("%w: %q offset %d: the value is not base64: %w", ErrInvalidBatch, c.id.TopicPartition, c.id.Offset, err)
		}
		out[i] = Record{
			Topic:         c.rec.Topic,
			Partition:     c.rec.Partition,
			Offset:        c.rec.Offset,
			Timestamp:     c.rec.Timestamp.Time,
			TimestampType: c.rec.TimestampType,
			Key:           key,
			Value:         value,
			Headers:       headers(c.rec.Headers),
		}
	}
	return out, nil
}

// decodeBytes decodes Lambda's standard, padded base64 s into the start of
// buf and returns it and the rest of buf; "" (a null, an absent or an
// empty key or value: the event does not tell them apart) is nil.
func decodeBytes(s string, buf []byte) (decoded, rest []byte, err error) {
	if s == "" {
		return nil, buf, nil
	}
	n, ok := decodeQuanta(buf, s)
	if !ok {
		if n, err = base64.StdEncoding.Decode(buf, []byte(s)); err != nil {
			return nil, nil, err
		}
	}
	return buf[:n:n], buf[n:], nil
}

// base64Values maps a character of the standard alphabet to its six bits,
// and every other byte to invalid.
var base64Values = func() (m [256]byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range m {
		m[i] = invalid
	}
	for i := range len(alphabet) {
		m[alphabet[i]] = byte(i)
	}
	return m
}()

const invalid = 0xff

// decodeQuanta decodes s into dst, which has room, if s is whole quanta of
// the standard alphabet, the last one padded as StdEncoding pads it
// ("xx==", "xxx="), and reports whether it did. It decodes as
// encoding/base64's StdEncoding does (the bits a padded quantum leaves
// over are ignored), in a third of its time on a batch's short keys and
// values (a job key and a 35-byte value: 60-90 ns against 170-240); anything
// else (a newline, a character outside the alphabet, misplaced padding) is
// left to StdEncoding, which says what is wrong.
func decodeQuanta(dst []byte, s string) (n int, ok bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	last := len(s) - 4
	for i := 0; i < last; i += 4 {
		a, b, c, d := base64Values[s[i]], base64Values[s[i+1]], base64Values[s[i+2]], base64Values[s[i+3]]
		if (a|b|c|d)&0xc0 != 0 { // invalid has them
			return 0, false
		}
		dst[n], dst[n+1], dst[n+2] = a<<2|b>>4, b<<4|c>>2, c<<6|d
		n += 3
	}
	a, b := base64Values[s[last]], base64Values[s[last+1]]
	if (a|b)&0xc0 != 0 {
		return 0, false
	}
	dst[n] = a<<2 | b>>4
	switch {
	case s[last+2] == '=' && s[last+3] == '=':
		return n + 1, true
	case s[last+3] == '=':
		c := base64Values[s[last+2]]
		if c&0xc0 != 0 {
			return 0, false
		}
		dst[n+1] = b<<4 | c>>2
		return n + 2, true
	}
	c, d := base64Values[s[last+2]], base64Values[s[last+3]]
	if (c|d)&0xc0 != 0 {
		return 0, false
	}
	dst[n+1], dst[n+2] = b<<4|c>>2, c<<6|d
	return n + 3, true
}

// headers flattens Lambda's list of one-key objects into Headers. An
// object with several keys (Lambda sends one key per object) gives them in
// key order, so that the result does not depend on map iteration.
func headers(in []map[string]events.JSONNumberBytes) []Header {
	if len(in) == 0 {
		return nil
	}
	out := make([]Header, 0, len(in))
	for _, m := range in {
		start := len(out)
		for k, v := range m {
			out = append(out, Header{Key: k, Value: []byte(v)})
		}
		slices.SortFunc(out[start:], func(a, b Header) int { return strings.Compare(a.Key, b.Key) })
	}
	return out
}
