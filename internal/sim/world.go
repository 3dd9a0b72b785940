package sim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The deployment the simulation runs: template.yaml's defaults.
const (
	bucket                  = "candidates-sim"
	workerTimeout           = 60 * time.Second
	commandsVisibility      = 360 * time.Second // 6 x the worker's timeout
	shortVisibility         = 40 * time.Second  // below the worker's timeout: some seeds
	commandsMaxReceive      = 8
	commandsQuarantineAfter = 6
	projectorTimeout        = 30 * time.Second
	eventsVisibility        = 180 * time.Second
	eventsMaxReceive        = 10
	eventsQuarantineAfter   = 6
	recoverAfter            = 3
	maxGenerations          = jobs.DefaultMaxGenerations
	sweeperTimeout          = 120 * time.Second
	sweeperMaxItems         = 25 // small, so that runs resume from their cursors
	// itemTime is how long the task takes per item.
	itemTime = 200 * time.Millisecond
	// pageSize is how many items the task does between progress reports.
	pageSize = 8
)

// Break is a bug put into the pipeline on purpose, to show that the
// invariants catch it.
type Break int

// The deliberate bugs.
const (
	// BreakNone runs the code as it is.
	BreakNone Break = iota
	// BreakQuarantineCheck makes both processors' quarantine report no
	// hold: a held group's later messages run instead of being parked.
	// SQS only.
	BreakQuarantineCheck
	// BreakCommitFence makes the Kafka consumer groups take an offset
	// commit of a stale generation: a member whose partition moved in a
	// rebalance still commits it. Kafka only.
	BreakCommitFence
)

func (b Break) String() string {
	switch b {
	case BreakNone:
		return "none"
	case BreakQuarantineCheck:
		return "quarantine-check"
	case BreakCommitFence:
		return "commit-fence"
	}
	return fmt.Sprintf("Break(%d)", int(b))
}

// Transport is the transport the bug is in.
func (b Break) Transport() Transport {
	if b == BreakCommitFence {
		return TransportKafka
	}
	return TransportSQS
}

// Config is one run's.
type Config struct {
	Seed uint64
	// Break is the bug put in on purpose (default BreakNone: none).
	Break Break
	// Transport carries the commands and the events (default
	// TransportSQS: the SQS FIFO queues). With TransportKafka they go
	// through Kafka topics and event source mappings; a seed runs
	// differently on each transport.
	Transport Transport
	// Store holds the jobs, the projection and the quarantine (default
	// StoreMemory: the in-memory stores). With StorePostgres they are the
	// PostgreSQL stores on DB; everything else is the same.
	Store Store
	// DB is StorePostgres's database: an empty one of the run's own (the
	// run applies the three stores' migrations), on a PostgreSQL 18 server,
	// through the functions' driver (internal/base/pgwire). Required with StorePostgres, refused with
	// StoreMemory (default nil).
	DB *sql.DB
	// OutboxRelay, with StorePostgres, has the relay read job_outbox
	// through the real pgsource.Relay (Drain, with a sink feeding the
	// simulated queues or topics) instead of publishing the journal's
	// stream. Default false: the journal's stream, as with StoreMemory, so
	// that a seed runs on PostgreSQL as it does on the memory stores.
	OutboxRelay bool
	// Trace, when set, receives the run's steps as they happen; otherwise
	// the last lines are kept for the error of a failed run.
	Trace io.Writer
}

// Validate reports a field that cannot work, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Break < BreakNone || c.Break > BreakCommitFence:
		return fmt.Errorf("%w: Break %v is none of the deliberate bugs", ErrInvalidConfig, c.Break)
	case c.Transport < TransportSQS || c.Transport > TransportKafka:
		return fmt.Errorf("%w: Transport %v is none of the transports", ErrInvalidConfig, c.Transport)
	case c.Break != BreakNone && c.Break.Transport() != c.Transport:
		return fmt.Errorf("%w: Break %v breaks Transport %v, not %v", ErrInvalidConfig, c.Break, c.Break.Transport(), c.Transport)
	case c.Store < StoreMemory || c.Store > StorePostgres:
		return fmt.Errorf("%w: Store %v is none of the stores", ErrInvalidConfig, c.Store)
	case c.Store == StorePostgres && c.DB == nil:
		return fmt.Errorf("%w: DB is nil, and Store is %v", ErrInvalidConfig, c.Store)
	case c.Store == StoreMemory && c.DB != nil:
		return fmt.Errorf("%w: DB is set, and Store is %v", ErrInvalidConfig, c.Store)
	case c.OutboxRelay && c.Store != StorePostgres:
		return fmt.Errorf("%w: OutboxRelay is set, and Store is %v: only PostgreSQL has an outbox table", ErrInvalidConfig, c.Store)
	}
	return nil
}

