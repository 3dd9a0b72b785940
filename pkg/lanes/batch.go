package lanes

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"time"
)

// Items is a processor's side of a Batch: what it knows of its items, by
// index. Its methods are called on the lanes' goroutines, each for an item
// of the lane that goroutine runs.
type Items interface {
	// Handle calls the processor's handler with item i under ctx. A panic
	// in it is recovered by the Batch.
	Handle(ctx context.Context, i int) error
	// Quarantined reports whether item i's lane runs under a quarantine: a
	// permanent failure is then to be parked (Result.Park), not
	// dead-lettered.
	Quarantined(i int) bool
	// DeadLetter stores item i, which failed permanently because of cause;
	// called only with BatchConfig.DeadLetter. An error, which names the
	// item, fails it.
	DeadLetter(ctx context.Context, i int, cause error) error
	// AppendAttrs appends the attributes that name item i in its log line.
	AppendAttrs(attrs []slog.Attr, i int) []slog.Attr
}

// Refuser is an optional method of Items: Refuse returns why item i may
// not run, or nil. It is asked just before the item would start (in an
// ordinary lane: not under a quarantine), and a refused item fails without
// running, as does the rest of its lane (pkg/kafka: a key that may have
// moved partition).
type Refuser interface {
	Refuse(i int) error
}

// Warner is an optional method of Items: Warn logs with log what the
// processor has to add about item i before its line (pkg/fifo: a message
// dead-lettered without its cause). It runs as the logger does: a panic
// in it fails the item as the logger's would.
type Warner interface {
	Warn(ctx context.Context, log *slog.Logger, i int)
}

// Preparer is an optional method of Items: Prepare is called once the
// run has started, with the handlers' context, before any lane, on the
// processor's own goroutine (the quarantine's read of the batch's holds).
type Preparer interface {
	Prepare(ctx context.Context)
}

// Result is what became of one item of a Batch.
type Result struct {
	Outcome Outcome
	// Park: the item failed permanently (or as often as the quarantine
	// allows) and the processor's quarantine is to park it because of
	// ParkCause. Until it is parked, or fails to be, its Failed outcome is
	// not a failure of the batch: it stops nothing.
	Park      bool
	ParkCause error
	// Note says why an item was dropped or parked.
	Note string
	Err  error
	// Wait is the time from the start of the batch until the handler
	// started, Duration how long it ran; zero if it never started, or if
	// nothing reads them (no logger, no metrics hook).
	Wait, Duration time.Duration
}

// BatchConfig is what a Batch takes from the processor's batch.
type BatchConfig struct {
	// Logger logs one line per item and one per batch. Default nil: no
	// logging.
	Logger *slog.Logger
	// DeadLetter: Items.DeadLetter stores the items that fail permanently
	// outside a quarantine. Default false: such an item fails.
	DeadLetter bool
	// Metrics: the Items are a Reporter, with a metrics hook to call
	// (see Report). Default false: no hook.
	Metrics bool
	// Quarantine: the Items are a HeldLaner, which runs the lanes whose
	// first item Items.Quarantined names under the hold of their key.
	// Default false: no quarantine, every lane is a Lane.
	Quarantine bool
}

// Reporter is the method of Items that BatchConfig.Metrics asks for:
// ReportMetrics builds the processor's metrics of the batch, which took
// took, and calls its hook.
type Reporter interface {
	ReportMetrics(took time.Duration)
}

// HeldLaner is the method of Items that BatchConfig.Quarantine asks for:
// RunHeldLane runs the lane that starts at head under the quarantine's
// hold of its key: the processor's own lane (with Held's steps).
type HeldLaner interface {
	RunHeldLane(head int)
}

// Batch runs one batch of a processor's items on their lanes and decides
// what becomes of each: it runs the handler, contains its panics, decides
// the outcome (dead-lettering or marking for the quarantine a permanent
// failure), logs it, and reports the batch to the metrics hook. What an
// item is, and what the processor answers, stay with Items. A processor
// embeds a Batch in its own batch and starts it with Engine.Begin.
type Batch struct {
	// Results are the items' results, by index.
	Results []Result
	// Plan is the batch's lanes; the processor sets it before Lanes.
	Plan *Plan

	e          *Engine
	items      Items
	refuser    Refuser
	warner     Warner
	log        *slog.Logger
	deadLetter bool
	reporter   Reporter  // nil without BatchConfig.Metrics
	heldLaner  HeldLaner // nil without BatchConfig.Quarantine
	// timed: something reads the items' timings (a logger, a metrics
	// hook), so the clock is read for them; without, it is read only for
	// the deadline.
	timed bool
	begin time.Time
	run   Run
}

