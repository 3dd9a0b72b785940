package projection_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// FuzzProjectorHandle: any body on the events queue is handled without a
// panic, and its fate is one of the three the projector promises: a body
// the decoder refuses is permanent (fifo.Permanent wrapping
// outbox.ErrMalformed, so the quarantine parks it at once); an event it
// accepts is projected (nil), or waits for an earlier version (a *GapError,
// received again), or, disagreeing with the cursor, is acknowledged once
// the job item is read (nil: here there is none). Never a failure the store would repeat on every
// receive: what the decoder accepts, the store accepts. A first event's
// snapshot is the job's view.
func FuzzProjectorHandle(f *testing.F) {
	raw, err := os.ReadFile("../../../events/sqs-events-batch.json")
	require.NoError(f, err)
	var batch events.SQSEvent
	require.NoError(f, json.Unmarshal(raw, &batch))
	for _, m := range batch.Records {
		f.Add(m.Body, uint8(1))
	}
	f.Add(`{"type":"job.started","event_id":"job-42/v1","job_id":"job-42","tenant":"t-1","version":1,"generation":-1,"status":"running","progress":0,"delta":0,"occurred_at":"2026-11-04T09:01:00Z"}`, uint8(1))
	f.Add(`{"type":"job.completed","event_id":"job-42/v1","job_id":"job-42","tenant":"`+strings.Repeat("t", 300)+`","version":1,"status":"completed","occurred_at":"2026-11-04T09:01:00Z"}`, uint8(5))
	f.Add(`{"type":"job.x","event_id":"j/v9","job_id":"j","tenant":"t","version":9,"status":"failed","occurred_at":"0001-01-01T00:00:00Z"}`, uint8(9))
	f.Add(`{}`, uint8(0))
	f.Fuzz(func(t *testing.T, body string, receives uint8) {
		ctx := context.Background()
		source, err := jobs.NewMemoryStore(jobs.Config{})
		require.NoError(t, err)
		p, err := projection.NewProjector(projection.ProjectorConfig{Store: projection.NewMemoryStore(), Source: source})
		require.NoError(t, err)
		msg := events.SQSMessage{MessageId: "m-1", Body: body, Attributes: map[string]string{
			"MessageGroupId": "job-42", "ApproximateReceiveCount": strconv.Itoa(int(receives%10) + 1),
		}}
		err = p.Handle(ctx, msg)
		ev, decodeErr := outbox.DecodeEvent(body)
		if decodeErr != nil {
			require.True(t, fifo.IsPermanent(err), "a body the decoder refuses is permanent: %v", err)
			require.ErrorIs(t, err, outbox.ErrMalformed)
			return
		}
		require.False(t, errors.Is(err, projection.ErrInvalid), "the store refused what the decoder accepted: %v", err)
		var gap *projection.GapError
		require.True(t, err == nil || errors.As(err, &gap), "projected or waiting, nothing else: %v", err)
		v, err := p.View(ctx, ev.JobID)
		require.NoError(t, err, "the view is written whatever the totals decide")
		require.Equal(t, projection.ViewOfEvent(&ev), v)
	})
}