// name names the run in its errors: "seed 12", or "seed 12 (kafka)" for
// another transport than the default, "seed 12 (postgres)" for another
// store, "seed 12 (kafka, postgres, outbox relay)" for all three.
func (c Config) name() string {
	var other []string
	if c.Transport != TransportSQS {
		other = append(other, c.Transport.String())
	}
	if c.Store != StoreMemory {
		other = append(other, c.Store.String())
	}
	if c.OutboxRelay {
		other = append(other, "outbox relay")
	}
	if len(other) == 0 {
		return fmt.Sprintf("seed %d", c.Seed)
	}
	return fmt.Sprintf("seed %d (%s)", c.Seed, strings.Join(other, ", "))
}

// Stats count what a run did, so that a set of seeds can be shown to reach
// every path the invariants are about.
type Stats struct {
	Steps, Jobs, Completed, Failed, Cancelled int
	Accepts, Takeovers, Nudges, FencedWrites  int
	LeaseHeld                                 int
	Crashes, Refused, LostAnswers, Delayed    int
	DroppedAnswers, TimedOut, Stalls          int
	SlowRequests                              int
	Redelivered, Deduplicated, LostRecords    int
	Parked, Dropped, SkippedDeadline          int
	Redrives, Released, DeadLettered, Poisons int
	Hostile, Discarded, Outages               int
	DeadLetteredCopies                        int
	Recoveries, Repairs, OrphansDeleted       int
	IntakeConflicts, IntakeRetries            int
	ForgedEvents, ViewsPutBack                int
	// The Kafka transport's.
	Rebalances, MidBatchRebalances, FencedCommits int
	RecordsRedelivered, KafkaRetries, GaveUp      int
	OnFailure, Compacted, Aborted                 int
	// RefusedNullKeys: records without a key a compacted topic refused.
	RefusedNullKeys int
	// The event source mapping's settings and the records' shapes:
	// batches split by BisectBatchOnFunctionError; records given up past
	// MaximumRecordAge, or too large for an event alone; batches closed
	// before the next record would cross the event's limit, or sent when
	// their batching window ended; header bombs produced, and records a
	// topic refused over its max.message.bytes.
	Bisections, Expired, TooLargeForEvent int
	SizeClosed, WindowEnded               int
	HeaderBombs, RefusedTooLarge          int
	// A partition count change: topics grown; records parked for
	// carrying another partition count than their consumer's; records of
	// a held key refused in another partition than its hold's.
	PartitionChanges, CountHeld, MovedRefused int
	// LostPublishes: with Config.OutboxRelay, messages published whose
	// answer the relay lost (its row is published again).
	LostPublishes int
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	a := []*int{&s.Steps, &s.Jobs, &s.Completed, &s.Failed, &s.Cancelled, &s.Accepts, &s.Takeovers, &s.Nudges, &s.FencedWrites, &s.LeaseHeld,
		&s.Crashes, &s.Refused, &s.LostAnswers, &s.Delayed, &s.DroppedAnswers, &s.TimedOut, &s.Stalls, &s.SlowRequests, &s.Redelivered,
		&s.Deduplicated, &s.LostRecords, &s.Parked, &s.Dropped, &s.SkippedDeadline, &s.Redrives, &s.Released,
		&s.DeadLettered, &s.Poisons, &s.Hostile, &s.Discarded, &s.Outages, &s.DeadLetteredCopies, &s.Recoveries, &s.Repairs, &s.OrphansDeleted, &s.IntakeConflicts, &s.IntakeRetries, &s.ForgedEvents, &s.ViewsPutBack,
		&s.Rebalances, &s.MidBatchRebalances, &s.FencedCommits, &s.RecordsRedelivered, &s.KafkaRetries, &s.GaveUp, &s.OnFailure, &s.Compacted, &s.Aborted, &s.RefusedNullKeys,
		&s.Bisections, &s.Expired, &s.TooLargeForEvent, &s.SizeClosed, &s.WindowEnded, &s.HeaderBombs, &s.RefusedTooLarge,
		&s.PartitionChanges, &s.CountHeld, &s.MovedRefused, &s.LostPublishes}
	b := []int{o.Steps, o.Jobs, o.Completed, o.Failed, o.Cancelled, o.Accepts, o.Takeovers, o.Nudges, o.FencedWrites, o.LeaseHeld,
		o.Crashes, o.Refused, o.LostAnswers, o.Delayed, o.DroppedAnswers, o.TimedOut, o.Stalls, o.SlowRequests, o.Redelivered,
		o.Deduplicated, o.LostRecords, o.Parked, o.Dropped, o.SkippedDeadline, o.Redrives, o.Released,
		o.DeadLettered, o.Poisons, o.Hostile, o.Discarded, o.Outages, o.DeadLetteredCopies, o.Recoveries, o.Repairs, o.OrphansDeleted, o.IntakeConflicts, o.IntakeRetries, o.ForgedEvents, o.ViewsPutBack,
		o.Rebalances, o.MidBatchRebalances, o.FencedCommits, o.RecordsRedelivered, o.KafkaRetries, o.GaveUp, o.OnFailure, o.Compacted, o.Aborted, o.RefusedNullKeys,
		o.Bisections, o.Expired, o.TooLargeForEvent, o.SizeClosed, o.WindowEnded, o.HeaderBombs, o.RefusedTooLarge,
		o.PartitionChanges, o.CountHeld, o.MovedRefused, o.LostPublishes}
	for i := range a {
		*a[i] += b[i]
	}
}

