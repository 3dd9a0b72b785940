package kafka_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newProcessor is kafka.New for a Config the test means to be valid.
func newProcessor(t testing.TB, cfg kafka.Config) *kafka.Processor {
	t.Helper()
	p, err := kafka.New(cfg)
	require.NoError(t, err)
	return p
}

func noop(context.Context, kafka.Record) error { return nil }

// records builds a KafkaEvent from compact specs "topic-partition/offset:key"
// ("t-0/5:a"; no ":key" for a null key), each record under its own
// topic-partition key in the order given. The value is the spec itself.
func records(t testing.TB, specs ...string) events.KafkaEvent {
	t.Helper()
	ev := events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{}}
	for _, s := range specs {
		r := parseSpec(t, s)
		tp := kafka.TopicPartition(r.Topic, r.Partition)
		ev.Records[tp] = append(ev.Records[tp], r)
	}
	return ev
}

func parseSpec(t testing.TB, s string) events.KafkaRecord {
	t.Helper()
	where, key, keyed := strings.Cut(s, ":")
	tp, off, ok := strings.Cut(where, "/")
	require.True(t, ok, s)
	dash := strings.LastIndexByte(tp, '-')
	part, err := strconv.ParseInt(tp[dash+1:], 10, 64)
	require.NoError(t, err, s)
	offset, err := strconv.ParseInt(off, 10, 64)
	require.NoError(t, err, s)
	r := events.KafkaRecord{
		Topic: tp[:dash], Partition: part, Offset: offset,
		Timestamp:     events.MilliSecondsEpochTime{Time: time.UnixMilli(1_700_000_000_000 + offset)},
		TimestampType: "CREATE_TIME",
		Value:         base64.StdEncoding.EncodeToString([]byte(s)),
	}
	if keyed {
		r.Key = base64.StdEncoding.EncodeToString([]byte(key))
	}
	return r
}

// name is a record's spec without its key: "t-0/5".
func name(r kafka.Record) string { return fmt.Sprintf("%s/%d", r.TopicPartition(), r.Offset) }

// failed lists the response's records as "t-0/5", in its order.
func failed(resp kafka.EventResponse) []string {
	out := []string{}
	for _, f := range resp.BatchItemFailures {
		out = append(out, fmt.Sprintf("%s/%d", f.ItemIdentifier.TopicPartition, f.ItemIdentifier.Offset))
	}
	return out
}

// recorder notes the order in which handlers start.
type recorder = lanestest.Recorder

// handlerOf runs rec through the recorder, then returns what does says
// for its name ("t-0/5"), nil by default; a func(), if any, is called
// instead (to panic or exit).
func handlerOf(rec *recorder, does map[string]any) kafka.Handler {
	return func(ctx context.Context, r kafka.Record) error {
		if rec != nil {
			rec.Start(name(r))
		}
		switch d := does[name(r)].(type) {
		case error:
			return d
		case func():
			d()
		}
		return nil
	}
}

// logBuffer is a JSON slog handler into a buffer, safe for concurrent use.
type logBuffer struct{ lanestest.LogBuffer }

// line returns the log line of record "t-0/5".
func (l *logBuffer) line(t testing.TB, record string) map[string]any {
	t.Helper()
	for _, r := range l.Records(t) {
		if r["msg"] == "kafka: record" && fmt.Sprintf("%s-%v/%v", r["topic"], r["partition"], r["offset"]) == record {
			return r
		}
	}
	t.Fatalf("no log line for record %s", record)
	return nil
}

// last returns the last log line.
func (l *logBuffer) last(t testing.TB) map[string]any {
	t.Helper()
	recs := l.Records(t)
	require.NotEmpty(t, recs)
	return recs[len(recs)-1]
}

// recordOf returns "t-0/5" for a slog record of the processor about a
// record, "" otherwise.
func recordOf(r slog.Record) string {
	var topic, part, off string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "topic":
			topic = a.Value.String()
		case "partition":
			part = a.Value.String()
		case "offset":
			off = a.Value.String()
		}
		return true
	})
	if topic == "" {
		return ""
	}
	return topic + "-" + part + "/" + off
}

// deadLetters records what Send stores; err, if set, is returned instead,
// and do, if set, is called first (to panic or exit).
type deadLetters struct {
	mu     sync.Mutex
	sent   []string
	causes []error
	err    error
	do     func()
}

func (d *deadLetters) Send(_ context.Context, rec kafka.Record, cause error) error {
	if d.do != nil {
		d.do()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.sent = append(d.sent, name(rec))
	d.causes = append(d.causes, cause)
	return nil
}

func (d *deadLetters) Sent() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.sent...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
