package projectiontest

import (
	"time"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Start is when the histories begin: version v occurred v minutes later.
var Start = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

// Step is one transition of a job: its event type and the snapshot after it.
type Step struct {
	Type       string // jobs.EventStarted, ...
	Status     jobs.Status
	Generation int64
	Progress   int64
	ResultKey  string
	ResultSize int64
	ErrorCode  string
}

// Events returns the events of a job whose versions 1, 2, ... are steps,
// as the relay builds them: event id, snapshot, and each delta the change of
// progress since the previous version (version 0 has progress 0).
func Events(jobID, tenant string, steps ...Step) []outbox.Event {
	evs := make([]outbox.Event, len(steps))
	var before int64
	for i, s := range steps {
		v := int64(i + 1)
		evs[i] = outbox.Event{
			Type: s.Type, EventID: jobs.OutboxID(jobID, v), JobID: jobID, Tenant: tenant,
			Version: v, Generation: s.Generation, Status: s.Status, Progress: s.Progress, Delta: s.Progress - before,
			ResultKey: s.ResultKey, ResultSize: s.ResultSize, ErrorCode: s.ErrorCode,
			OccurredAt: Start.Add(time.Duration(v) * time.Minute),
		}
		before = s.Progress
	}
	return evs
}

// Lifecycle is a job's six events: generation 1 starts and counts to 30,
// its lease expires and generation 2 takes over (the count restarts: delta
// -30), counts to 25, and completes at 40.
func Lifecycle(jobID, tenant string) []outbox.Event {
	return Events(jobID, tenant,
		Step{Type: jobs.EventStarted, Status: jobs.StatusRunning, Generation: 1},
		Step{Type: jobs.EventProgress, Status: jobs.StatusRunning, Generation: 1, Progress: 10},
		Step{Type: jobs.EventProgress, Status: jobs.StatusRunning, Generation: 1, Progress: 30},
		Step{Type: jobs.EventStarted, Status: jobs.StatusRunning, Generation: 2},
		Step{Type: jobs.EventProgress, Status: jobs.StatusRunning, Generation: 2, Progress: 25},
		Step{Type: jobs.EventCompleted, Status: jobs.StatusCompleted, Generation: 2, Progress: 40,
			ResultKey: "candidates/" + jobID + "/g0000000002/attempt-b.json", ResultSize: 2048},
	)
}

// Failing is a job's three events: it starts, counts to 7 and fails.
func Failing(jobID, tenant string) []outbox.Event {
	return Events(jobID, tenant,
		Step{Type: jobs.EventStarted, Status: jobs.StatusRunning, Generation: 1},
		Step{Type: jobs.EventProgress, Status: jobs.StatusRunning, Generation: 1, Progress: 7},
		Step{Type: jobs.EventFailed, Status: jobs.StatusFailed, Generation: 1, Progress: 7, ErrorCode: "source_gone"},
	)
}
