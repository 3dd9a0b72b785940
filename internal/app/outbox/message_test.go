package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

var t0 = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

// job42 is job-42 at version v of the running example.
func job42(v int64, typ string) jobs.Job {
	j := jobs.Job{
		ID: "job-42", IntentID: "export-intent-7", Tenant: "t-1", Status: jobs.StatusRunning,
		Generation: 2, Version: v, Progress: 120, UpdatedAt: t0.Add(time.Duration(v) * time.Minute),
		Outbox: jobs.Message{ID: jobs.OutboxID("job-42", v), Type: typ, Version: v},
	}
	if typ == jobs.MessageRun {
		j.Status, j.Generation, j.Progress = jobs.StatusPending, 0, 0
	}
	return j
}

func TestFromTransitionBuildsTheCommandOfACreation(t *testing.T) {
	t.Parallel()
	cur := job42(0, jobs.MessageRun)
	msgs, err := outbox.FromTransition(&cur, nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1, "a creation emits its command and no event: events start at version 1")
	m := msgs[0]
	require.Equal(t, outbox.KindCommand, m.Kind)
	require.Equal(t, "job-42", m.GroupID)
	require.Equal(t, "job-42/v0", m.DeduplicationID)
	require.JSONEq(t, `{"type":"job.run","command_id":"job-42/v0","job_id":"job-42","intent_id":"export-intent-7",
		"tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`, string(m.Body))
	c, err := outbox.DecodeCommand(string(m.Body))
	require.NoError(t, err)
	require.Equal(t, "job-42/v0", c.CommandID)
}

func TestFromTransitionBuildsAnEventWithSnapshotAndDelta(t *testing.T) {
	t.Parallel()
	prev := job42(2, jobs.EventProgress)
	prev.Progress = 100
	cur := job42(3, jobs.EventCompleted)
	cur.Status = jobs.StatusCompleted
	cur.Result = jobs.Result{Key: "candidates/job-42/g0000000002/b.ndjson", Size: 4096}
	msgs, err := outbox.FromTransition(&cur, &prev)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, outbox.KindEvent, m.Kind)
	require.Equal(t, "job-42/v3", m.DeduplicationID)
	e, err := outbox.DecodeEvent(string(m.Body))
	require.NoError(t, err)
	require.Equal(t, outbox.Event{
		Type: jobs.EventCompleted, EventID: "job-42/v3", JobID: "job-42", Tenant: "t-1", Version: 3, Generation: 2,
		Status: jobs.StatusCompleted, Progress: 120, Delta: 20, ResultKey: cur.Result.Key, ResultSize: 4096,
		OccurredAt: t0.Add(3 * time.Minute),
	}, e)
}

func TestFromTransitionOfATakeoverHasANegativeDelta(t *testing.T) {
	t.Parallel()
	prev := job42(2, jobs.EventProgress)
	prev.Progress = 80
	cur := job42(3, jobs.EventStarted)
	cur.Progress = 0
	msgs, err := outbox.FromTransition(&cur, &prev)
	require.NoError(t, err)
	e, err := outbox.DecodeEvent(string(msgs[0].Body))
	require.NoError(t, err)
	require.Equal(t, int64(-80), e.Delta, "the sum of a job's deltas is its current progress")
}

func TestFromTransitionSkipsItemsWithoutAMessageAndRefusesAMismatchedOne(t *testing.T) {
	t.Parallel()
	none := jobs.Job{ID: "job-42", Version: 3}
	msgs, err := outbox.FromTransition(&none, nil)
	require.NoError(t, err)
	require.Empty(t, msgs)

	stale := job42(3, jobs.EventProgress)
	stale.Outbox = jobs.Message{ID: "job-42/v2", Type: jobs.EventProgress, Version: 2}
	_, err = outbox.FromTransition(&stale, nil)
	require.ErrorContains(t, err, "carries message")
}

