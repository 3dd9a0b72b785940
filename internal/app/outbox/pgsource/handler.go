package pgsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// ErrUnknownTrigger is wrapped by Handle's error for an event that is
// neither a nudge nor EventBridge's scheduled event: nothing is drained
// for it (an event nobody meant for the relay), and nothing is lost, as
// the rows wait for the next nudge or the schedule.
var ErrUnknownTrigger = errors.New("pgsource: the event is neither a nudge nor a scheduled event")

// trigger holds the fields Handle tells its events apart by.
type trigger struct {
	nudge.Payload
	DetailType string `json:"detail-type"` // "Scheduled Event" from an EventBridge rule
	Source     string `json:"source"`      // "aws.events" from an EventBridge rule
}

// Handle is the relay function's handler: it drains the outbox for an
// asynchronous nudge a writer sent after its commit (nudge.Payload) or for
// the schedule that backs the nudges up (an EventBridge rule's scheduled
// event: detail-type "Scheduled Event", source "aws.events", as the
// EventBridge user guide shows it). Any other event is refused with
// ErrUnknownTrigger. A Drain's database error is returned, so Lambda
// retries an asynchronous invocation (twice) and the schedule comes back.
func (r *Relay) Handle(ctx context.Context, event json.RawMessage) (Report, error) {
	var tr trigger
	if err := json.Unmarshal(event, &tr); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrUnknownTrigger, err)
	}
	var cause string
	switch {
	case tr.Type == nudge.PayloadType && tr.Commits >= 1:
		cause = "nudge"
	case tr.Type == "" && tr.DetailType == "Scheduled Event" && tr.Source == "aws.events":
		cause = "schedule"
	default:
		return Report{}, fmt.Errorf("%w: type %q, detail-type %q, source %q, commits %d", ErrUnknownTrigger, tr.Type, tr.DetailType, tr.Source, tr.Commits)
	}
	rep, err := r.Drain(ctx)
	attrs := []any{"trigger", cause, "rows", rep.Rows, "messages", rep.Messages, "passes", rep.Passes,
		"held", rep.Held, "failed", rep.Failed, "stop", string(rep.Stop)}
	if cause == "nudge" {
		// From the first commit the nudge stands for to the end of the
		// Drain that published it: the relay's latency, as the writer's
		// clock and this one agree.
		attrs = append(attrs, "commits", tr.Commits, "since_first_commit_ms", r.now().Sub(tr.FirstCommit).Milliseconds())
	}
	if err != nil {
		r.log.Error("pgsource: drain failed; the next trigger publishes what this one did not", append(attrs, "error", err)...)
		return rep, err
	}
	r.log.Info("pgsource: drained", attrs...)
	return rep, nil
}