// intent is a client's idempotency key and what it asked for.
type intent struct {
	tenant, key string
	spec        map[string]string
	jobID       string
	created     bool // the client saw the job created (202 or 200)
	// poison: a command for the intent's job was sent before the job
	// existed (a producer that ran ahead); fixed once the job is created.
	poison bool
}

// World is one run: the pipeline, the simulated AWS around it, the fault
// plan, the scheduler and the observations the invariants are checked on.
type World struct {
	cfg   Config
	rng   *rand.Rand
	clock *Clock
	// faulty: the fault plan is on (the chaos phase); off, nothing fails
	// that the code could not be expected to get through.
	faulty bool
	odds   odds
	// outages: a component refuses every request until then.
	outages map[string]time.Time
	// current is the fiber running, nil for the scheduler; suspended the
	// fibers waiting to be resumed.
	current   *fiber
	suspended []*fiber
	sweeping  bool // a sweeper run has not ended

	journal    *journal
	jobs       *faultJobs
	s3         *s3mem.S3
	bucket     *faultS3
	candidates *candidate.Store
	checker    *candidate.Store // on the bucket itself, for the checks: no faults
	// commands and evts are the SQS transport's queues, nil with Kafka;
	// kafka is the Kafka transport, nil with SQS.
	commands *Queue
	evts     *Queue
	kafka    *kafkaWorld
	// qmem is the quarantine's store itself, without faults, for the
	// checks.
	qmem      quarantine.Store
	qstore    *faultQuarantine
	views     *views
	proj      *faultProjection
	workerFn  *fifo.Processor
	projector *fifo.Processor
	sweeper   *sweeper.Sweeper
	intake    *intake.Handler
	// sources are the queues or topics the quarantine serves, commands
	// first, each with its operator's settings.
	sources []source

	// What happened.
	jobIDs        []string       // every job, in the order it was created
	created       map[string]int // job id → its place in jobIDs
	streams       map[string]*stream
	intents       []*intent
	delayed       []delayedWrite
	commandBodies map[string]string // outbox id → the command's body
	eventBodies   map[string]string // outbox id → the event's body
	processed     map[*Queue]map[string]map[uint64]bool
	accepts       map[string]int
	deltas        map[string]int64 // tenant → the deltas the totals were given
	completions   map[string]int64 // tenant → completions counted
	invocations   int
	presigned     []string
	// hostile holds the deduplication ids of the messages no redrive can
	// fix (a command naming another tenant, an event that is not JSON):
	// the operator discards them.
	hostile map[string]bool
	// forged holds the events forgeEvent sent (forgedKey), which the
	// relay never published.
	forged map[string]bool
	stats  Stats

	err   error
	trace []string
}

