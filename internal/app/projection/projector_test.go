package projection_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/projection/projectiontest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// fakeJobs is the job source: the job items by id, or an error for all.
type fakeJobs struct {
	mu    sync.Mutex
	items map[string]jobs.Job
	err   error
	reads int
}

func (f *fakeJobs) Get(_ context.Context, id string) (jobs.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return jobs.Job{}, f.err
	}
	j, ok := f.items[id]
	if !ok {
		return jobs.Job{}, errors.Join(errors.New("jobs: get "+id), jobs.ErrNotFound)
	}
	return j, nil
}

// jobAt is the job item as it was when it emitted e.
func jobAt(e *outbox.Event) jobs.Job {
	return jobs.Job{
		ID: e.JobID, IntentID: "export-intent-7", Tenant: e.Tenant, Status: e.Status, Generation: e.Generation,
		Version: e.Version, Progress: e.Progress, Result: jobs.Result{Key: e.ResultKey, Size: e.ResultSize},
		Error: jobs.Failure{Code: e.ErrorCode}, UpdatedAt: e.OccurredAt,
	}
}

type testBundle struct {
	store  *projection.MemoryStore
	jobs   *fakeJobs
	p      *projection.Projector
	logs   *bytes.Buffer
	events []outbox.Event // job-42's lifecycle, tenant t-1
	ctx    context.Context
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return setupWith(t, projection.ProjectorConfig{})
}

// setupWith is setup with the settings of cfg; the bundle supplies the
// store, the source and the logger.
func setupWith(t *testing.T, cfg projection.ProjectorConfig) *testBundle {
	t.Helper()
	b := &testBundle{
		store:  projection.NewMemoryStore(),
		jobs:   &fakeJobs{items: map[string]jobs.Job{}},
		logs:   &bytes.Buffer{},
		events: projectiontest.Lifecycle("job-42", "t-1"),
		ctx:    t.Context(),
	}
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: b.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Store, cfg.Source, cfg.Logger = b.store, b.jobs, log
	p, err := projection.NewProjector(cfg)
	require.NoError(t, err)
	b.p = p
	return b
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// message is e as the events queue delivers it on its receives-th receive.
func message(t *testing.T, e *outbox.Event, receives int) events.SQSMessage {
	t.Helper()
	body, err := json.Marshal(e)
	require.NoError(t, err)
	return events.SQSMessage{
		MessageId: "msg-" + strings.ReplaceAll(e.EventID, "/", "-"),
		Body:      string(body),
		Attributes: map[string]string{
			"MessageGroupId":          e.JobID,
			"MessageDeduplicationId":  e.EventID,
			"ApproximateReceiveCount": strconv.Itoa(receives),
		},
		EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:fifoworker-events.fifo",
	}
}

func (b *testBundle) handle(t *testing.T, i, receives int) error {
	t.Helper()
	return b.p.Handle(b.ctx, message(t, &b.events[i], receives))
}

// lastLog decodes the last log line.
func (b *testBundle) lastLog(t *testing.T) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(b.logs.String()), "\n")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &rec))
	return rec
}

func (b *testBundle) requireTotals(t *testing.T, processed, completed int64) {
	t.Helper()
	got, err := b.p.Totals(b.ctx, "t-1")
	require.NoError(t, err)
	require.Equal(t, projection.Totals{Tenant: "t-1", Processed: processed, Completed: completed}, got)
}

func (b *testBundle) requireView(t *testing.T, i int) {
	t.Helper()
	got, err := b.p.View(b.ctx, "job-42")
	require.NoError(t, err)
	require.Equal(t, projection.ViewOfEvent(&b.events[i]), got)
}

func TestHandleApplies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	require.NoError(t, b.handle(t, 1, 1))
	b.requireTotals(t, 10, 0)
	b.requireView(t, 1)
	rec := b.lastLog(t)
	require.Equal(t, "projection: event projected", rec["msg"])
	require.Equal(t, "applied", rec["outcome"])
	require.Equal(t, "job-42", rec["job_id"])
	require.Equal(t, float64(2), rec["version"])
	require.Equal(t, "msg-job-42-v2", rec["message_id"])
	require.Equal(t, "job-42", rec["group_id"])
	require.Equal(t, float64(1), rec["receive_count"])
	require.Zero(t, b.jobs.reads, "the happy path reads no job")
}

func TestHandleAcknowledgesADuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	require.NoError(t, b.handle(t, 1, 1))
	require.NoError(t, b.handle(t, 1, 2))
	require.Equal(t, "duplicate", b.lastLog(t)["outcome"])
	b.requireTotals(t, 10, 0)
}

func TestHandleAcknowledgesAnOlderEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range b.events {
		require.NoError(t, b.handle(t, i, 1))
	}
	require.NoError(t, b.handle(t, 2, 1), "a late running event")
	require.Equal(t, "older", b.lastLog(t)["outcome"])
	b.requireTotals(t, 40, 1)
	b.requireView(t, 5)
}

func TestHandleFailsOnAGapBelowTheThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	for receives := 1; receives < projection.DefaultRecoverAfter; receives++ {
		err := b.handle(t, 2, receives)
		require.ErrorIs(t, err, projection.ErrGap)
		require.False(t, fifo.IsPermanent(err), "a gap is waited for, never dead-lettered")
		var gap *projection.GapError
		require.ErrorAs(t, err, &gap)
		require.Equal(t, projection.GapError{JobID: "job-42", Cursor: 0, Version: 3}, *gap,
			"v1 added nothing and moved no cursor; v3 starts from v2's progress, 10")
	}
	rec := b.lastLog(t)
	require.Equal(t, "projection: waiting for an earlier version", rec["msg"])
	require.Equal(t, float64(0), rec["cursor"])
	require.Zero(t, b.jobs.reads, "no recovery before the threshold")
	b.requireTotals(t, 0, 0)
	b.requireView(t, 2) // the snapshot does not wait
}

func TestHandleRecoversAtTheThreshold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	require.NoError(t, b.handle(t, 1, 1))
	// Version 3 never comes; the job item has moved on to version 5.
	b.jobs.items["job-42"] = jobAt(&b.events[4])
	require.ErrorIs(t, b.handle(t, 3, 2), projection.ErrGap)
	require.NoError(t, b.handle(t, 3, projection.DefaultRecoverAfter))
	require.Equal(t, 1, b.jobs.reads)
	rec := b.lastLog(t)
	require.Equal(t, "projection: recovered from the job item", rec["msg"])
	require.Equal(t, float64(2), rec["cursor_from"])
	require.Equal(t, float64(5), rec["cursor_to"])
	require.Equal(t, float64(15), rec["processed_delta"], "25 now against 10 at the cursor")
	b.requireTotals(t, 25, 0)
	b.requireView(t, 4)

	// The rest of the group follows without waiting.
	require.NoError(t, b.handle(t, 4, 3))
	require.Equal(t, "duplicate", b.lastLog(t)["outcome"])
	require.NoError(t, b.handle(t, 5, 3))
	require.Equal(t, "applied", b.lastLog(t)["outcome"])
	b.requireTotals(t, 40, 1)
}

func TestHandleRecoversAfterAConfiguredThreshold(t *testing.T) {
	t.Parallel()
	b := setupWith(t, projection.ProjectorConfig{RecoverAfter: 5})
	b.jobs.items["job-42"] = jobAt(&b.events[5])
	for receives := 1; receives < 5; receives++ {
		require.ErrorIs(t, b.handle(t, 2, receives), projection.ErrGap)
	}
	require.NoError(t, b.handle(t, 2, 5))
	b.requireTotals(t, 40, 1)
}

func TestHandleDeadLettersAMalformedBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, body := range map[string]string{
		"not JSON":         "job-42 completed",
		"unknown field":    `{"type":"job.completed","event_id":"job-42/v3","job_id":"job-42","tenant":"t-1","version":3,"status":"completed","colour":"red"}`,
		"a command":        `{"type":"job.run","event_id":"job-42/v0","job_id":"job-42","tenant":"t-1","version":0,"status":"pending"}`,
		"id of another v":  `{"type":"job.started","event_id":"job-42/v2","job_id":"job-42","tenant":"t-1","version":1,"status":"running"}`,
		"trailing garbage": `{"type":"job.started","event_id":"job-42/v1","job_id":"job-42","tenant":"t-1","version":1,"status":"running"} {}`,
	} {
		err := b.p.Handle(b.ctx, events.SQSMessage{MessageId: "m-1", Body: body})
		require.True(t, fifo.IsPermanent(err), "%s: %v", name, err)
		require.ErrorIs(t, err, outbox.ErrMalformed, name)
	}
	_, err := b.p.View(b.ctx, "job-42")
	require.ErrorIs(t, err, projection.ErrNotFound)
	b.requireTotals(t, 0, 0)
}

