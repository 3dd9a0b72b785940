package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/task"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testBundle is a worker on the memory store and a bucket in memory
// (s3mem.S3), with a controllable clock and a log recorder.
type testBundle struct {
	t     testing.TB
	clock *jobstest.Clock
	// behind sets the store's clock back from clock (nanoseconds): two
	// hosts' clocks disagree, and a test that plays a takeover by one host
	// and a write by the other sets it for the second.
	behind     atomic.Int64
	store      *jobs.MemoryStore
	s3         bucket
	candidates *candidate.Store
	logs       *logRecorder
	// jobs is what the worker writes through: the store, or a wrapper a
	// test installs to inject faults.
	jobs jobs.Store
}

// setup returns a bundle whose clock starts at the wall clock's now, so
// that invocation deadlines (real contexts) and the store's leases agree;
// tests move the store's clock forward to end leases.
func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWith(t, jobs.Config{})
}

// setupWith is setup with a store of the settings of cfg (the bundle
// supplies the clock).
func setupWith(t *testing.T, cfg jobs.Config) *testBundle {
	t.Helper()
	b := &testBundle{t: t, clock: jobstest.NewClock(time.Now().UTC().Truncate(time.Millisecond)), s3: newBucket(t), logs: &logRecorder{}}
	cfg.Now = b.now
	store, err := jobs.NewMemoryStore(cfg)
	require.NoError(t, err)
	b.store = store
	b.jobs = b.store
	candidates, err := candidate.New(candidate.Config{Client: b.s3, Bucket: testBucket, SpoolDir: t.TempDir()})
	require.NoError(t, err)
	b.candidates = candidates
	return b
}

// now is the store's clock.
func (b *testBundle) now() time.Time { return b.clock.Now().Add(-time.Duration(b.behind.Load())) }

// worker returns a worker running task, on the bundle's jobs (as they are
// when it is called).
func (b *testBundle) worker(work task.Task) *worker.Worker {
	return mustNew(b.t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(b.t, work), Logger: slog.New(b.logs)})
}

// create creates a job of tenant t-1 and returns the command its creation
// emitted, as the relay sends it.
func (b *testBundle) create(t *testing.T, jobID string, spec map[string]string) (jobs.Job, events.SQSMessage) {
	t.Helper()
	created, err := b.store.Create(context.Background(), jobs.CreateRequest{JobID: jobID, IntentID: "intent-" + jobID, Tenant: "t-1", Spec: spec})
	require.NoError(t, err)
	return created.Job, commandMessage(t, created.Job, "msg-"+jobID)
}

// commandMessage is the SQS message of the command a job's creation
// emitted, as the relay sends it: group the job id, deduplication id the
// command id.
func commandMessage(t testing.TB, job jobs.Job, messageID string) events.SQSMessage {
	t.Helper()
	cmd := outbox.Command{Type: jobs.MessageRun, CommandID: jobs.OutboxID(job.ID, job.Version), JobID: job.ID,
		IntentID: job.IntentID, Tenant: job.Tenant, Version: job.Version, IssuedAt: job.UpdatedAt}
	raw, err := json.Marshal(cmd)
	require.NoError(t, err)
	return events.SQSMessage{
		MessageId: messageID, Body: string(raw),
		Attributes: map[string]string{"MessageGroupId": job.ID, "MessageDeduplicationId": cmd.CommandID, "ApproximateReceiveCount": "1"},
	}
}

// body is a command body with the given fields changed.
func body(t testing.TB, change func(c *outbox.Command)) string {
	t.Helper()
	c := outbox.Command{Type: jobs.MessageRun, CommandID: "job-42/v0", JobID: "job-42", IntentID: "intent-job-42", Tenant: "t-1", IssuedAt: jobstest.Start}
	if change != nil {
		change(&c)
	}
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	return string(raw)
}

// invocation is the context Lambda gives a handler: a request id and a
// deadline timeout from now (on the wall clock, as Lambda's is).
func invocation(t testing.TB, requestID string, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
}

// get reads a job.
func (b *testBundle) get(t testing.TB, id string) jobs.Job {
	t.Helper()
	j, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	return j
}

// read returns the content of the candidate at key.
func (b *testBundle) read(t testing.TB, key string) string {
	t.Helper()
	k, err := candidate.ParseKey(key)
	require.NoError(t, err)
	r, err := b.candidates.Open(context.Background(), k)
	require.NoError(t, err)
	content, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	return string(content)
}

// lines is a task that writes each line and reports progress after each.
func lines(ls ...string) task.Task {
	return task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		for i, l := range ls {
			if _, err := io.WriteString(in.Out, l+"\n"); err != nil {
				return task.Output{}, err
			}
			if err := in.Progress(ctx, int64(i+1)); err != nil {
				return task.Output{}, err
			}
		}
		return task.Output{Items: int64(len(ls))}, nil
	})
}

// mustNotRun is a task that fails the test if it runs.
func mustNotRun(t *testing.T) task.Task {
	return task.Func("txt", func(context.Context, task.Input) (task.Output, error) {
		t.Error("the task ran")
		return task.Output{}, nil
	})
}

// logRecorder is a slog.Handler that keeps every record with its
// attributes (those of With included), for assertions.
type logRecorder struct {
	mu      sync.Mutex
	records []logRecord
	attrs   []slog.Attr // of this handler, from WithAttrs
	root    *logRecorder
}

type logRecord struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

func (l *logRecorder) sink() *logRecorder {
	if l.root != nil {
		return l.root
	}
	return l
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Message: r.Message, Attrs: map[string]any{}}
	for _, a := range l.attrs {
		rec.Attrs[a.Key] = a.Value.Resolve().Any()
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "" {
			rec.Attrs[a.Key] = a.Value.Resolve().Any()
		}
		return true
	})
	s := l.sink()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, rec)
	return nil
}

func (l *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{attrs: append(slices.Clone(l.attrs), as...), root: l.sink()}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

// find returns the records whose message contains substr.
func (l *logRecorder) find(substr string) []logRecord {
	s := l.sink()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRecord
	for _, r := range s.records {
		if strings.Contains(r.Message, substr) {
			out = append(out, r)
		}
	}
	return out
}

// one returns the one record whose message contains substr.
func (l *logRecorder) one(t testing.TB, substr string) logRecord {
	t.Helper()
	found := l.find(substr)
	require.Len(t, found, 1, "log records containing %q", substr)
	return found[0]
}
