package kafka

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

// Processor runs Kafka batches through a Handler, one lane per partition
// and lane key. It is safe for concurrent use; with p, err :=
// kafka.New(kafka.Config{Handler: h}), lambda.Start(p.Process) is a
// complete Kafka consumer.
type Processor struct {
	// cfg is the validated Config, with Now's default filled in (the
	// lane engine fills in its own fields' defaults).
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
	if cfg.Now == nil {
		cfg.Now = time.Now // the lanes' own default for the deadline; this one for the timings
	}
	engine, err := lanes.New(cfg.lanes())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Processor{cfg: cfg, lanes: engine}, nil
}

// Process handles the batch and returns the records to deliver again: every
// record not completed (see the package documentation). It returns an
// error only for an invalid batch (see ErrInvalidBatch), having run
// nothing; Lambda then retries the whole batch.
func (p *Processor) Process(ctx context.Context, ev events.KafkaEvent) (EventResponse, error) {
	b, err := p.newBatch(ctx, ev)
	if err != nil {
		n := 0
		for _, recs := range ev.Records {
			n += len(recs)
		}
		logContained(ctx, p.cfg.Logger, slog.LevelError, "kafka: batch refused", requestAttr(ctx), slog.Int("records", n), slog.Any("error", err))
		return EventResponse{}, err
	}
	b.run(ctx)
	return response(b.checked, func(i int) bool { return b.results[i].outcome.Completed() }), nil
}

// pending marks a record no lane has decided yet. Only a handler that
// called runtime.Goexit can leave one behind; the rest of its lane then
// counts as skipped after a failure.
const pending = numOutcomes

type result struct {
	outcome Outcome
	// park: the record failed permanently, or as often as the quarantine
	// threshold allows, and the quarantine is to park it because of
	// parkCause (Config.Quarantine). Until it is parked, or fails to be,
	// its Failed outcome is not a failure of the batch: it stops nothing.
	park      bool
	parkCause error
	// note says why a record was dropped or parked.
	note     string
	err      error
	wait     time.Duration
	duration time.Duration
}

type batch struct {
	p       *Processor
	checked []checkedRecord // the records' identifiers, in Process's order
	records []Record
	results []result
	plan    *lanes.Plan // the lanes: one per (partition, key), one per partition's null keys
	begin   time.Time
	log     *slog.Logger
	// keyFailed: the lane key function panicked for a record, which is
	// decided (Panicked) before the run.
	keyFailed bool
	// laneNames are the records' lane names (see keyedLane).
	laneNames []string

	// held is the quarantine's view of the batch (Config.Quarantine), and
	// heldErr the error that kept the batch from reading it.
	held    QuarantineView
	heldErr error

	// running is the lanes' run: the handlers' context (handlerCx), the
	// deadline, and the stop of a record failed under StopOnFirstFailure.
	running   *lanes.Run
	handlerCx context.Context
}

func (p *Processor) newBatch(ctx context.Context, ev events.KafkaEvent) (*batch, error) {
	checked, err := checked(ev)
	if err != nil {
		return nil, err
	}
	records, err := decode(checked)
	if err != nil {
		return nil, err
	}
	b := &batch{
		p:       p,
		checked: checked,
		records: records,
		results: make([]result, len(records)),
		begin:   p.cfg.Now(),
		log:     p.cfg.Logger,
	}
	for i := range b.results {
		b.results[i].outcome = pending
	}
	b.laneNames = b.laneKeys()
	b.plan = p.lanes.Plan(len(records), func(i int) (string, bool) { return b.laneNames[i], true })
	if b.log != nil && len(records) > 0 {
		// A logger that panics here keeps logging without the request id,
		// where each of its panics is contained too.
		_ = guarded(PanicInLogger, func() { b.log = b.log.With(requestAttr(ctx)) })
	}
	return b, nil
}

// Lane keys are the partition's index in the batch, then a kind: 'k' and
// the key, 'n' for the partition's null-key lane, 'x' for the records of a
// partition from one whose lane key function panicked. A decimal index
// followed by a letter is unambiguous whatever the key holds.
const (
	keyedLane  = 'k'
	nullLane   = 'n'
	brokenLane = 'x'
)