// A nudge (a run command after creation) is published as the command and as
// an event of the same version, so the events stay gapless.
func TestFromTransitionOfANudgeEmitsTheCommandAndARequeuedEvent(t *testing.T) {
	t.Parallel()
	prev := job42(4, jobs.EventStarted)
	prev.Progress = 30
	cur := job42(5, jobs.MessageRun)
	cur.Status, cur.Generation, cur.Progress = jobs.StatusRunning, 2, 30
	msgs, err := outbox.FromTransition(&cur, &prev)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, outbox.KindCommand, msgs[0].Kind)
	c, err := outbox.DecodeCommand(string(msgs[0].Body))
	require.NoError(t, err)
	require.Equal(t, "job-42/v5", c.CommandID)
	require.Equal(t, outbox.KindEvent, msgs[1].Kind)
	e, err := outbox.DecodeEvent(string(msgs[1].Body))
	require.NoError(t, err)
	require.Equal(t, "job.requeued", e.Type)
	require.Equal(t, "job-42/v5", e.EventID)
	require.Zero(t, e.Delta)
}

func TestDedupIDFitsSQSAndStaysUnique(t *testing.T) {
	t.Parallel()
	short := jobs.OutboxID("job-42", 3)
	require.Equal(t, short, outbox.DedupID(short))
	long := jobs.OutboxID(strings.Repeat("a", 128), 12)
	other := jobs.OutboxID(strings.Repeat("a", 128), 13)
	require.Len(t, outbox.DedupID(long), 128)
	require.NotEqual(t, outbox.DedupID(long), outbox.DedupID(other))
	require.Equal(t, outbox.DedupID(long), outbox.DedupID(long))
}

