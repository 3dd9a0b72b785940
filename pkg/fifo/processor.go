package fifo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// Handler processes one message. It returns nil when the message is done and
// may be deleted, an error to have it received again, or Permanent(err) when
// receiving it again cannot help.
type Handler func(ctx context.Context, msg events.SQSMessage) error

// Processor runs SQS batches through a Handler, one lane per message group.
// It is safe for concurrent use; with p, err := fifo.New(fifo.Config{Handler: h}),
// lambda.Start(p.Process) is a complete FIFO consumer.
type Processor struct {
	// cfg is the validated Config with its defaults filled in; DeadLetter
	// points to the processor's own copy.
	cfg Config
	// lanes runs the batches' lanes (Concurrency, the deadline margin and
	// the response reserve).
	lanes *lanes.Engine
}

// New returns a Processor with cfg. It fails with an error wrapping
// ErrInvalidConfig, naming the field, when cfg does not validate.
func New(cfg Config) (*Processor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.DeadLetter != nil {
		dl := *cfg.DeadLetter // the caller's may change after New
		cfg.DeadLetter = &dl
	}
	engine, err := lanes.New(lanes.Config{
		Concurrency:     cfg.Concurrency,
		DeadlineMargin:  cfg.DeadlineMargin,
		ResponseReserve: cfg.ResponseReserve,
		Now:             cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Processor{cfg: cfg, lanes: engine}, nil
}

// Process handles the batch and returns the messages to receive again.
// It returns an error only for an invalid batch (see ErrInvalidBatch);
// Lambda then retries the whole batch.
func (p *Processor) Process(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	b, err := p.newBatch(ctx, ev.Records)
	if err != nil {
		logContained(ctx, p.cfg.Logger, slog.LevelError, "fifo: batch refused", requestAttr(ctx), slog.Int("records", len(ev.Records)), slog.Any("error", err))
		return events.SQSEventResponse{}, err
	}
	b.run(ctx)
	return b.response(), nil
}

const groupAttribute = "MessageGroupId"

// pending marks a message no lane has decided yet. Only a handler that
// called runtime.Goexit can leave one behind; the rest of its lane then
// counts as skipped after a failure.
const pending = numOutcomes

type result struct {
	outcome Outcome
	// noCause: dead-lettered without the DeadLetterAttribute, for want of
	// room among the message's attributes.
	noCause bool
	// park: the handler failed permanently and the quarantine is to park
	// the message (Config.Quarantine). Until it is parked, or fails to be,
	// its Failed outcome is not a failure of the batch: it stops nothing.
	park bool
	// note says why a message was dropped or parked without running.
	note     string
	err      error
	wait     time.Duration
	duration time.Duration
}

type batch struct {
	p       *Processor
	records []events.SQSMessage
	results []result
	plan    *lanes.Plan // the lanes: one per group, one per record without a group
	begin   time.Time
	log     *slog.Logger

	// held is the quarantine's view of the batch (Config.Quarantine), and
	// heldErr the error that kept the batch from reading it.
	held    QuarantineView
	heldErr error

	// running is the lanes' run: the handlers' context (handlerCx), the
	// deadline, and the stop of a message failed under StopOnFirstFailure.
	running   *lanes.Run
	handlerCx context.Context
}

func (p *Processor) newBatch(ctx context.Context, records []events.SQSMessage) (*batch, error) {
	n := len(records)
	b := &batch{
		p:       p,
		records: records,
		results: make([]result, n),
		begin:   p.cfg.Now(),
		log:     p.cfg.Logger,
	}
	if n == 0 {
		b.plan = p.lanes.Plan(0, nil)
		return b, nil
	}
	ids := make(map[string]int, n)
	arn := records[0].EventSourceARN
	for i := range records {
		rec := &records[i]
		switch prev, dup := ids[rec.MessageId]; {
		case rec.MessageId == "":
			return nil, &InvalidBatchError{Index: i, Reason: "record has no message id"}
		case dup:
			return nil, &InvalidBatchError{Index: i, MessageID: rec.MessageId, Reason: fmt.Sprintf("duplicate message id (also record %d)", prev)}
		case rec.EventSourceARN != arn:
			return nil, &InvalidBatchError{Index: i, MessageID: rec.MessageId,
				Reason: fmt.Sprintf("records from different queues (%q and %q)", arn, rec.EventSourceARN)}
		}
		ids[rec.MessageId] = i
		b.results[i].outcome = pending
	}
	b.plan = p.lanes.Plan(n, func(i int) (string, bool) {
		group := records[i].Attributes[groupAttribute]
		return group, group != ""
	})
	if b.log != nil {
		// A logger that panics here keeps logging without the request id,
		// where each of its panics is contained too.
		_ = guarded(PanicInLogger, func() { b.log = b.log.With(requestAttr(ctx)) })
	}
	return b, nil
}

func requestAttr(ctx context.Context) slog.Attr {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return slog.String("aws_request_id", lc.AwsRequestID)
	}
	return slog.Attr{}
}

func (b *batch) run(ctx context.Context) {
	if len(b.records) == 0 {
		return
	}
	run, cancel := b.p.lanes.Start(ctx)
	defer cancel()
	b.running, b.handlerCx = run, run.Context()
	b.checkQuarantine(b.handlerCx) //nolint:contextcheck // the run's context derives from ctx (lanes.Engine.Start)

	// Handlers run on the lanes' goroutines; a panic is recovered (in call,
	// decide and logOutcome), and if a handler ends its goroutine with
	// runtime.Goexit another one takes over the remaining lanes.
	run.Lanes(b.plan, b)

	for i := range b.results {
		if b.results[i].outcome == pending {
			b.results[i].outcome = SkippedAfterFailure
		}
	}
	b.report(ctx, b.p.cfg.Now().Sub(b.begin))
}

// RunLane runs the lane that starts at head (b is the lanes.Runner of its
// run). Once a message of the lane is
// not acknowledged, the rest of the lane is skipped for the same reason,
// without asking again: after a deadline skip in particular, a later time
// check could pass, because the deadline is wall-clock time (Lambda's has no
// monotonic reading) and the wall clock can step back.
func (b *batch) RunLane(head int) {
	if b.quarantined(head) {
		b.runQuarantinedLane(head)
		return
	}
	rest := pending // what the rest of the lane becomes; pending: it runs on
	for i := head; i >= 0; i = b.plan.Next(i) {
		r := &b.results[i]
		switch {
		case rest != pending:
			r.outcome = rest
		case b.p.cfg.StopOnFirstFailure && b.running.Stopped():
			r.outcome = SkippedStopped
		case !b.running.TimeToStart():
			r.outcome, rest = SkippedDeadline, SkippedDeadline
		default:
			b.runMessage(i)
			if !r.outcome.Acknowledged() {
				rest = SkippedAfterFailure
			}
		}
		if !r.outcome.Started() {
			b.logOutcome(i)
		}
	}
}

func (b *batch) runMessage(i int) {
	r := &b.results[i]
	start := b.p.cfg.Now()
	r.wait = start.Sub(b.begin)
	// If the handler ends its goroutine with runtime.Goexit, call never
	// returns and the message stays decided as a panic.
	r.outcome, r.err = Panicked, &PanicError{Value: "handler called runtime.Goexit"}
	defer b.logOutcome(i)
	err := b.call(b.handlerCx, i)
	r.duration = b.p.cfg.Now().Sub(start)
	b.decide(i, err)
}

func (b *batch) call(ctx context.Context, i int) (err error) {
	if pe := contained(PanicInHandler, func() { err = b.p.cfg.Handler(ctx, b.records[i]) }); pe != nil {
		return pe
	}
	return err
}

// decide sets message i's outcome from its handler's error, dead-lettering
// the message when that is due. It runs code the processor does not
// control, the error's methods and the dead-letter client, and a panic there
// fails the message as a handler's panic does.
func (b *batch) decide(i int, err error) {
	r := &b.results[i]
	r.outcome, r.err = Failed, err
	in := PanicInHandlerError
	pe := contained(in, func() {
		var hp *PanicError
		switch {
		case err == nil:
			r.outcome = Succeeded
		case errors.As(err, &hp):
			r.outcome = Panicked
		case IsPermanent(err) && b.quarantined(i):
			r.park = true // Failed until runQuarantinedLane parks it
		case IsPermanent(err) && b.p.cfg.DeadLetter != nil:
			in = PanicInDeadLetter
			// Decided as a panic until send returns: a Goexit in the
			// client leaves it so.
			r.outcome, r.err = Panicked, errors.Join(err, &PanicError{In: in, Value: "called runtime.Goexit"})
			withCause, dlErr := b.p.cfg.DeadLetter.send(b.handlerCx, &b.records[i], err, b.p.cfg.Now())
			if dlErr != nil {
				r.outcome, r.err = Failed, errors.Join(err, dlErr)
				return
			}
			r.outcome, r.err, r.noCause = DeadLettered, err, !withCause
		}
	})
	switch {
	case pe == nil:
	case in == PanicInHandlerError:
		// The error itself panicked: any later use of it would too.
		r.outcome, r.err = Panicked, pe
	default:
		pe.In = in
		r.outcome, r.err = Panicked, errors.Join(err, pe)
	}
}

// contained calls f, which runs code the processor does not control, and
// returns a panic in it as a *PanicError (in says what panicked) instead of
// letting it end the invocation. A runtime.Goexit in f still ends the
// calling goroutine: a lane's goroutine is replaced when that happens (see
// lanes.Run.Lanes), and Process's own goroutine calls foreign code only
// through guarded. It recovers here rather than through lanes.Contain:
// that one frame more on a handler's path made each lane's goroutine grow
// its stack, a measured 20-40% more overhead per message
// (BenchmarkOverhead).
func contained(in PanicSite, f func()) (pe *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			pe = &PanicError{In: in, Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// guarded is contained for code that runs on Process's own goroutine (the
// batch's logging, the metrics hook): f runs on a goroutine of its own,
// which guarded waits for, so that a runtime.Goexit in f ends that
// goroutine and not Process's, which would then never return. The Goexit
// comes back as a *PanicError like a panic.
func guarded(in PanicSite, f func()) *PanicError {
	return panicError(in, lanes.Guard(f))
}

// panicError is p as a *PanicError at in, or nil without p.
func panicError(in PanicSite, p *lanes.Panic) *PanicError {
	switch {
	case p == nil:
		return nil
	case p.Goexit:
		return &PanicError{In: in, Value: "called runtime.Goexit"}
	}
	return &PanicError{In: in, Value: p.Value, Stack: p.Stack}
}

func (b *batch) response() events.SQSEventResponse {
	failures := []events.SQSBatchItemFailure{}
	for i := range b.results {
		if !b.results[i].outcome.Acknowledged() {
			failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: b.records[i].MessageId})
		}
	}
	return events.SQSEventResponse{BatchItemFailures: failures}
}

func receiveCount(msg *events.SQSMessage) int {
	n, _ := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	return n
}

// logOutcome logs message i's outcome. A started message that failed under
// StopOnFirstFailure stops the batch first: whoever sees the log sees the
// stop. A permanent failure the quarantine is to park is not a failure of
// the batch: it stops it only if parking it fails. A panic in the logger fails the message, as a handler's panic does
// (an acknowledged message becomes Panicked, and its lane fails with it),
// and the failure is logged, with its stack, if the logger still works. A
// runtime.Goexit in the logger fails the message too, without a log line:
// the worker is replaced and the rest of the lane is skipped, as after a
// handler's Goexit.
func (b *batch) logOutcome(i int) {
	r := &b.results[i]
	exited := true
	defer func() {
		if !exited {
			return
		}
		if r.outcome.Acknowledged() {
			r.outcome = Panicked
		}
		r.err = errors.Join(r.err, &PanicError{In: PanicInLogger, Value: "called runtime.Goexit"})
		if b.p.cfg.StopOnFirstFailure && r.outcome.Started() {
			b.running.Stop()
		}
	}()
	for again := false; ; again = true {
		if b.p.cfg.StopOnFirstFailure && r.outcome.Started() && !r.outcome.Acknowledged() && !r.park {
			b.running.Stop()
		}
		pe := b.logMessage(i)
		if pe == nil || again {
			exited = false
			return // a logger that panics twice has nothing more to say
		}
		if r.outcome.Acknowledged() {
			r.outcome = Panicked
		}
		r.err = errors.Join(r.err, pe)
	}
}

func (b *batch) logMessage(i int) *PanicError {
	if b.log == nil {
		return nil
	}
	return contained(PanicInLogger, func() {
		r, msg := &b.results[i], &b.records[i]
		ctx := context.Background()
		if r.outcome == DeadLettered && r.noCause && b.log.Enabled(ctx, slog.LevelWarn) {
			b.log.LogAttrs(ctx, slog.LevelWarn, "fifo: dead-lettered without its cause: the message already has 10 attributes",
				slog.String("message_id", msg.MessageId), slog.String("sequence_number", msg.Attributes["SequenceNumber"]),
				slog.String("attribute", DeadLetterAttribute))
		}
		level := slog.LevelDebug
		switch r.outcome {
		case Panicked:
			level = slog.LevelError
		case Succeeded:
		case Dropped:
			level = slog.LevelInfo
		default:
			level = slog.LevelWarn
		}
		if !b.log.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("message_id", msg.MessageId),
			slog.String("group_id", msg.Attributes[groupAttribute]),
			slog.Int("receive_count", receiveCount(msg)),
			slog.String("outcome", r.outcome.String()),
			slog.Duration("duration", r.duration),
			slog.Duration("wait", r.wait),
		}
		if r.note != "" {
			attrs = append(attrs, slog.String("reason", r.note))
		}
		if r.err != nil {
			attrs = append(attrs, slog.String("error", r.err.Error()))
			var pe *PanicError
			if errors.As(r.err, &pe) && pe.Stack != nil {
				attrs = append(attrs, slog.String("stack", string(pe.Stack)))
			}
		}
		b.log.LogAttrs(ctx, level, "fifo: message", attrs...)
	})
}