// laneKeys returns each record's lane key, all in one string (one
// allocation per batch, not one per record). Config.LaneKey runs on a
// goroutine of its own (guarded), resumed after a partition it panicked in.
func (b *batch) laneKeys() []string {
	n := len(b.records)
	part := partitionIndexes(b.checked)
	l := laneNames{ends: make([]int, 0, n)}
	laneKey := b.p.cfg.LaneKey
	if laneKey == nil {
		for i := range n {
			l.buf = appendLaneName(l.buf, part[i], b.records[i].Key != nil, b.records[i].Key)
			l.ends = append(l.ends, len(l.buf))
		}
		return l.keys()
	}
	for next := 0; next < n; {
		// next is advanced on the guarded goroutine, which guarded waits
		// for: after a panic it names the record the panic was for.
		pe := guarded(PanicInLaneKey, func() {
			for ; next < n; next++ {
				key, ok := laneKey(b.records[next])
				l.buf = appendLaneName(l.buf, part[next], ok, key)
				l.ends = append(l.ends, len(l.buf))
			}
		})
		if pe == nil {
			break
		}
		next = b.breakPartition(&l, part, next, pe)
	}
	return l.keys()
}

// laneNames is the lane keys of a batch's records, in index order: buf
// holds them one after another, ends[i] where record i's ends.
type laneNames struct {
	buf  []byte
	ends []int
}

// keys cuts the lane keys out of one string.
func (l *laneNames) keys() []string {
	all := string(l.buf)
	keys := make([]string, len(l.ends))
	start := 0
	for i, end := range l.ends {
		keys[i] = all[start:end]
		start = end
	}
	return keys
}

// partitionIndexes returns, for each record, its partition's index in the batch.
func partitionIndexes(recs []checkedRecord) []int {
	part := make([]int, len(recs))
	for i := 1; i < len(recs); i++ {
		part[i] = part[i-1]
		if recs[i].id.TopicPartition != recs[i-1].id.TopicPartition {
			part[i]++
		}
	}
	return part
}

// appendLaneName appends the lane key of a record of partition part:
// keyed (ok) or the partition's null-key lane.
func appendLaneName[K string | []byte](buf []byte, part int, ok bool, key K) []byte {
	buf = strconv.AppendInt(buf, int64(part), 10)
	if !ok {
		return append(buf, nullLane)
	}
	return append(append(buf, keyedLane), key...)
}