// Every bad body is ErrMalformed with a reason, never a panic or a zero
// value taken for a command.
func TestDecodersRefuseWhatTheRelayNeverWrites(t *testing.T) {
	t.Parallel()
	good := func(mut func(map[string]any)) string {
		m := map[string]any{"type": "job.run", "command_id": "job-42/v0", "job_id": "job-42", "intent_id": "i",
			"tenant": "t-1", "version": 0, "issued_at": "2026-11-04T09:00:00Z"}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"not json":           {`{"type":`, "unexpected EOF"},
		"array":              {`[]`, "cannot unmarshal array"},
		"unknown field":      {good(func(m map[string]any) { m["priority"] = 1 }), `unknown field "priority"`},
		"trailing data":      {good(func(map[string]any) {}) + `{}`, "data after"},
		"unknown type":       {good(func(m map[string]any) { m["type"] = "job.delete" }), "is not \"job.run\""},
		"job id with slash":  {good(func(m map[string]any) { m["job_id"] = "../job-42" }), "job id"},
		"job id 129 chars":   {good(func(m map[string]any) { m["job_id"] = strings.Repeat("j", 129) }), "129 bytes"},
		"id of another job":  {good(func(m map[string]any) { m["command_id"] = "job-43/v0" }), "is not job job-42's"},
		"no tenant":          {good(func(m map[string]any) { delete(m, "tenant") }), "no tenant"},
		"oversized":          {good(func(m map[string]any) { m["intent_id"] = strings.Repeat("x", outbox.MaxBody) }), "over"},
		"wrong field type":   {good(func(m map[string]any) { m["version"] = "0" }), "cannot unmarshal string"},
		"unicode in job id":  {good(func(m map[string]any) { m["job_id"] = "jöb-42" }), "job id"},
		"missing everything": {`{}`, "is not \"job.run\""},
	} {
		_, err := outbox.DecodeCommand(tc.body)
		require.ErrorIs(t, err, outbox.ErrMalformed, name)
		require.ErrorContains(t, err, tc.want, name)
	}

	event := func(mut func(map[string]any)) string {
		m := map[string]any{"type": "job.progress", "event_id": "job-42/v2", "job_id": "job-42", "tenant": "t-1",
			"version": 2, "generation": 1, "status": "running", "progress": 10, "delta": 10, "occurred_at": "2026-11-04T09:00:00Z"}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	_, err := outbox.DecodeEvent(event(func(map[string]any) {}))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ body, want string }{
		"a command":        {event(func(m map[string]any) { m["type"] = "job.run" }), "not a job event"},
		"foreign type":     {event(func(m map[string]any) { m["type"] = "order.created" }), "not a job event"},
		"version 0":        {event(func(m map[string]any) { m["version"] = 0; m["event_id"] = "job-42/v0" }), "start at version 1"},
		"id mismatch":      {event(func(m map[string]any) { m["event_id"] = "job-42/v9" }), "is not job job-42's"},
		"unknown status":   {event(func(m map[string]any) { m["status"] = "paused" }), "unknown status"},
		"negative":         {event(func(m map[string]any) { m["progress"] = -1 }), "negative progress"},
		"no tenant":        {event(func(m map[string]any) { m["tenant"] = "" }), "no tenant"},
		"unknown field":    {event(func(m map[string]any) { m["admin"] = true }), `unknown field "admin"`},
		"bad time":         {event(func(m map[string]any) { m["occurred_at"] = "yesterday" }), "cannot parse"},
		"bad job id chars": {event(func(m map[string]any) { m["job_id"] = "job 42"; m["event_id"] = "job 42/v2" }), "job id"},
	} {
		_, err := outbox.DecodeEvent(tc.body)
		require.ErrorIs(t, err, outbox.ErrMalformed, name)
		require.ErrorContains(t, err, tc.want, name)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(`{"type":"job.run","command_id":"job-42/v0","job_id":"job-42","intent_id":"i","tenant":"t","version":0,"issued_at":"2026-11-04T09:00:00Z"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := outbox.DecodeCommand(body)
		if err != nil {
			require.ErrorIs(t, err, outbox.ErrMalformed)
			return
		}
		require.NoError(t, jobs.ValidateID(c.JobID))
		require.Equal(t, jobs.OutboxID(c.JobID, c.Version), c.CommandID)
	})
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(`{"type":"job.completed","event_id":"job-42/v3","job_id":"job-42","tenant":"t","version":3,"generation":2,"status":"completed","progress":1,"delta":1,"occurred_at":"2026-11-04T09:00:00Z"}`)
	f.Add(`{"type":"job.started"}`)
	f.Fuzz(func(t *testing.T, body string) {
		e, err := outbox.DecodeEvent(body)
		if err != nil {
			require.ErrorIs(t, err, outbox.ErrMalformed)
			return
		}
		require.GreaterOrEqual(t, e.Version, int64(1))
		require.Equal(t, jobs.OutboxID(e.JobID, e.Version), e.EventID)
	})
}

// Each message names its body's type and its whole outbox id, whatever
// the transport: a Kafka record carries both as headers, where SQS's
// deduplication id is the outbox id cut to 128 characters.
func TestFromTransitionNamesEachMessagesTypeAndOutboxID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 128)
	prev := job42(4, jobs.EventStarted)
	prev.ID = long
	cur := job42(5, jobs.MessageRun)
	cur.ID, cur.Outbox.ID = long, jobs.OutboxID(long, 5)
	msgs, err := outbox.FromTransition(&cur, &prev)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	for i, typ := range []string{jobs.MessageRun, "job.requeued"} {
		require.Equal(t, typ, msgs[i].Type)
		require.Equal(t, long+"/v5", msgs[i].OutboxID, "the whole id, past 128 characters")
		require.Equal(t, outbox.DedupID(long+"/v5"), msgs[i].DeduplicationID)
		require.NotEqual(t, msgs[i].OutboxID, msgs[i].DeduplicationID)
	}
	created := job42(0, jobs.MessageRun)
	msgs, err = outbox.FromTransition(&created, nil)
	require.NoError(t, err)
	require.Equal(t, jobs.MessageRun, msgs[0].Type)
	require.Equal(t, "job-42/v0", msgs[0].OutboxID)
	before, done := job42(5, jobs.EventProgress), job42(6, jobs.EventCompleted)
	msgs, err = outbox.FromTransition(&done, &before)
	require.NoError(t, err)
	require.Equal(t, jobs.EventCompleted, msgs[0].Type)
	require.Equal(t, "job-42/v6", msgs[0].OutboxID)
}
