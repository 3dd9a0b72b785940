package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/transport"
	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/internal/base/ids"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// Failure codes the worker records.
const (
	// CodeTaskFailed is the failure code of a job whose task returned a
	// permanent error.
	CodeTaskFailed = "task_failed"
	// CodeCandidateTooLarge is the failure code of a job whose candidate
	// went over the candidate store's max size (candidate.ErrTooLarge):
	// MaxCandidateBytes in the function. The same export is as large on
	// every try, so the job fails at once, whatever the task returned.
	CodeCandidateTooLarge = "candidate_too_large"
	// CodeUnknownTask is the failure code of a job whose spec names a task
	// the worker's registry does not hold (task.ErrUnknownTask): no
	// delivery of its command could run it. Intake refuses such a spec
	// with the same registry, so a job gets here only when the worker runs
	// other tasks than intake knows (a deployment between the two) or was
	// created past intake.
	CodeUnknownTask = "unknown_task"
)

// MaxFailureMessage is the longest failure message the worker records, in
// bytes: the job store's limit. A longer task error is cut at a rune
// boundary.
const MaxFailureMessage = 4096

// Config configures a Worker. Jobs, Candidates and Tasks are required; the
// zero value of every other field is its default.
type Config struct {
	// Jobs is the arbiter: every claim, renewal, accept and failure.
	Jobs jobs.Store
	// Candidates stores each attempt's candidate.
	Candidates *candidate.Store
	// Tasks holds the tasks the worker runs: each job runs the task its
	// spec names (task.SpecTask), or the registry's default. Required.
	Tasks *task.Registry
	// Logger receives one line per attempt outcome, with the fields
	// job_id, group_id, message_id, attempt_id, aws_request_id, generation
	// and version. Nil discards.
	Logger *slog.Logger
	// LeaseSkew is the clock-skew margin added to the invocation deadline to
	// give the lease end (jobs.LeaseEnd). Zero means jobs.DefaultClockSkew;
	// at most jobs.MaxClockSkew, and no more than the store's own margin
	// (jobs.Config.ClockSkew), or the store refuses the lease.
	LeaseSkew time.Duration
	// ClaimMargin is the least time that must remain before the context's
	// deadline for a lane that waited for spool room to claim its job; with
	// less, it gives the room back and claims nothing (candidate.ErrSpoolBusy).
	// Zero means DefaultClaimMargin.
	ClaimMargin time.Duration
	// Now measures how long an attempt took, for its log line, and how much
	// time a lane given spool room after a wait has left before the
	// context's deadline (as pkg/fifo's clock judges a message's start;
	// fifo.Config.Now). Leases come from the context's deadline, never from
	// this clock. Nil means time.Now.
	Now func() time.Time
	// Sleep waits d, or until ctx ends and then returns its error: a Kafka
	// record's wait for another attempt's lease to end (see the package
	// documentation, "On Kafka"). Nil means a timer the end of ctx cuts
	// short (backoff.Sleep); a simulation gives one that moves its clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// FunctionName is the value of the job metrics' dimension
	// (jobs.MetricsDimension): with one, each accept that completes a job
	// logs an EMF record of its latency (jobs.MetricLatency) through
	// Logger. Default (""): no metrics.
	FunctionName string
}

// DefaultClaimMargin is Config.ClaimMargin's default: pkg/fifo's least
// time for a message to start (fifo.DefaultDeadlineMargin). A lane given
// spool room late is a message starting late, and is held to the same rule.
const DefaultClaimMargin = fifo.DefaultDeadlineMargin