// Begin makes b a batch of n items of items, each Pending, that starts
// now. b may be one that has run before: its Results' room is reused.
func (e *Engine) Begin(b *Batch, items Items, n int, cfg BatchConfig) {
	results := b.Results[:0]
	if cap(results) < n {
		results = make([]Result, n)
	}
	results = results[:n]
	plan := b.Plan
	*b = Batch{
		Results:    results,
		Plan:       plan,
		e:          e,
		items:      items,
		log:        cfg.Logger,
		deadLetter: cfg.DeadLetter,
		timed:      cfg.Logger != nil || cfg.Metrics,
	}
	if b.timed {
		b.begin = e.cfg.Now()
	}
	for i := range b.Results {
		b.Results[i] = Result{Outcome: Pending}
	}
	b.refuser, _ = items.(Refuser)
	b.warner, _ = items.(Warner)
	if cfg.Metrics {
		b.reporter = items.(Reporter)
	}
	if cfg.Quarantine {
		b.heldLaner = items.(HeldLaner)
	}
}

// Reset lets go of everything b refers to but the room of its Results and
// Plan, which a Begin of b reuses: b can wait in a pool for the next batch.
func (b *Batch) Reset() {
	clear(b.Results)
	*b = Batch{Results: b.Results[:0], Plan: b.Plan}
}

// Run runs the batch under ctx: it starts the run (Engine.Start), lets
// the Items prepare it (Preparer), runs the lanes (Lanes) and reports the
// batch (Report), and returns once every handler has returned.
func (b *Batch) Run(ctx context.Context) {
	if len(b.Results) == 0 {
		return
	}
	cancel := b.e.start(&b.run, ctx)
	defer cancel()
	if p, ok := b.items.(Preparer); ok {
		p.Prepare(b.run.ctx) //nolint:contextcheck // the run's context derives from ctx (Engine.Start)
	}
	// Handlers run on the lanes' goroutines; a panic is recovered (call,
	// decide, LogOutcome), and if a handler ends its goroutine with
	// runtime.Goexit another one takes over the remaining lanes.
	b.Lanes(b)
	b.Report(ctx)
}

// Context returns the context the handlers run under (Run.Context).
func (b *Batch) Context() context.Context { return b.run.ctx }

// MayStart reports whether item i may start now (Run.TimeToStart), and
// keeps the time it read as the item's start (its Wait), for RunItem: one
// reading of the clock for both. It reads the clock only if the run has a
// deadline or something reads the timings.
func (b *Batch) MayStart(i int) bool {
	var now time.Time
	if b.timed || b.run.hasDeadline {
		now = b.e.cfg.Now()
	}
	ok := b.run.timeToStartAt(now)
	if b.timed && ok {
		b.Results[i].Wait = now.Sub(b.begin)
	}
	return ok
}

// Stopped reports whether StopOnFirstFailure stopped the run.
func (b *Batch) Stopped() bool { return b.e.cfg.StopOnFirstFailure && b.run.Stopped() }

// StopOnFailure stops the run under StopOnFirstFailure: an item that
// failed before any lane started (pkg/kafka: its lane key panicked) is the
// batch's first failure.
func (b *Batch) StopOnFailure() {
	if b.e.cfg.StopOnFirstFailure {
		b.run.Stop()
	}
}

// Lanes runs b's lanes, runner.RunLane for each (Run.Lanes), and then
// decides each item no lane decided (the rest of a lane whose handler
// called runtime.Goexit) as SkippedAfterFailure.
func (b *Batch) Lanes(runner Runner) {
	b.run.Lanes(b.Plan, runner)
	for i := range b.Results {
		if b.Results[i].Outcome == Pending {
			b.Results[i].Outcome = SkippedAfterFailure
		}
	}
}

// RunLane runs the lane that starts at head (b is the Runner of its run):
// HeldLaner.RunHeldLane if the quarantine holds its key, else Lane.
func (b *Batch) RunLane(head int) {
	if b.heldLaner != nil && b.items.Quarantined(head) {
		b.heldLaner.RunHeldLane(head)
		return
	}
	b.Lane(head)
}

