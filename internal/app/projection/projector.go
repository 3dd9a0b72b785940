package projection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/transport"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
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
	// MaxRecoverAfter is the highest threshold RecoverAfter takes. The
	// events queue's maxReceiveCount (10 in template.yaml) must be greater
	// than the threshold in use, or SQS dead-letters a waiting event before
	// it recovers.
	MaxRecoverAfter = 9
)

// Projector consumes the events queue: Handle projects one event into the
// job views and tenant totals. Handle is its queue's fifo.Handler, and
// HandleRecord the kafka.Handler of the events topic.
type Projector struct {
	store        Store
	source       JobSource
	log          *slog.Logger
	recoverAfter int
	function     string
	now          func() time.Time
}

// ProjectorConfig configures a Projector.
type ProjectorConfig struct {
	// Store keeps the views, the totals and the cursors. Required.
	Store Store
	// Source reads the job item a recovery starts from. Required.
	Source JobSource
	// Logger logs each event's outcome (job_id, version, message_id,
	// group_id, receive_count where the transport counts receives,
	// outcome): applied, duplicates and older
	// events at Debug, waiting on a gap at Info, recoveries and a job gone
	// at Warn. Default (nil): nothing is logged.
	Logger *slog.Logger
	// RecoverAfter is the receive count (ApproximateReceiveCount) at which
	// an event that finds a gap recovers from the job item instead of
	// failing again. Default (zero): DefaultRecoverAfter; it must be 1 to
	// MaxRecoverAfter. A Kafka record has no receive count: HandleRecord
	// recovers at its first gap, whatever RecoverAfter says.
	RecoverAfter int
	// FunctionName is the value of the job metrics' dimension
	// (jobs.MetricsDimension): with one, each event that ends a job
	// (jobs.MetricCompleted, jobs.MetricFailed) or whose totals write lost
	// rounds to concurrent ones (jobs.MetricTotalsConflicts) logs an EMF
	// record through Logger. Default (""): no metrics.
	FunctionName string
	// Now stamps the metrics' records. Default time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c ProjectorConfig) Validate() error {
	switch {
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrInvalidConfig)
	case c.Source == nil:
		return fmt.Errorf("%w: Source is nil", ErrInvalidConfig)
	case c.RecoverAfter < 0 || c.RecoverAfter > MaxRecoverAfter:
		return fmt.Errorf("%w: RecoverAfter %d is outside 1 to %d", ErrInvalidConfig, c.RecoverAfter, MaxRecoverAfter)
	}
	return nil
}