// Run runs one seed: a chaos phase of random steps with faults, then a
// settling phase without them, then the final checks. It returns the first
// invariant that failed, with the run's last steps.
func Run(cfg Config) (Stats, error) {
	w, err := newWorld(cfg)
	if err != nil {
		return Stats{}, fmt.Errorf("%s: %w", cfg.name(), err)
	}
	err = w.run()
	// Whatever happened, no invocation is left suspended.
	for w.resumeOne(false) {
	}
	w.stats.Jobs = len(w.jobIDs)
	if err != nil {
		return w.stats, fmt.Errorf("%s: %w\n--- the run's last steps:\n%s", cfg.name(), err, strings.Join(w.trace, "\n"))
	}
	return w.stats, nil
}

// newWorld builds the world of cfg, or returns why it cannot: a setting
// of the world's own that a component refuses is a bug of the simulation,
// reported as Run's error.
func newWorld(cfg Config) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{
		cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), clock: NewClock(),
		created: map[string]int{}, streams: map[string]*stream{},
		commandBodies: map[string]string{}, eventBodies: map[string]string{},
		processed: map[*Queue]map[string]map[uint64]bool{}, accepts: map[string]int{},
		deltas: map[string]int64{}, completions: map[string]int64{},
		outages: map[string]time.Time{}, hostile: map[string]bool{}, forged: map[string]bool{},
	}
	// Each seed has its own fault rates, some of them near zero.
	w.odds = odds{before: w.rng.IntN(40), after: w.rng.IntN(25), delay: w.rng.IntN(12), conflict: w.rng.IntN(4), slow: w.rng.IntN(30)}

	st, err := newStores(context.Background(), cfg, jobs.Config{Now: w.clock.Now, Recovery: jobs.RecoveryPolicy{MaxGenerations: maxGenerations}})
	if err != nil {
		return nil, err
	}
	w.qmem = st.quarantine
	w.journal = &journal{w: w, mem: st.jobs}
	w.jobs = &faultJobs{w: w, inner: w.journal}
	w.s3, err = s3mem.New(s3mem.Config{Buckets: []string{bucket}, Now: w.clock.Now})
	if err != nil {
		return nil, err
	}
	w.bucket = &faultS3{w: w, inner: w.s3}
	// A conflict's retry waits a nanosecond, the least there is: the
	// world's time is its own clock.
	candidates, cerr := candidate.New(candidate.Config{Client: w.bucket, Bucket: bucket, ConflictAttempts: 3, ConflictBackoff: time.Nanosecond})
	checker, kerr := candidate.New(candidate.Config{Client: w.s3, Bucket: bucket})
	if err := errors.Join(cerr, kerr); err != nil {
		return nil, err
	}
	w.candidates, w.checker = candidates, checker
	wk, err := w.newWorker()
	if err != nil {
		return nil, err
	}
	w.views = &views{w: w, mem: st.projection}
	w.proj = &faultProjection{w: w, inner: w.views}
	p, err := projection.NewProjector(projection.ProjectorConfig{Store: w.proj, Source: w.jobs, RecoverAfter: recoverAfter})
	if err != nil {
		return nil, err
	}
	cursor, cerr := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: w.bucket, Bucket: bucket})
	repairCursor, rerr := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: w.bucket, Bucket: bucket, Key: sweeper.RepairCursorKey})
	if err := errors.Join(cerr, rerr); err != nil {
		return nil, err
	}
	sweep := sweeper.Config{
		Jobs: w.jobs, Candidates: w.candidates, Now: w.clock.Now, Projection: w.proj,
		Cursor:       cursor,
		RepairCursor: repairCursor,
		MaxItems:     sweeperMaxItems,
	}
	if cfg.Transport == TransportKafka {
		err = w.newKafka(wk.HandleRecord, p.HandleRecord)
	} else {
		err = w.newSQS(cfg, wk.Handle, p.Handle)
	}
	if err != nil {
		return nil, err
	}
	// A stuck job whose commands group (or key) is held is left to the
	// operator's redrive, not nudged.
	sweep.Quarantine, sweep.CommandsQueue, sweep.EventsQueue = w.qstore, w.sources[0].name, w.sources[1].name
	if w.sweeper, err = sweeper.New(sweep); err != nil {
		return nil, err
	}
	w.intake, err = intake.New(intake.Config{Store: w.jobs, Presigner: presigner{w}, Now: w.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// newSQS builds the SQS transport: the queues, the quarantine and its
// operators, and the worker's and the projector's fifo.Processor.
func (w *World) newSQS(cfg Config, worker, projector fifo.Handler) error {
	// One seed in eight runs a deployment that ignores the 6 x rule: the
	// commands' visibility timeout ends before a stalled attempt's lease,
	// so a command can come back while its job's lease is live.
	visibility := commandsVisibility
	if w.rng.IntN(8) == 0 {
		visibility = shortVisibility
	}
	commands, cerr := NewQueue(QueueConfig{Name: "commands.fifo", Visibility: visibility, MaxReceive: commandsMaxReceive, Now: w.clock.Now})
	evts, eerr := NewQueue(QueueConfig{Name: "events.fifo", Visibility: eventsVisibility, MaxReceive: eventsMaxReceive, Now: w.clock.Now})
	if err := errors.Join(cerr, eerr); err != nil {
		return err
	}
	w.commands, w.evts = commands, evts
	w.processed[w.commands] = map[string]map[uint64]bool{}
	w.processed[w.evts] = map[string]map[uint64]bool{}

	qstore := &faultQuarantine{Store: w.qmem, w: w}
	w.qstore = qstore
	commandsQuarantine, cerr := quarantine.New(quarantine.Config{Store: qstore, QueueARN: w.commands.ARN, Now: w.clock.Now})
	eventsQuarantine, eerr := quarantine.New(quarantine.Config{Store: qstore, QueueARN: w.evts.ARN, Now: w.clock.Now})
	bodies, berr := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: w.s3, Bucket: bucket})
	if err := errors.Join(cerr, eerr, berr); err != nil {
		return err
	}
	var commandsQ, eventsQ fifo.Quarantine = commandsQuarantine, eventsQuarantine
	if cfg.Break == BreakQuarantineCheck {
		commandsQ, eventsQ = blind{commandsQ}, blind{eventsQ}
	}
	for _, q := range []*Queue{w.commands, w.evts} {
		op := quarantine.OperatorConfig{Store: qstore, Queue: q.Name, QueueURL: q.URL, Sender: slowSender{w, q}, Now: w.clock.Now,
			Bodies: bodies}
		// Checked here, where a bad one is Run's error; the operator
		// itself is made for each command (World.operator).
		if err := op.Validate(); err != nil {
			return err
		}
		w.sources = append(w.sources, source{name: q.Name, commands: q == w.commands, operator: op})
	}
	var err error
	if w.workerFn, err = w.processor(w.tracked(w.commands, worker), commandsQ, commandsQuarantineAfter); err != nil {
		return err
	}
	w.projector, err = w.processor(w.tracked(w.evts, projector), eventsQ, eventsQuarantineAfter)
	return err
}