// Lane runs the lane that starts at head, outside any quarantine. Once an
// item of the lane is not completed, the rest of the lane is skipped for
// the same reason, without asking again: after a deadline skip in
// particular, a later time check could pass, because the deadline is
// wall-clock time (Lambda's has no monotonic reading) and the wall clock
// can step back.
func (b *Batch) Lane(head int) {
	rest := Pending // what the rest of the lane becomes; Pending: it runs on
	for i := head; i >= 0; i = b.Plan.Next(i) {
		r := &b.Results[i]
		switch {
		case r.Outcome != Pending: // decided before the run (pkg/kafka: its lane key panicked)
			rest = SkippedAfterFailure
			b.LogOutcome(i)
			continue
		case rest != Pending:
			r.Outcome = rest
		case b.Stopped():
			r.Outcome = SkippedStopped
		case !b.MayStart(i):
			r.Outcome, rest = SkippedDeadline, SkippedDeadline
		case b.refuser != nil && b.refused(i):
			r.Outcome, rest = Failed, SkippedAfterFailure
			b.LogOutcome(i) // a failure that did not run
			continue
		default:
			b.RunItem(i, nil)
			if !r.Outcome.Completed() {
				rest = SkippedAfterFailure
			}
		}
		if !r.Outcome.Started() {
			b.LogOutcome(i)
		}
	}
}

// refused asks the Refuser about item i and records why it refused. A
// refused item never started: the start MayStart kept is no Wait.
func (b *Batch) refused(i int) bool {
	r := &b.Results[i]
	if r.Err = b.refuser.Refuse(i); r.Err == nil {
		return false
	}
	r.Wait = 0
	return true
}

// RunItem runs item i's handler and decides its outcome, then calls then,
// if any, before the outcome is logged. MayStart(i) said yes just before.
func (b *Batch) RunItem(i int, then func()) {
	r := &b.Results[i]
	// If the handler ends its goroutine with runtime.Goexit, call never
	// returns and the item stays decided as a panic.
	r.Outcome, r.Err = Panicked, errHandlerGoexit
	defer b.LogOutcome(i)
	err := b.call(i)
	if b.timed {
		// The handler's end less its start, both from the batch's start
		// (MayStart kept the start as the Wait).
		r.Duration = b.e.cfg.Now().Sub(b.begin) - r.Wait
	}
	b.decide(i, err)
	if then != nil {
		then()
	}
}

// call runs item i's handler and returns a panic in it as a *PanicError.
// It recovers here rather than through Contain: that one frame more on
// every item's path made each lane's goroutine grow its stack, a measured
// 20-40% more overhead per item (pkg/fifo's BenchmarkOverhead).
func (b *Batch) call(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{In: PanicInHandler, Value: v, Stack: debug.Stack()}
		}
	}()
	return b.items.Handle(b.run.ctx, i)
}

// decide sets item i's outcome from its handler's error, dead-lettering
// the item when that is due. It runs code the processor does not control,
// the error's methods and the dead-letter store, and a panic there fails
// the item as a handler's panic does.
func (b *Batch) decide(i int, err error) {
	r := &b.Results[i]
	if err == nil { // the common case, kept off Contain's deeper stack
		r.Outcome, r.Err = Succeeded, nil
		return
	}
	r.Outcome, r.Err = Failed, err
	in := PanicInHandlerError
	pe := Contain(in, func() {
		// Its text is logged: an Error method that panics is caught here as
		// the error's, not later as the logger's, which would lose the
		// item's log line.
		_ = err.Error()
		var hp *PanicError
		switch {
		case errors.As(err, &hp):
			r.Outcome = Panicked
		case !b.permanent(err):
		case b.items.Quarantined(i):
			r.Park, r.ParkCause = true, err // Failed until the quarantine parks it
		case b.deadLetter:
			in = PanicInDeadLetter
			// Decided as a panic until DeadLetter returns: a Goexit in the
			// store leaves it so.
			r.Outcome, r.Err = Panicked, errors.Join(err, &PanicError{In: in, Value: goexitValue})
			if dlErr := b.items.DeadLetter(b.run.ctx, i, err); dlErr != nil {
				r.Outcome, r.Err = Failed, errors.Join(err, dlErr)
				return
			}
			r.Outcome, r.Err = DeadLettered, err
		}
	})
	switch {
	case pe == nil:
	case in == PanicInHandlerError:
		// The error itself panicked: any later use of it would too.
		r.Outcome, r.Err = Panicked, pe
	default:
		pe.In = in
		r.Outcome, r.Err = Panicked, errors.Join(err, pe)
	}
}

// permanent reports whether err marks a permanent failure (Config.Permanent).
func (b *Batch) permanent(err error) bool {
	return b.e.cfg.Permanent != nil && b.e.cfg.Permanent(err)
}

