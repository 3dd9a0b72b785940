package fifo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testQueueARN = "arn:aws:sqs:eu-west-1:123456789012:commands.fifo"

// spec is a compact batch description: "a1 a2 b1 -x" makes messages a1 and
// a2 of group a, b1 of group b, and x without a group (standard queue).
func batchOf(t testing.TB, ids ...string) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for _, id := range ids {
		attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}
		if id[0] != '-' {
			attrs["MessageGroupId"] = id[:1]
		} else {
			id = id[1:]
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      id,
			ReceiptHandle:  "rh-" + id,
			Body:           fmt.Sprintf(`{"id":%q}`, id),
			Attributes:     attrs,
			EventSource:    "aws:sqs",
			EventSourceARN: testQueueARN,
			AWSRegion:      "eu-west-1",
		})
	}
	return ev
}

func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// recorder notes the order in which handlers start, per group and overall.
type recorder struct {
	mu      sync.Mutex
	started []string
}

func (r *recorder) start(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, id)
}

func (r *recorder) Started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...)
}

// logBuffer is a JSON slog handler into a buffer, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *logBuffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for dec.More() {
		var rec map[string]any
		require.NoError(t, dec.Decode(&rec))
		out = append(out, rec)
	}
	return out
}

// fakeDLQ records SendMessage calls; err, if set, is returned instead, and
// panics, if set, is panicked with.
type fakeDLQ struct {
	mu     sync.Mutex
	sent   []*sqs.SendMessageInput
	err    error
	panics any
}

func (f *fakeDLQ) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics != nil {
		panic(f.panics)
	}
	if f.err != nil {
		return nil, f.err
	}
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeDLQ) Sent() []*sqs.SendMessageInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), f.sent...)
}

// hookHandler is a slog.Handler that calls fn with each record before the
// next handler (if any) writes it: a test can act at the moment something is
// logged, or make the logger panic.
type hookHandler struct {
	next slog.Handler
	fn   func(r slog.Record)
}

func (h hookHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next == nil || h.next.Enabled(ctx, l)
}

func (h hookHandler) Handle(ctx context.Context, r slog.Record) error {
	h.fn(r)
	if h.next == nil {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.next != nil {
		h.next = h.next.WithAttrs(as)
	}
	return h
}

func (h hookHandler) WithGroup(name string) slog.Handler {
	if h.next != nil {
		h.next = h.next.WithGroup(name)
	}
	return h
}

// attr returns the value of the record's attribute key, as a string.
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// panickingHandler is a slog.Handler all of whose methods panic.
type panickingHandler struct{}

func (panickingHandler) Enabled(context.Context, slog.Level) bool  { panic("Enabled bug") }
func (panickingHandler) Handle(context.Context, slog.Record) error { panic("Handle bug") }
func (panickingHandler) WithAttrs([]slog.Attr) slog.Handler        { panic("WithAttrs bug") }
func (panickingHandler) WithGroup(string) slog.Handler             { panic("WithGroup bug") }