// source is a queue or a topic the quarantine serves, as its operator
// sees it.
type source struct {
	name     string // the queue's or the topic's
	commands bool   // the worker's (an early command's cause can be fixed)
	operator quarantine.OperatorConfig
}

// logf adds a line to the trace.
func (w *World) logf(format string, args ...any) {
	line := fmt.Sprintf("%9.3fs %s", w.clock.Now().Sub(Epoch).Seconds(), fmt.Sprintf(format, args...))
	if w.cfg.Trace != nil {
		fmt.Fprintln(w.cfg.Trace, line)
		return
	}
	const keep = 400
	if len(w.trace) >= 2*keep {
		w.trace = append(w.trace[:0], w.trace[len(w.trace)-keep:]...)
	}
	w.trace = append(w.trace, line)
}

// fail ends the run with err, a fault of the simulation itself (a
// component it could not make), not a broken invariant.
func (w *World) fail(err error) {
	w.logf("FAILED: %v", err)
	if w.err == nil {
		w.err = fmt.Errorf("sim: %w (at %s, step %d)", err, w.clock.Now().Sub(Epoch), w.stats.Steps)
	}
}

// violate records a broken invariant; the first one ends the run.
func (w *World) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.logf("VIOLATION: %s", msg)
	if w.err == nil {
		w.err = fmt.Errorf("%s (at %s, step %d)", msg, w.clock.Now().Sub(Epoch), w.stats.Steps)
	}
}