// FuzzProjectorHistory: the events of one job, delivered in any order,
// with duplicates and old versions replayed (as a queue beyond its
// deduplication window, or a replay, would), never take its view back and
// never count a delta twice. After each delivery the view holds the
// newest version delivered so far; the cursor is where applying the
// deliveries in order leads (an event that adds nothing is skipped; one
// that adds is counted when it is newer than the cursor and starts from
// the cursor's progress, and waits when it is beyond the next version and
// does not); the tenant's processed total is the progress at the cursor;
// completed is 1 once the completion is counted. Delivering the whole
// history in order at the end counts the job exactly once, to its last
// progress.
func FuzzProjectorHistory(f *testing.F) {
	f.Add([]byte{3, 200, 10, 20, 30, 1, 2, 3, 3, 2, 1})
	f.Add([]byte{7, 1, 0, 5, 5, 1, 0, 9, 7, 7, 6, 5, 4, 3, 2, 1, 1})
	f.Add([]byte{0, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		ctx := context.Background()
		const id, tenant = "job-42", "t-1"
		n := int(data[0]%8) + 1 // versions 1..n
		final := []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusCancelled, jobs.StatusRunning}[data[1]%4]
		data = data[2:]
		progress := make([]int64, n+1) // progress[v]; version 0 is the creation
		bodies := make([]string, n+1)
		status := make([]jobs.Status, n+1)
		status[0] = jobs.StatusPending
		at := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
		for v := 1; v <= n; v++ {
			typ, st := jobs.EventProgress, jobs.StatusRunning
			if v == 1 {
				typ = jobs.EventStarted
			} else if len(data) > 0 {
				progress[v] = int64(data[0]) // a takeover may restart the count: deltas may be negative
				data = data[1:]
			}
			if v == n && final != jobs.StatusRunning {
				st = final
				typ = map[jobs.Status]string{jobs.StatusCompleted: jobs.EventCompleted, jobs.StatusFailed: jobs.EventFailed, jobs.StatusCancelled: jobs.EventCancelled}[final]
			}
			status[v] = st
			b, err := json.Marshal(outbox.Event{
				Type: typ, EventID: jobs.OutboxID(id, int64(v)), JobID: id, Tenant: tenant, Version: int64(v), Generation: 1,
				Status: st, Progress: progress[v], Delta: progress[v] - progress[v-1], OccurredAt: at.Add(time.Duration(v) * time.Minute),
			})
			require.NoError(t, err)
			bodies[v] = string(b)
		}
		store := projection.NewMemoryStore()
		source, err := jobs.NewMemoryStore(jobs.Config{})
		require.NoError(t, err)
		p, err := projection.NewProjector(projection.ProjectorConfig{Store: store, Source: source})
		require.NoError(t, err)
		cursor, newest := 0, 0
		deliver := func(v int) {
			t.Helper()
			err := p.Handle(ctx, events.SQSMessage{MessageId: "m", Body: bodies[v], Attributes: map[string]string{
				"MessageGroupId": id, "ApproximateReceiveCount": "1",
			}})
			var gap *projection.GapError
			adds := progress[v] != progress[v-1] || status[v].Final()
			follows := v > cursor && progress[v-1] == progress[cursor] && !status[cursor].Final()
			switch {
			case adds && !follows && v > cursor+1:
				require.ErrorAs(t, err, &gap, "v%d with the cursor at v%d waits", v, cursor)
			default:
				require.NoError(t, err, "v%d with the cursor at v%d", v, cursor)
			}
			if adds && follows {
				cursor = v
			}
			newest = max(newest, v)
			view, err := p.View(ctx, id)
			require.NoError(t, err)
			require.Equal(t, int64(newest), view.Version, "the view holds the newest version delivered")
			c, err := store.Cursor(ctx, tenant, id)
			require.NoError(t, err)
			require.Equal(t, int64(cursor), c.Version)
			tot, err := p.Totals(ctx, tenant)
			require.NoError(t, err)
			require.Equal(t, progress[cursor], tot.Processed, "the sum of the deltas counted, each once")
			completed := int64(0)
			if status[cursor] == jobs.StatusCompleted {
				completed = 1
			}
			require.Equal(t, completed, tot.Completed)
		}
		for _, b := range data {
			deliver(int(b)%n + 1)
		}
		for v := 1; v <= n; v++ {
			deliver(v)
		}
		last := n
		for last > 1 && progress[last] == progress[last-1] && !status[last].Final() {
			last--
		}
		if progress[last] == progress[last-1] && !status[last].Final() {
			last = 0 // nothing ever added
		}
		require.Equal(t, last, cursor, "the cursor ends at the last version that adds")
		tot, err := p.Totals(ctx, tenant)
		require.NoError(t, err)
		require.Equal(t, progress[n], tot.Processed, "exact: the job's final progress")
	})
}
