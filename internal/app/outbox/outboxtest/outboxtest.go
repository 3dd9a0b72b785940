// Package outboxtest builds the Jobs table's stream records the relay
// reads, for the tests of internal/app/outbox and of each transport
// (sqsout, kafkaout): one job's history as a shard delivers it.
package outboxtest

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// T0 is when every history begins.
var T0 = time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)

// JobImage is a stream image of j in the Jobs table's item layout.
func JobImage(j jobs.Job) map[string]events.DynamoDBAttributeValue {
	n := func(v int64) events.DynamoDBAttributeValue {
		return events.NewNumberAttribute(strconv.FormatInt(v, 10))
	}
	img := map[string]events.DynamoDBAttributeValue{
		"job_id": events.NewStringAttribute(j.ID), "intent_id": events.NewStringAttribute(j.IntentID),
		"tenant": events.NewStringAttribute(j.Tenant), "status": events.NewStringAttribute(string(j.Status)),
		"generation": n(j.Generation), "version": n(j.Version), "progress": n(j.Progress),
		"created_at": n(j.CreatedAt.UnixMilli()), "updated_at": n(j.UpdatedAt.UnixMilli()),
		"outbox": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"id": events.NewStringAttribute(j.Outbox.ID), "type": events.NewStringAttribute(j.Outbox.Type),
			"version": n(j.Outbox.Version), "payload": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}),
		}),
	}
	if j.Result.Key != "" {
		img["result_key"] = events.NewStringAttribute(j.Result.Key)
		img["result_sha256"] = events.NewStringAttribute(j.Result.SHA256)
		img["result_size"] = n(j.Result.Size)
	}
	return img
}

// History is the stream of one job: its creation (version 0, the run
// command), then one transition per event type given (versions 1, 2, ...),
// each adding 10 to its progress; jobs.EventCompleted completes it.
func History(id string, types ...string) []events.DynamoDBEventRecord {
	j := jobs.Job{ID: id, IntentID: "intent-" + id, Tenant: "t-1", Status: jobs.StatusPending, CreatedAt: T0, UpdatedAt: T0,
		Outbox: jobs.Message{ID: jobs.OutboxID(id, 0), Type: jobs.MessageRun}}
	recs := []events.DynamoDBEventRecord{Record("INSERT", id, nil, &j)}
	for _, typ := range types {
		prev := j
		j.Version++
		j.Status = jobs.StatusRunning
		j.Progress += 10
		j.Outbox = jobs.Message{ID: jobs.OutboxID(id, j.Version), Type: typ, Version: j.Version}
		if typ == jobs.EventCompleted {
			j.Status = jobs.StatusCompleted
		}
		cur := j
		recs = append(recs, Record("MODIFY", id, &prev, &cur))
	}
	return recs
}

var seq atomic.Int64

// Record is a stream record named name (INSERT, MODIFY, REMOVE) of job id,
// with the images of prev and cur (nil for none) and a sequence number
// greater than every record's before it.
func Record(name, id string, prev, cur *jobs.Job) events.DynamoDBEventRecord {
	n := seq.Add(1)
	r := events.DynamoDBEventRecord{EventName: name, EventID: fmt.Sprint(n), Change: events.DynamoDBStreamRecord{
		SequenceNumber: fmt.Sprintf("%021d", n),
		Keys:           map[string]events.DynamoDBAttributeValue{"job_id": events.NewStringAttribute(id)},
	}}
	if prev != nil {
		r.Change.OldImage = JobImage(*prev)
	}
	if cur != nil {
		r.Change.NewImage = JobImage(*cur)
	}
	return r
}