// sendFault is SQS refusing a send of the relay (throttling). The
// operator's sends are not refused: its retry waits in real time.
func (w *World) sendFault() error {
	if w.faulty && w.rng.IntN(1000) < w.odds.before {
		return errThrottled
	}
	return nil
}

// invoke makes an invocation's context: its request id, its deadline on
// the simulated clock, and, with faults on, the crash it may die of.
func (w *World) invoke(kind string, timeout time.Duration) (context.Context, *invocation, context.CancelFunc) {
	w.invocations++
	inv := &invocation{id: fmt.Sprintf("%s-%d", kind, w.invocations), kind: kind, deadline: w.clock.Now().Add(timeout)}
	if w.faulty {
		switch r := w.rng.IntN(100); {
		case r < 4:
			inv.crashAt = 1 + w.rng.IntN(12)
		case r < 7:
			inv.dropAnswer = true
		}
	}
	ctx := context.WithValue(context.Background(), invocationKey{}, inv)
	ctx, cancel := context.WithDeadline(ctx, inv.deadline)
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       inv.id,
		InvokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:" + kind,
	})
	return ctx, inv, cancel
}

// consume receives a batch from q and runs it through proc in one
// invocation, then gives the queue the invocation's answer, unless the
// invocation crashed, lost its answer or outlived its deadline.
func (w *World) consume(q *Queue, proc *fifo.Processor, kind string, timeout time.Duration) bool {
	batch := q.Receive(w.rng, 1+w.rng.IntN(10))
	if len(batch) == 0 {
		return false
	}
	ctx, inv, cancel := w.invoke(kind, timeout)
	var ids []string
	for _, m := range batch {
		ids = append(ids, m.MessageId+"#"+m.Attributes["ApproximateReceiveCount"])
	}
	w.logf("%s %s receives %v", kind, inv.id, ids)
	w.spawn(inv, func() {
		defer cancel()
		w.answer(q, inv, batch, ctx, proc)
	})
	return true
}

// answer runs the batch and gives the queue the invocation's answer.
func (w *World) answer(q *Queue, inv *invocation, batch []events.SQSMessage, ctx context.Context, proc *fifo.Processor) {
	kind := inv.kind
	resp, err := proc.Process(ctx, events.SQSEvent{Records: batch})
	if err != nil {
		w.violate("%s refused its batch: %v", kind, err)
		return
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	answered := !inv.dead && !inv.dropAnswer
	if w.clock.Now().After(inv.deadline) {
		// Lambda timed the invocation out: the whole batch comes back.
		answered = false
		w.stats.TimedOut++
	}
	if !answered && !inv.dead {
		w.stats.DroppedAnswers++
	}
	w.logf("%s %s ends: failed %v, answered %v", kind, inv.id, resp.BatchItemFailures, answered)
	q.Settle(batch, failed, answered)
}

// processor is a consumer of the world: its handlers run one at a time,
// on the world's clock, under q with threshold, counted by outcomes.
func (w *World) processor(h fifo.Handler, q fifo.Quarantine, threshold int) (*fifo.Processor, error) {
	return fifo.New(fifo.Config{Handler: h, Quarantine: q, QuarantineThreshold: threshold, Concurrency: 1, Now: w.clock.Now, Metrics: w.outcomes})
}

// outcomes is the processors' metrics hook.
func (w *World) outcomes(m fifo.BatchMetrics) {
	w.stats.Parked += m.Count(fifo.Parked)
	w.stats.Dropped += m.Count(fifo.Dropped)
	w.stats.SkippedDeadline += m.Count(fifo.SkippedDeadline)
}

// blind is a quarantine whose check sees no hold (BreakQuarantineCheck).
type blind struct{ fifo.Quarantine }

func (b blind) Check(ctx context.Context, msgs []*events.SQSMessage) (fifo.QuarantineView, error) {
	v, err := b.Quarantine.Check(ctx, msgs)
	v.Holds = nil
	return v, err
}

// presigner signs nothing: it records the keys intake asked for.
type presigner struct{ w *World }

func (p presigner) PresignGet(_ context.Context, r jobs.Result, ttl time.Duration) (string, error) {
	p.w.presigned = append(p.w.presigned, r.Key)
	return "https://" + bucket + ".s3.eu-west-1.amazonaws.com/" + r.Key + "?X-Amz-Expires=" + fmt.Sprint(int(ttl.Seconds())), nil
}