// LeaseEndSlack is how long after another attempt's lease ends a Kafka
// record's claim that waited for it is made again. The store judges a
// lease in whole milliseconds on this process's clock (live while its
// end's millisecond is not before now's), and the end it reports is the
// one it judges, the holder's clock skew already in it (jobs.LeaseEnd):
// one millisecond would do; 10 ms leaves room for the rounding and costs
// the task nothing worth having.
const LeaseEndSlack = 10 * time.Millisecond

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Jobs == nil:
		return fmt.Errorf("%w: Jobs is nil", ErrInvalidConfig)
	case c.Candidates == nil:
		return fmt.Errorf("%w: Candidates is nil", ErrInvalidConfig)
	case c.Tasks == nil:
		return fmt.Errorf("%w: Tasks is nil", ErrInvalidConfig)
	case c.LeaseSkew < 0 || c.LeaseSkew > jobs.MaxClockSkew:
		return fmt.Errorf("%w: LeaseSkew %v is outside 0 to %v", ErrInvalidConfig, c.LeaseSkew, jobs.MaxClockSkew)
	case c.ClaimMargin < 0:
		return fmt.Errorf("%w: ClaimMargin %v is negative", ErrInvalidConfig, c.ClaimMargin)
	}
	return nil
}

// Worker runs one command per call of Handle. It is safe for concurrent
// use: pkg/fifo calls Handle for several message groups at once.
type Worker struct {
	cfg Config
	log *slog.Logger
}

// New returns a Worker, or the error of cfg.Validate.
func New(cfg Config) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LeaseSkew == 0 {
		cfg.LeaseSkew = jobs.DefaultClockSkew
	}
	if cfg.ClaimMargin == 0 {
		cfg.ClaimMargin = DefaultClaimMargin
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = backoff.Sleep
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{cfg: cfg, log: log}, nil
}

// AttemptID returns the id of one delivery of one command in one
// invocation: "<aws_request_id>_<ref>", ref naming the message
// (transport.Delivery.Ref: an SQS message's id; a Kafka record's topic
// digest, partition and offset). The request id alone is shared by every
// message of a batch, and the ref alone by every delivery of a message, so
// neither names an attempt. The result must be a valid id
// ([A-Za-z0-9_-]{1,128}): it becomes part of the candidate's key.
func AttemptID(requestID, messageID string) (string, error) {
	if requestID == "" || messageID == "" {
		return "", fmt.Errorf("worker: attempt id needs a request id and a message id, got %q and %q", requestID, messageID)
	}
	id := requestID + "_" + messageID
	if p := ids.Problem(id); p != "" {
		return "", fmt.Errorf("worker: attempt id %q %s", id, p)
	}
	return id, nil
}

// Handle runs the command in msg, a job.run body (outbox.Command): it
// claims the job, runs the task into the attempt's candidate, and accepts
// the candidate, each write fenced on the claim's generation. It is a
// fifo.Handler. It returns nil when the command is done with (run, or
// refused for good by the job's state), fifo.Permanent for a command that
// can never succeed, and any other error to have the command received
// again. See the package documentation for every outcome.
func (w *Worker) Handle(ctx context.Context, msg events.SQSMessage) error {
	return w.handle(ctx, transport.FromSQS(&msg), rules{permanent: fifo.Permanent})
}

// HandleRecord runs the command in rec, a Kafka record keyed by its job's
// id with the command as its value, as Handle runs a message's: it is a
// kafka.Handler. What can never succeed is marked with kafka.Permanent;
// that includes a record whose key is not the command's job, a null key
// included (ErrGroupMismatch). The attempt id names the record
// (transport.Delivery.Ref). The worker reads no delivery count on either
// transport, so a Kafka record, which has none, changes nothing else: the
// jobs store's recovery policy (MaxGenerations) bounds the takeovers. One
// thing differs: a claim refused on another attempt's lease that ends in
// time is made again once it has ended (see the package documentation,
// "On Kafka").
func (w *Worker) HandleRecord(ctx context.Context, rec kafka.Record) error {
	return w.handle(ctx, transport.FromRecord(&rec), rules{permanent: kafka.Permanent, waitForLease: true})
}

// rules is what the transport that delivered a command changes in handle.
type rules struct {
	// permanent is the transport's mark of an error no delivery again can
	// fix.
	permanent func(error) error
	// waitForLease: a claim refused on a lease that ends while this
	// invocation can still start waits for it and claims again (claim).
	waitForLease bool
}