// NewProjector returns a Projector writing to cfg.Store and recovering
// from cfg.Source, or an error wrapping ErrInvalidConfig.
func NewProjector(cfg ProjectorConfig) (*Projector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Projector{store: cfg.Store, source: cfg.Source, log: cfg.Logger,
		recoverAfter: cmp.Or(cfg.RecoverAfter, DefaultRecoverAfter), function: cfg.FunctionName, now: cfg.Now}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Handle projects the event in msg. It returns nil when the event is
// projected, was already, or cannot be any more (its job is gone, or the
// job item shows it is not the job's); a *GapError while the event waits
// for its predecessor, so that the message and the rest of its group are
// received again; fifo.Permanent for a body that can never be decoded;
// any other error to be retried. An event that disagrees with the job's
// cursor (ErrMismatch) recovers the projection from the job item at once.
func (p *Projector) Handle(ctx context.Context, msg events.SQSMessage) error {
	return p.handle(ctx, transport.FromSQS(&msg), fifo.Permanent)
}

// HandleRecord projects the event in rec, a Kafka record keyed by its
// job's id with the event as its value, as Handle projects a message's: it
// is a kafka.Handler, and marks what can never succeed with
// kafka.Permanent, a record whose key is not the event's job included
// (ErrKeyMismatch, a null key too). A record carries no receive count, so
// a gap does not wait for RecoverAfter: it recovers from the job item at
// once. In the log its events arrive in offset order per key, so a gap is
// a version missing from it, which no redelivery brings, and waiting would
// only hold every later offset of the partition; a recovery is right
// whatever arrives after it.
func (p *Projector) HandleRecord(ctx context.Context, rec kafka.Record) error {
	return p.handle(ctx, transport.FromRecord(&rec), kafka.Permanent)
}

// handle projects the event d delivered; permanent is the transport's mark
// of an error no delivery again can fix.
func (p *Projector) handle(ctx context.Context, d transport.Delivery, permanent func(error) error) error {
	attrs := []any{slog.String("message_id", d.ID), slog.String("group_id", d.Key)}
	if d.Count > 0 {
		attrs = append(attrs, slog.Int("receive_count", d.Count))
	}
	log := p.log.With(attrs...)
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		log = log.With(slog.String("aws_request_id", lc.AwsRequestID))
	}
	ev, err := outbox.DecodeEvent(d.Body)
	if err != nil {
		log.WarnContext(ctx, "projection: malformed event", slog.Any("error", err))
		return permanent(fmt.Errorf("projection: message %s: %w", d.ID, err))
	}
	log = log.With(slog.String("job_id", ev.JobID), slog.Int64("version", ev.Version), slog.String("tenant", ev.Tenant))
	if d.KeyRequired && d.Key != ev.JobID {
		err := fmt.Errorf("projection: message %s: event of job %s under %s: %w", d.ID, ev.JobID, d.KeyText(), ErrKeyMismatch)
		log.ErrorContext(ctx, "projection: event under another job's key", slog.Any("error", err))
		return permanent(err)
	}
	res, err := p.store.Apply(ctx, ViewOfEvent(&ev), ev.Delta)
	var gap *GapError
	var mismatch *MismatchError
	switch {
	case errors.As(err, &gap):
		if d.Count > 0 && d.Count < p.recoverAfter {
			log.InfoContext(ctx, "projection: waiting for an earlier version",
				slog.Int64("cursor", gap.Cursor), slog.Bool("view_updated", res.ViewUpdated), slog.Int("recover_after", p.recoverAfter))
			return err
		}
		return p.recover(ctx, log.With(slog.String("reason", "gap")), &ev, gap.Cursor, permanent)
	case errors.As(err, &mismatch):
		// The event or the cursor is not the job's: waiting cannot tell
		// which, the job item can.
		return p.recover(ctx, log.With(slog.String("reason", "mismatch")), &ev, mismatch.Cursor.Version, permanent)
	case err != nil:
		return err
	}
	var ended jobs.Status
	if res.Outcome == Applied {
		// The cursor applies an event only from a status that is not
		// final: this one ended the job if its own status is.
		ended = ev.Status
	}
	p.logMetrics(ctx, ended, res.Conflicts)
	log.DebugContext(ctx, "projection: event projected", slog.String("outcome", res.Outcome.String()),
		slog.Int64("cursor", res.Cursor), slog.Bool("view_updated", res.ViewUpdated), slog.Int64("delta", ev.Delta))
	return nil
}

// recover brings the job's projection to the job item, after which ev is
// acknowledged: it is then a duplicate or older, or, when the item, read
// after ev arrived, has not reached ev's version, it is not the job's
// (forged, or left over from a job whose id was reused after its item
// expired), and counting it can never be right.
func (p *Projector) recover(ctx context.Context, log *slog.Logger, ev *outbox.Event, cursor int64, permanent func(error) error) error {
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
		return permanent(fmt.Errorf("projection: recover %s: the job belongs to tenant %q, the event to %q",
			ev.JobID, job.Tenant, ev.Tenant))
	}
	r, err := RecoverJob(ctx, p.store, &job)
	if err != nil {
		return err
	}
	p.logMetrics(ctx, endedBy(r.From, r.To), r.Conflicts)
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