// LogOutcome logs item i's outcome. A started item that failed under
// StopOnFirstFailure stops the batch first: whoever sees the log sees the
// stop. A permanent failure the quarantine is to park is not a failure of
// the batch: it stops it only if parking it fails. A panic in the logger
// fails the item, as a handler's panic does (a completed item becomes
// Panicked, and its lane fails with it), and the failure is logged, with
// its stack, if the logger still works. A runtime.Goexit in the logger
// fails the item too, without a log line: the lane's goroutine is replaced
// and the rest of the lane is skipped, as after a handler's Goexit.
func (b *Batch) LogOutcome(i int) {
	r := &b.Results[i]
	exited := true
	defer func() {
		if !exited {
			return
		}
		if r.Outcome.Completed() {
			r.Outcome = Panicked
		}
		r.Err = errors.Join(r.Err, &PanicError{In: PanicInLogger, Value: goexitValue})
		if r.Outcome.Started() {
			b.StopOnFailure()
		}
	}()
	for again := false; ; again = true {
		if r.Outcome.Started() && !r.Outcome.Completed() && !r.Park {
			b.StopOnFailure()
		}
		pe := b.logItem(i)
		if pe == nil || again {
			exited = false
			return // a logger that panics twice has nothing more to say
		}
		if r.Outcome.Completed() {
			r.Outcome = Panicked
		}
		r.Err = errors.Join(r.Err, pe)
	}
}

// logItem logs item i's line: successes at Debug, drops at Info, panics
// at Error, every other outcome at Warn.
func (b *Batch) logItem(i int) *PanicError {
	if b.log == nil {
		return nil
	}
	return Contain(PanicInLogger, func() {
		r := &b.Results[i]
		ctx := context.Background()
		if b.warner != nil {
			b.warner.Warn(ctx, b.log, i)
		}
		level := slog.LevelWarn
		switch r.Outcome {
		case Panicked:
			level = slog.LevelError
		case Succeeded:
			level = slog.LevelDebug
		case Dropped:
			level = slog.LevelInfo
		}
		if !b.log.Enabled(ctx, level) {
			return
		}
		attrs := b.items.AppendAttrs(make([]slog.Attr, 0, 9), i)
		attrs = append(attrs,
			slog.String("outcome", r.Outcome.String()),
			slog.Duration("duration", r.Duration),
			slog.Duration("wait", r.Wait),
		)
		if r.Note != "" {
			attrs = append(attrs, slog.String("reason", r.Note))
		}
		if r.Err != nil {
			attrs = append(attrs, slog.String("error", r.Err.Error()))
			var pe *PanicError
			if errors.As(r.Err, &pe) && pe.Stack != nil {
				attrs = append(attrs, slog.String("stack", string(pe.Stack)))
			}
		}
		b.log.LogAttrs(ctx, level, b.e.say.item, attrs...)
	})
}

// LogContained logs with l, if there is one, on a processor's own
// goroutine (Guard): a panic or a runtime.Goexit in the logger is dropped,
// as nothing is left to fail for it.
func LogContained(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	if l != nil {
		_ = Guard(PanicInLogger, func() { l.LogAttrs(ctx, level, msg, attrs...) })
	}
}

// Report logs the batch and calls the Reporter, if any, with the
// batch's duration, after every handler has returned, guarded: a panic in
// it is logged. The hook is skipped, with a warning, once the handlers'
// context is done: the response reserve is spent (or the invocation
// cancelled), and the response must go now, as a hook could make Lambda
// time the batch out.
func (b *Batch) Report(ctx context.Context) {
	var took time.Duration
	if b.timed {
		took = b.e.cfg.Now().Sub(b.begin)
	}
	if b.log != nil {
		failed := 0
		for i := range b.Results {
			if !b.Results[i].Outcome.Completed() {
				failed++
			}
		}
		LogContained(ctx, b.log, slog.LevelInfo, b.e.say.batch,
			slog.Int("records", len(b.Results)), slog.Int("lanes", b.Plan.Lanes()),
			slog.Int("failed", failed), slog.Duration("duration", took))
	}
	if b.reporter == nil {
		return
	}
	if b.run.ctx.Err() != nil {
		LogContained(ctx, b.log, slog.LevelWarn, b.e.say.metricsSkipped)
		return
	}
	if pe := Guard(PanicInMetrics, func() { b.reporter.ReportMetrics(took) }); pe != nil {
		LogContained(ctx, b.log, slog.LevelError, b.e.say.metricsPanicked, slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
}

// words are what an Engine's batches say, in its processor's name.
type words struct {
	name, item, batch, metricsSkipped, metricsPanicked string
}

func wordsOf(name, item string) words {
	return words{
		name:            name,
		item:            name + ": " + item,
		batch:           name + ": batch",
		metricsSkipped:  name + ": metrics hook skipped: no time left before the deadline",
		metricsPanicked: name + ": metrics hook panicked",
	}
}