// handle runs the command d delivered, under the rules of its transport.
func (w *Worker) handle(ctx context.Context, d transport.Delivery, r rules) error {
	permanent := r.permanent
	start := w.cfg.Now()
	log := w.log.With(slog.String("message_id", d.ID), slog.String("group_id", d.Key))
	cmd, err := outbox.DecodeCommand(d.Body)
	if err != nil {
		log.WarnContext(ctx, "worker: malformed command", slog.Any("error", err))
		return permanent(fmt.Errorf("worker: message %s: %w", d.ID, err))
	}
	log = log.With(slog.String("job_id", cmd.JobID))
	if (d.KeyRequired || d.Key != "") && d.Key != cmd.JobID {
		err := fmt.Errorf("worker: message %s: command for job %s in group %q: %w", d.ID, cmd.JobID, d.Key, ErrGroupMismatch)
		if d.KeyRequired {
			err = fmt.Errorf("worker: message %s: command for job %s under %s: %w", d.ID, cmd.JobID, d.KeyText(), ErrGroupMismatch)
		}
		log.ErrorContext(ctx, "worker: command in another job's group", slog.Any("error", err))
		return permanent(err)
	}
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.AwsRequestID == "" {
		return fmt.Errorf("worker: message %s: %w", d.ID, ErrNoLambdaContext)
	}
	log = log.With(slog.String("aws_request_id", lc.AwsRequestID))
	attemptID, err := AttemptID(lc.AwsRequestID, d.Ref)
	if err != nil {
		return err
	}
	log = log.With(slog.String("attempt_id", attemptID))
	lease, err := jobs.LeaseEnd(ctx, w.cfg.LeaseSkew)
	if err != nil {
		return fmt.Errorf("worker: job %s: lease: %w", cmd.JobID, err)
	}

	// Room in the spool is taken before the claim: a lane that cannot get it
	// before its context ends has claimed nothing, so its command comes back
	// without having cost the job a generation. Once claimed, an attempt
	// never waits for room.
	room, err := w.reserve(ctx, log)
	if err != nil {
		return err
	}
	// The room held when handle returns (claim may trade it for another),
	// unless the candidate's writer took it over.
	defer func() { room.Release() }()

	// The command's tenant is part of the claim's condition: a command
	// naming another tenant than its job's finds no job, and neither takes
	// a lease nor uses up a generation.
	job, room, err := w.claim(ctx, jobs.ClaimRequest{JobID: cmd.JobID, AttemptID: attemptID, LeaseUntil: lease, Tenant: cmd.Tenant}, r, room, log)
	switch {
	case errors.Is(err, jobs.ErrFinal):
		// Done already, or ended by this very claim under the recovery
		// policy: nothing is left to run.
		log.InfoContext(ctx, "worker: job is final; command acknowledged", statusAttr(err), slog.Any("reason", err))
		return nil
	case errors.Is(err, jobs.ErrLeaseHeld):
		log.InfoContext(ctx, "worker: another attempt holds the job; command will be received again", slog.Any("reason", err))
		return fmt.Errorf("worker: claim: %w", err)
	case errors.Is(err, jobs.ErrNotFound):
		// No job, or (the store does not say which) a job of another tenant:
		// a forged or corrupt command.
		log.WarnContext(ctx, "worker: command for no job of its tenant", slog.String("tenant", cmd.Tenant), slog.Any("error", err))
		return permanent(fmt.Errorf("worker: claim for tenant %q: %w", cmd.Tenant, err))
	case err != nil:
		return fmt.Errorf("worker: claim: %w", err)
	}
	log = log.With(slog.Int64("generation", job.Generation))

	a := &attempt{w: w, log: log, job: job, id: attemptID, lease: lease, version: job.Version, start: start, room: room}
	return a.run(ctx)
}

