package lanestest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"sync"
	"testing"
)

// LogBuffer is a JSON slog handler's output, safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Logger logs everything, Debug included, into l as JSON.
func (l *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Records returns the lines logged so far, decoded.
func (l *LogBuffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(l.buf.Bytes()))
	for dec.More() {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("a log line is not JSON: %v", err)
		}
		out = append(out, rec)
	}
	return out
}

// HookHandler is a slog.Handler that calls Fn with each record before Next
// (if any) writes it: a test can act at the moment something is logged,
// make the logger panic or end its goroutine.
type HookHandler struct {
	Next slog.Handler
	Fn   func(r slog.Record)
	// ExitOnWith: deriving a logger ends the goroutine (runtime.Goexit).
	ExitOnWith bool
}

// Enabled is Next's, or true without one.
func (h HookHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Next == nil || h.Next.Enabled(ctx, l)
}

// Handle calls Fn, then Next's Handle, if any.
func (h HookHandler) Handle(ctx context.Context, r slog.Record) error {
	h.Fn(r)
	if h.Next == nil {
		return nil
	}
	return h.Next.Handle(ctx, r)
}

// WithAttrs derives Next (or ends the goroutine, with ExitOnWith).
func (h HookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if h.ExitOnWith {
		runtime.Goexit()
	}
	if h.Next != nil {
		h.Next = h.Next.WithAttrs(as)
	}
	return h
}

// WithGroup derives Next.
func (h HookHandler) WithGroup(name string) slog.Handler {
	if h.Next != nil {
		h.Next = h.Next.WithGroup(name)
	}
	return h
}

// Attr returns the value of the record's attribute key, as a string.
func Attr(r slog.Record, key string) string {
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

// PanickingHandler is a slog.Handler all of whose methods panic.
type PanickingHandler struct{}

// Enabled panics.
func (PanickingHandler) Enabled(context.Context, slog.Level) bool { panic("Enabled bug") }

// Handle panics.
func (PanickingHandler) Handle(context.Context, slog.Record) error { panic("Handle bug") }

// WithAttrs panics.
func (PanickingHandler) WithAttrs([]slog.Attr) slog.Handler { panic("WithAttrs bug") }

// WithGroup panics.
func (PanickingHandler) WithGroup(string) slog.Handler { panic("WithGroup bug") }

// Recorder notes the order in which handlers start.
type Recorder struct {
	mu      sync.Mutex
	started []string
}

// Start notes that the handler of item name started.
func (r *Recorder) Start(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, name)
}

// Started returns the items started so far, in order.
func (r *Recorder) Started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...)
}