// breakPartition decides record i, whose lane key function panicked, as
// Panicked, and puts it and every later record of its partition in the
// partition's broken lane: their keys are unknown, so any of them may share
// a lane with it, and none may run before it does. It returns the index of
// the next partition's first record.
func (b *batch) breakPartition(l *laneNames, part []int, i int, pe *PanicError) int {
	b.keyFailed = true
	b.results[i].outcome, b.results[i].err = Panicked, pe
	end := partitionEnd(b.checked, i)
	for range end - i {
		l.buf = append(strconv.AppendInt(l.buf, int64(part[i]), 10), brokenLane)
		l.ends = append(l.ends, len(l.buf))
	}
	return end
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
	if b.keyFailed && b.p.cfg.StopOnFirstFailure {
		run.Stop() // a lane key function's panic is the batch's first failure
	}
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
// run). Once a record of the lane is not completed, the rest of the lane is
// skipped for the same reason, without asking again: after a deadline skip
// in particular, a later time check could pass, because the deadline is
// wall-clock time (Lambda's has no monotonic reading) and the wall clock
// can step back.
func (b *batch) RunLane(head int) {
	if b.quarantined(head) {
		b.runQuarantinedLane(head)
		return
	}
	rest := pending // what the rest of the lane becomes; pending: it runs on
	for i := head; i >= 0; i = b.plan.Next(i) {
		r := &b.results[i]
		switch {
		case r.outcome != pending: // decided before the run: its lane key panicked
			rest = SkippedAfterFailure
			b.logOutcome(i)
			continue
		case rest != pending:
			r.outcome = rest
		case b.p.cfg.StopOnFirstFailure && b.running.Stopped():
			r.outcome = SkippedStopped
		case !b.running.TimeToStart():
			r.outcome, rest = SkippedDeadline, SkippedDeadline
		case b.p.cfg.PartitionCount != 0 && b.movedKey(i):
			r.outcome, rest = Failed, SkippedAfterFailure
			b.logOutcome(i) // a failure that did not run
			continue
		default:
			b.runRecord(i)
			if !r.outcome.Completed() {
				rest = SkippedAfterFailure
			}
		}
		if !r.outcome.Started() {
			b.logOutcome(i)
		}
	}
}

// movedKey reports whether keyed record i carries another partition count
// than Config.PartitionCount (its key may have moved partition), and
// records why; a null-key record has no key order to lose.
func (b *batch) movedKey(i int) bool {
	if _, keyed := b.laneKeyOf(i); !keyed {
		return false
	}
	b.results[i].err = checkPartitionCount(&b.records[i], b.p.cfg.PartitionCount)
	return b.results[i].err != nil
}

// errHandlerGoexit is a handler's runtime.Goexit, one value for every
// record (never changed), so that a record's path allocates nothing for it.
var errHandlerGoexit = &PanicError{In: PanicInHandler, Value: goexitValue}

func (b *batch) runRecord(i int) { b.runRecordThen(i, nil) }

// runRecordThen runs record i, then calls then, if any, after its outcome
// is decided and before it is logged.
func (b *batch) runRecordThen(i int, then func()) {
	r := &b.results[i]
	start := b.p.cfg.Now()
	r.wait = start.Sub(b.begin)
	// If the handler ends its goroutine with runtime.Goexit, call never
	// returns and the record stays decided as a panic.
	r.outcome, r.err = Panicked, errHandlerGoexit
	defer b.logOutcome(i)
	err := b.call(b.handlerCx, i)
	r.duration = b.p.cfg.Now().Sub(start)
	b.decide(i, err)
	if then != nil {
		then()
	}
}

// call runs record i's handler and returns a panic in it as a *PanicError.
// It recovers here rather than through contained: lanes.Contain's frame
// more on every record's path makes a lane's goroutine grow its stack, as
// pkg/fifo measured (its contained).
func (b *batch) call(ctx context.Context, i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{In: PanicInHandler, Value: v, Stack: debug.Stack()}
		}
	}()
	return b.p.cfg.Handler(ctx, b.records[i])
}

// decide sets record i's outcome from its handler's error, dead-lettering
// the record when that is due. It runs code the processor does not
// control, the error's methods and the dead-letter store, and a panic there
// fails the record as a handler's panic does.
func (b *batch) decide(i int, err error) {
	r := &b.results[i]
	if err == nil { // the common case, kept off contained's deeper stack
		r.outcome, r.err = Succeeded, nil
		return
	}
	r.outcome, r.err = Failed, err
	in := PanicInHandlerError
	pe := contained(in, func() {
		// Its text is logged: an Error method that panics is caught here as
		// the error's, not later as the logger's, which would lose the
		// record's log line.
		_ = err.Error()
		var hp *PanicError
		switch {
		case errors.As(err, &hp):
			r.outcome = Panicked
		case IsPermanent(err) && b.quarantined(i):
			r.park, r.parkCause = true, err // Failed until runQuarantinedLane parks it
		case IsPermanent(err) && b.p.cfg.DeadLetter != nil:
			in = PanicInDeadLetter
			// Decided as a panic until Send returns: a Goexit in the
			// store leaves it so.
			r.outcome, r.err = Panicked, errors.Join(err, &PanicError{In: in, Value: goexitValue})
			if dlErr := b.p.cfg.DeadLetter.Send(b.handlerCx, b.records[i], err); dlErr != nil {
				r.outcome, r.err = Failed, errors.Join(err, fmt.Errorf("kafka: dead-letter %s offset %d: %w",
					b.checked[i].id.TopicPartition, b.checked[i].id.Offset, dlErr))
				return
			}
			r.outcome, r.err = DeadLettered, err
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