// claim claims the job. Under the rules of a transport that waits for a
// lease (Kafka's), a claim refused on another attempt's lease is made
// again, once, after that lease has ended, if the invocation can still
// start then: the lease's end plus LeaseEndSlack is at most the context's
// deadline minus ClaimMargin, the rule a lane given spool room late is
// held to. Kafka has no visibility timeout: the mapping retries a failed
// record at once, so without the wait a dead attempt's lease, which runs
// LeaseSkew past its deadline, would refuse every retry until it ends. A
// second refusal, or a lease that ends later, is returned as it is.
//
// The wait holds no spool room: room is given back before it and taken
// again after it, under reserve's rule for room that comes late, so that
// other lanes are not refused room (candidate.ErrSpoolBusy) for a lane
// that only sleeps. claim returns the room the claim was made with; when
// taking it again failed, the room given back, whose Release does
// nothing.
func (w *Worker) claim(ctx context.Context, req jobs.ClaimRequest, r rules, room *candidate.Reservation, log *slog.Logger) (jobs.Job, *candidate.Reservation, error) {
	job, err := w.cfg.Jobs.Claim(ctx, req)
	var held *jobs.LeaseHeldError
	if !r.waitForLease || !errors.As(err, &held) {
		return job, room, err
	}
	deadline, _ := ctx.Deadline() // handle refused a context without one (jobs.LeaseEnd)
	retry := held.Until.Add(LeaseEndSlack)
	if retry.After(deadline.Add(-w.cfg.ClaimMargin)) {
		return job, room, err
	}
	wait := retry.Sub(w.cfg.Now())
	log.InfoContext(ctx, "worker: another attempt holds the job; waiting for its lease to end to claim again",
		slog.Any("reason", err), slog.Duration("wait", wait))
	room.Release()
	if err := w.cfg.Sleep(ctx, wait); err != nil {
		return jobs.Job{}, room, fmt.Errorf("worker: waiting %v for the lease of %s to end: %w", wait, held.Owner, err)
	}
	again, err := w.reserve(ctx, log)
	if err != nil {
		return jobs.Job{}, room, err
	}
	job, err = w.cfg.Jobs.Claim(ctx, req)
	return job, again, err
}

// reserve takes room for the attempt's candidate in the spool budget,
// waiting while other lanes hold it all. Room that came after a wait with
// less than the claim margin left is given back: a claim then would run a
// task that cannot finish, and its lease, which outlives the invocation,
// would make the next delivery a takeover, a generation lost for another
// lane's size. A lane that did not wait is not judged: pkg/fifo judged its
// start by the same rule.
func (w *Worker) reserve(ctx context.Context, log *slog.Logger) (*candidate.Reservation, error) {
	start := w.cfg.Now()
	room, err := w.cfg.Candidates.Reserve(ctx)
	if err != nil {
		log.WarnContext(ctx, "worker: no spool room before the deadline; nothing claimed, the command will be received again",
			slog.Any("error", err), slog.Duration("duration", w.cfg.Now().Sub(start)))
		return nil, fmt.Errorf("worker: %w", err)
	}
	if !room.Waited() {
		return room, nil
	}
	now := w.cfg.Now()
	deadline, _ := ctx.Deadline() // Handle refused a context without one (jobs.LeaseEnd)
	if left := deadline.Sub(now); left < w.cfg.ClaimMargin {
		room.Release()
		log.WarnContext(ctx, "worker: spool room came too late to claim; nothing claimed, the command will be received again",
			slog.Duration("left", left), slog.Duration("claim_margin", w.cfg.ClaimMargin), slog.Duration("duration", now.Sub(start)))
		return nil, fmt.Errorf("worker: spool room with %v left before the deadline, under the claim margin %v: %w",
			left, w.cfg.ClaimMargin, candidate.ErrSpoolBusy)
	}
	log.InfoContext(ctx, "worker: waited for spool room", slog.Duration("duration", now.Sub(start)))
	return room, nil
}

// statusAttr names the status of a job a refusal found final, if it says.
func statusAttr(err error) slog.Attr {
	var fe *jobs.FinalError
	if errors.As(err, &fe) {
		return slog.String("status", string(fe.Status))
	}
	var se *jobs.StaleError
	if errors.As(err, &se) {
		return slog.String("status", string(se.Status))
	}
	return slog.Attr{}
}

// failureMessage is err's text cut to MaxFailureMessage bytes of valid
// UTF-8 without NUL (which the job stores refuse: PostgreSQL keeps none).
func failureMessage(err error) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(err.Error(), "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= MaxFailureMessage {
		return s
	}
	const ellipsis = "…"
	cut := MaxFailureMessage - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