func TestHandleAcknowledgesWhenTheJobIsGone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.handle(t, 0, 1))
	// No job item: it expired under the Jobs table's TTL. v3 starts from
	// v2's progress, which the cursor has not counted: a gap.
	require.NoError(t, b.handle(t, 2, projection.DefaultRecoverAfter))
	rec := b.lastLog(t)
	require.Equal(t, "WARN", rec["level"])
	require.Contains(t, rec["msg"], "job gone")
	b.requireTotals(t, 0, 0)
	cur, err := b.store.Cursor(b.ctx, "t-1", "job-42")
	require.NoError(t, err)
	require.Zero(t, cur.Version, "nothing to recover to")
}

func TestHandleRetriesWhenTheJobCannotBeRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.jobs.err = errors.New("throttled")
	err := b.handle(t, 2, projection.DefaultRecoverAfter)
	require.ErrorContains(t, err, "throttled")
	require.False(t, fifo.IsPermanent(err))
	b.requireTotals(t, 0, 0)
}

func TestHandleRefusesToRecoverFromAnotherTenantsJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := jobAt(&b.events[5])
	other.Tenant = "t-2"
	b.jobs.items["job-42"] = other
	err := b.handle(t, 2, projection.DefaultRecoverAfter)
	require.True(t, fifo.IsPermanent(err), "%v", err)
	b.requireTotals(t, 0, 0)
}

// An event the job item, read after it arrived, has not reached is not
// the job's: forged, or left over from a job whose id was reused after
// its item expired. Waiting cannot make it the job's: at the threshold it
// is acknowledged without counting its delta, logged as an error, and the
// projection recovered to the item.
func TestHandleAcknowledgesAnEventItsJobItemIsBehind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A job id reused after its item expired: the new item is at version 1.
	b.jobs.items["job-42"] = jobAt(&b.events[0])
	require.ErrorIs(t, b.handle(t, 2, projection.DefaultRecoverAfter-1), projection.ErrGap)
	require.NoError(t, b.handle(t, 2, projection.DefaultRecoverAfter))
	rec := b.lastLog(t)
	require.Equal(t, "ERROR", rec["level"])
	require.Equal(t, "projection: an event its job item has not reached: not the job's; acknowledged", rec["msg"])
	require.Equal(t, float64(1), rec["job_version"])
	b.requireTotals(t, 0, 0)
	cur, err := b.store.Cursor(b.ctx, "t-1", "job-42")
	require.NoError(t, err)
	require.Equal(t, int64(1), cur.Version, "recovered to the item")
}

// TestProjectorAsAFifoHandler runs a batch through pkg/fifo: a gap fails its
// message and the rest of its lane (received again in order), while another
// job's lane runs on.
func TestProjectorAsAFifoHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := projectiontest.Failing("job-43", "t-1")
	batch := events.SQSEvent{Records: []events.SQSMessage{
		message(t, &b.events[0], 1),
		message(t, &other[0], 1),
		message(t, &b.events[2], 1), // v2 is missing from the batch: a gap
		message(t, &other[1], 1),
		message(t, &b.events[3], 1),
		message(t, &other[2], 1),
	}}
	proc, err := fifo.New(fifo.Config{Handler: b.p.Handle})
	require.NoError(t, err)
	resp, err := proc.Process(b.ctx, batch)
	require.NoError(t, err)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	require.Equal(t, []string{"msg-job-42-v3", "msg-job-42-v4"}, failed)
	b.requireTotals(t, 7, 0)

	// Version 2 arrives; the group runs again from it.
	batch = events.SQSEvent{Records: []events.SQSMessage{
		message(t, &b.events[1], 1), message(t, &b.events[2], 2), message(t, &b.events[3], 2),
		message(t, &b.events[4], 1), message(t, &b.events[5], 1),
	}}
	resp, err = proc.Process(b.ctx, batch)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	b.requireTotals(t, 47, 1)
}
