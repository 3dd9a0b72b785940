package projection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// JobSource reads the authoritative job a recovery starts from. It must read
// strongly consistently; *jobs.DynamoStore and *jobs.MemoryStore do.
type JobSource interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
}

// Receive thresholds of recovery.
const (
	// DefaultRecoverAfter is the receive at which a waiting event stops
	// waiting for its predecessor and recovers from the job item.
	DefaultRecoverAfter = 3
	// MaxRecoverAfter is the highest threshold WithRecoverAfter takes. The
	// events queue's maxReceiveCount (10 in template.yaml) must be greater
	// than the threshold in use, or SQS dead-letters a waiting event before
	// it recovers.
	MaxRecoverAfter = 9
)

// Projector consumes the events queue: Handle projects one event into the
// job views and tenant totals. It is a fifo.Handler: fifo.New(p.Handle).
type Projector struct {
	store        Store
	source       JobSource
	log          *slog.Logger
	recoverAfter int
}

// Option configures a Projector.
type Option func(*Projector)

// WithLogger logs each event's outcome (job_id, version, message_id,
// group_id, receive_count, outcome): applied, duplicates and older events
// at Debug, waiting on a gap at Info, recoveries and a job gone at Warn.
// Without it nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(p *Projector) { p.log = l } }

// WithRecoverAfter sets the receive count (ApproximateReceiveCount) at
// which an event that finds a gap recovers from the job item instead of
// failing again: 1 to MaxRecoverAfter, default DefaultRecoverAfter.
func WithRecoverAfter(receives int) Option { return func(p *Projector) { p.recoverAfter = receives } }

// NewProjector returns a Projector writing to store and recovering from
// source. It panics on a nil store or source or an invalid option: both are
// programming errors, found at cold start.
func NewProjector(store Store, source JobSource, opts ...Option) *Projector {
	if store == nil || source == nil {
		panic("projection: NewProjector needs a store and a job source")
	}
	p := &Projector{store: store, source: source, recoverAfter: DefaultRecoverAfter}
	for _, opt := range opts {
		opt(p)
	}
	if p.recoverAfter < 1 || p.recoverAfter > MaxRecoverAfter {
		panic(fmt.Sprintf("projection: WithRecoverAfter(%d) is outside [1, %d]", p.recoverAfter, MaxRecoverAfter))
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return p
}

// Handle projects the event in msg. It returns nil when the event is
// projected, was already, or cannot be any more (its job is gone, or the
// job item shows it is not the job's); a *GapError while the event waits
// for its predecessor, so that the message and the rest of its group are
// received again; fifo.Permanent for a body that can never be decoded;
// any other error to be retried. An event that disagrees with the job's
// cursor (ErrMismatch) recovers the projection from the job item at once.
func (p *Projector) Handle(ctx context.Context, msg events.SQSMessage) error {
	receives := receiveCount(&msg)
	log := p.log.With(
		slog.String("message_id", msg.MessageId),
		slog.String("group_id", msg.Attributes["MessageGroupId"]),
		slog.Int("receive_count", receives),
	)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("aws_request_id", lc.AwsRequestID))
	}
	ev, err := outbox.DecodeEvent(msg.Body)
	if err != nil {
		log.WarnContext(ctx, "projection: malformed event", slog.Any("error", err))
		return fifo.Permanent(fmt.Errorf("projection: message %s: %w", msg.MessageId, err))
	}
	log = log.With(slog.String("job_id", ev.JobID), slog.Int64("version", ev.Version), slog.String("tenant", ev.Tenant))
	res, err := p.store.Apply(ctx, ViewOfEvent(&ev), ev.Delta)
	var gap *GapError
	var mismatch *MismatchError
	switch {
	case errors.As(err, &gap):
		if receives < p.recoverAfter {
			log.InfoContext(ctx, "projection: waiting for an earlier version",
				slog.Int64("cursor", gap.Cursor), slog.Bool("view_updated", res.ViewUpdated), slog.Int("recover_after", p.recoverAfter))
			return err
		}
		return p.recover(ctx, log.With(slog.String("reason", "gap")), &ev, gap.Cursor)
	case errors.As(err, &mismatch):
		// The event or the cursor is not the job's: waiting cannot tell
		// which, the job item can.
		return p.recover(ctx, log.With(slog.String("reason", "mismatch")), &ev, mismatch.Cursor.Version)
	case err != nil:
		return err
	}
	log.DebugContext(ctx, "projection: event projected", slog.String("outcome", res.Outcome.String()),
		slog.Int64("cursor", res.Cursor), slog.Bool("view_updated", res.ViewUpdated), slog.Int64("delta", ev.Delta))
	return nil
}

// recover brings the job's projection to the job item, after which ev is
// acknowledged: it is then a duplicate or older, or, when the item, read
// after ev arrived, has not reached ev's version, it is not the job's
// (forged, or left over from a job whose id was reused after its item
// expired), and counting it can never be right.
func (p *Projector) recover(ctx context.Context, log *slog.Logger, ev *outbox.Event, cursor int64) error {
	job, err := p.source.Get(ctx, ev.JobID)
	if errors.Is(err, jobs.ErrNotFound) {
		// The job's item has expired (TTL): there is no state to recover
		// to, and waiting cannot bring one back.
		log.WarnContext(ctx, "projection: job gone; event acknowledged without counting its delta",
			slog.Int64("cursor", cursor), slog.Int64("delta", ev.Delta))
		return nil
	}
	if err != nil {
		return fmt.Errorf("projection: recover %s: read the job: %w", ev.JobID, err)
	}
	if job.Tenant != ev.Tenant {
		return fifo.Permanent(fmt.Errorf("projection: recover %s: the job belongs to tenant %q, the event to %q",
			ev.JobID, job.Tenant, ev.Tenant))
	}
	r, err := RecoverJob(ctx, p.store, &job)
	if err != nil {
		return err
	}
	attrs := []any{slog.Int64("job_version", job.Version), slog.Int64("cursor_from", r.From.Version), slog.Int64("cursor_to", r.To.Version),
		slog.Int64("processed_delta", r.Processed), slog.Int64("completed_delta", r.Completed),
		slog.Bool("view_updated", r.ViewUpdated), slog.Int64("delta", ev.Delta), slog.Int64("progress", ev.Progress)}
	if job.Version < ev.Version {
		log.ErrorContext(ctx, "projection: an event its job item has not reached: not the job's; acknowledged", attrs...)
		return nil
	}
	log.WarnContext(ctx, "projection: recovered from the job item", attrs...)
	return nil
}

// View returns the job's view (ErrNotFound if it has none yet).
func (p *Projector) View(ctx context.Context, jobID string) (View, error) {
	return p.store.View(ctx, jobID)
}

// Totals returns the tenant's totals.
func (p *Projector) Totals(ctx context.Context, tenant string) (Totals, error) {
	return p.store.Totals(ctx, tenant)
}

// receiveCount is the message's ApproximateReceiveCount; a message without
// one counts as received once.
func receiveCount(msg *events.SQSMessage) int {
	n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}