// logContained logs with l, if there is one, about the batch, on Process's
// goroutine; a panic or a runtime.Goexit in the logger is dropped, as
// nothing is left to fail for it.
func logContained(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	if l != nil {
		_ = guarded(PanicInLogger, func() { l.LogAttrs(ctx, level, msg, attrs...) })
	}
}

// report logs the batch and calls the metrics hook, after every handler has
// returned.
func (b *batch) report(ctx context.Context, took time.Duration) {
	if b.log != nil {
		failed := 0
		for i := range b.results {
			if !b.results[i].outcome.Acknowledged() {
				failed++
			}
		}
		logContained(ctx, b.log, slog.LevelInfo, "fifo: batch",
			slog.Int("records", len(b.records)), slog.Int("lanes", b.plan.Lanes()),
			slog.Int("failed", failed), slog.Duration("duration", took))
	}
	hook := b.p.cfg.Metrics
	if hook == nil {
		return
	}
	if b.handlerCx.Err() != nil {
		// The response reserve is spent (or the invocation cancelled): the
		// response must go now, a hook could make Lambda time the batch out.
		logContained(ctx, b.log, slog.LevelWarn, "fifo: metrics hook skipped: no time left before the deadline")
		return
	}
	m := BatchMetrics{Messages: make([]MessageMetrics, len(b.records)), Lanes: b.plan.Lanes(), Duration: took}
	for i := range b.records {
		msg, r := &b.records[i], &b.results[i]
		m.Messages[i] = MessageMetrics{
			MessageID:    msg.MessageId,
			GroupID:      msg.Attributes[groupAttribute],
			ReceiveCount: receiveCount(msg),
			Outcome:      r.outcome,
			Wait:         r.wait,
			Duration:     r.duration,
		}
	}
	if pe := guarded(PanicInMetrics, func() { hook(m) }); pe != nil {
		logContained(ctx, b.log, slog.LevelError, "fifo: metrics hook panicked", slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
}
