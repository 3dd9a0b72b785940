package sweeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Jobs is the part of the job store the sweeper calls; *jobs.DynamoStore
// and *jobs.MemoryStore have it.
type Jobs interface {
	jobs.Lister
	jobs.FinishedLister
	jobs.BatchGetter
	Nudge(ctx context.Context, req jobs.NudgeRequest) (jobs.Job, error)
}

var (
	_ Jobs = (*jobs.DynamoStore)(nil)
	_ Jobs = (*jobs.MemoryStore)(nil)
)

// Candidates is the part of the candidate store the sweeper calls;
// *candidate.Store has it.
type Candidates interface {
	ListPage(ctx context.Context, startAfter string, limit int) (candidate.Page, error)
	Delete(ctx context.Context, key candidate.Key) error
}

var _ Candidates = (*candidate.Store)(nil)

// Projection is the part of the projection store the sweeper calls to
// repair final jobs' projections; every projection.Store has it.
type Projection = projection.Repairer

var (
	_ Projection = (*projection.DynamoStore)(nil)
	_ Projection = (*projection.MemoryStore)(nil)
)

// Quarantine is the part of the quarantine's store the sweeper reads:
// the holds of the stuck jobs' commands groups, read together (Read, one
// BatchGetItem per 100 groups on DynamoDB), and every group a queue holds
// (Holds), for the held-groups gauge. Every quarantine.Store has it.
type Quarantine interface {
	Read(ctx context.Context, queue string, groups []string, keys []quarantine.ItemKey) (map[string]quarantine.HoldRecord, map[quarantine.ItemKey]quarantine.Parked, error)
	Holds(ctx context.Context, queue string) ([]quarantine.HoldRecord, error)
}

var (
	_ Quarantine = (*quarantine.DynamoStore)(nil)
	_ Quarantine = (*quarantine.MemoryStore)(nil)
)

// Purger deletes a store's expired rows where no TTL does (PostgreSQL):
// at most limit rows whose expiry is strictly before now, returning how
// many it deleted.
type Purger interface {
	PurgeExpired(ctx context.Context, now time.Time, limit int) (int, error)
}

var (
	_ Purger = (*jobs.PostgresStore)(nil)
	_ Purger = (*quarantine.PostgresStore)(nil)
)

// Defaults and bounds of Config.
const (
	DefaultGrace       = time.Hour
	DefaultStuckAfter  = 15 * time.Minute
	DefaultRepairAfter = 15 * time.Minute
	// DefaultRecheckAfter is when a final job is checked the second time
	// (see the package documentation, Repair): the longest the finished
	// index may take to show a job and the job still be checked.
	DefaultRecheckAfter = 24 * time.Hour
	DefaultMaxItems     = 1000
	// DefaultPurgeLimit bounds the rows a run purges (Config.PurgeLimit).
	DefaultPurgeLimit = 1000
	// MaxItemsLimit bounds MaxItems: every object examined may cost a
	// DeleteObject, and a run must end within its function's timeout.
	MaxItemsLimit = 100_000
	// DeadlineReserve is the time a run keeps before its context's
	// deadline to save the cursor and report: it starts no delete or nudge
	// with less left.
	DeadlineReserve = 5 * time.Second
)

// Config configures a Sweeper. The zero value of each optional field means
// its default.
type Config struct {
	Jobs       Jobs       // required
	Candidates Candidates // required
	// Cursor keeps where the last run stopped; nil means a MemoryCursor of
	// the Sweeper's own (every Sweeper begins at the start of the bucket).
	Cursor Cursor
	// Now is the clock rules are judged by; nil means time.Now.
	Now func() time.Time
	// Grace is how old a deletable candidate must be before it is deleted
	// (default DefaultGrace).
	Grace time.Duration
	// StuckAfter is how long a pending job, or a running one on an ended
	// lease, must have been unchanged to be nudged (default
	// DefaultStuckAfter).
	StuckAfter time.Duration
	// Projection is the job views and tenant totals the projector writes
	// (a projection.Store). With it, each run checks the final jobs that
	// ended since the last one checked and repairs those whose projection
	// is not their job item's; nil leaves projections alone (a deployment
	// without the projector).
	Projection Projection
	// RepairCursor keeps how far the repair has checked final jobs (the
	// jobs.FinishedKey of the last one); nil means a MemoryCursor of the
	// Sweeper's own (every Sweeper begins at the first final job).
	RepairCursor Cursor
	// RepairAfter is how long after its final transition a job's
	// projection is checked (default DefaultRepairAfter): the time the
	// relay and the projector have to deliver the final event themselves.
	// It should be well beyond the finished index's propagation delay: a
	// job the index shows later than that is passed by the cursor, and
	// only the recheck finds it.
	RepairAfter time.Duration
	// RecheckCursor keeps how far the recheck has checked final jobs, as
	// RepairCursor does for the first check; nil means a MemoryCursor of
	// the Sweeper's own.
	RecheckCursor Cursor
	// RecheckAfter is how long after its final transition a job's
	// projection is checked the second time: the bound on how late the
	// finished index may show a job and the job still be checked. Zero
	// means DefaultRecheckAfter, or twice RepairAfter if that is longer;
	// any other value must exceed RepairAfter.
	RecheckAfter time.Duration
	// RepairBudget is how long a run may keep checking final jobs beyond
	// the first MaxItems of each check: while a listing comes back full,
	// the run lists the next MaxItems, until RepairBudget has passed since
	// its repair began (by Now). Zero, the default, is one listing per
	// check and run. The context's deadline bounds the run either way.
	RepairBudget time.Duration
	// Quarantine is the quarantine's store of holds. With it, a stuck job
	// whose group in CommandsQueue (the job id) is held or draining is not
	// nudged: its nudge's command would only be parked behind the held
	// one, and a job.requeued event published with it, once more every
	// StuckAfter; it is counted in Report.Held instead. And each run
	// reports how many groups of CommandsQueue and EventsQueue are held
	// (quarantine.MetricHeldGroups, with a FunctionName). Nil: no holds
	// are read, every stuck job is nudged, no gauge.
	Quarantine Quarantine
	// CommandsQueue and EventsQueue are the queues' names (the last part
	// of their ARNs), the quarantine's names for them; CommandsQueue is
	// required with a Quarantine, EventsQueue optional.
	CommandsQueue string
	EventsQueue   string
	// FunctionName is the value of the FunctionName dimension of the
	// run's metrics (MetricRepairLag and MetricRecheckLag, embedded metric
	// format records through Logger); lambdawire passes the function's
	// name. Empty means no metrics.
	FunctionName string
	// Purgers are the stores without a TTL (PostgreSQL's jobs and
	// quarantine) whose expired rows each run deletes, in order, at most
	// PurgeLimit rows in all: the part of DynamoDB's TTL such a store
	// lacks. Rows left over are the next run's. Nil: nothing is purged.
	Purgers []Purger
	// PurgeLimit bounds the rows a run purges (default DefaultPurgeLimit,
	// at most MaxItemsLimit): each purge is one statement, and a run must
	// end within its function's timeout.
	PurgeLimit int
	// MaxItems bounds a run: at most this many objects listed, at most
	// this many stuck jobs read and at most this many final jobs checked
	// by each check per listing (see RepairBudget) (default
	// DefaultMaxItems, at most MaxItemsLimit).
	MaxItems int
	// LastRun keeps each run's report (as a LastRun), where the
	// operator's console reads it (S3LastRun); nil keeps it nowhere. A dry
	// run keeps none, since it writes nothing: the last real run's stays.
	// A run with failed requests keeps its report, whose Errors count them,
	// so that the console shows the last run failed rather than an older
	// one that did not; a report that cannot be kept fails the run.
	LastRun LastRunSaver
	// Logger receives one record per deletion, nudge, repair, unparsable
	// key and error, and the report; nil discards them.
	Logger *slog.Logger
}

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("sweeper: invalid configuration")

// Validate reports the first setting that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Jobs == nil:
		return fmt.Errorf("%w: Jobs is nil", ErrInvalidConfig)
	case c.Candidates == nil:
		return fmt.Errorf("%w: Candidates is nil", ErrInvalidConfig)
	case c.Grace < 0:
		return fmt.Errorf("%w: Grace %v is negative", ErrInvalidConfig, c.Grace)
	case c.StuckAfter < 0:
		return fmt.Errorf("%w: StuckAfter %v is negative", ErrInvalidConfig, c.StuckAfter)
	case c.RepairAfter < 0:
		return fmt.Errorf("%w: RepairAfter %v is negative", ErrInvalidConfig, c.RepairAfter)
	case c.RecheckAfter < 0:
		return fmt.Errorf("%w: RecheckAfter %v is negative", ErrInvalidConfig, c.RecheckAfter)
	case c.RecheckAfter > 0 && c.RecheckAfter <= cmp.Or(c.RepairAfter, DefaultRepairAfter):
		return fmt.Errorf("%w: RecheckAfter %v is not beyond RepairAfter %v", ErrInvalidConfig, c.RecheckAfter, cmp.Or(c.RepairAfter, DefaultRepairAfter))
	case c.RepairBudget < 0:
		return fmt.Errorf("%w: RepairBudget %v is negative", ErrInvalidConfig, c.RepairBudget)
	case c.Quarantine != nil && c.CommandsQueue == "":
		return fmt.Errorf("%w: CommandsQueue is empty, and Quarantine is set", ErrInvalidConfig)
	case c.PurgeLimit < 0 || c.PurgeLimit > MaxItemsLimit:
		return fmt.Errorf("%w: PurgeLimit %d is outside 0..%d", ErrInvalidConfig, c.PurgeLimit, MaxItemsLimit)
	case c.MaxItems < 0 || c.MaxItems > MaxItemsLimit:
		return fmt.Errorf("%w: MaxItems %d is outside 0..%d", ErrInvalidConfig, c.MaxItems, MaxItemsLimit)
	}
	return nil
}

// Sweeper deletes orphan candidates, nudges stuck jobs and repairs the
// projections of final jobs. Runs of one Sweeper must not overlap; runs of
// different ones (two invocations) may, harmlessly: deletes and nudges are
// idempotent and fenced, and a repair is conditioned on the cursor it read.
type Sweeper struct {
	jobs          Jobs
	candidates    Candidates
	cursor        Cursor
	projection    Projection
	repairCursor  Cursor
	recheckCursor Cursor
	clock         func() time.Time
	grace         time.Duration
	stuckAfter    time.Duration
	repairAfter   time.Duration
	recheckAfter  time.Duration
	repairBudget  time.Duration
	quarantine    Quarantine
	queues        [2]string // commands, events
	maxItems      int
	purgers       []Purger
	purgeLimit    int
	function      string
	lastRun       LastRunSaver
	log           *slog.Logger
}

// New returns a Sweeper, or the error Validate reports (wrapping
// ErrInvalidConfig).
func New(cfg Config) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sweeper{
		jobs: cfg.Jobs, candidates: cfg.Candidates, cursor: cfg.Cursor, clock: cfg.Now,
		projection: cfg.Projection, repairCursor: cfg.RepairCursor, recheckCursor: cfg.RecheckCursor,
		grace: cfg.Grace, stuckAfter: cfg.StuckAfter, repairAfter: cfg.RepairAfter, recheckAfter: cfg.RecheckAfter,
		repairBudget: cfg.RepairBudget, maxItems: cfg.MaxItems, function: cfg.FunctionName, log: cfg.Logger,
		quarantine: cfg.Quarantine, queues: [2]string{cfg.CommandsQueue, cfg.EventsQueue},
		purgers: cfg.Purgers, purgeLimit: cmp.Or(cfg.PurgeLimit, DefaultPurgeLimit), lastRun: cfg.LastRun,
	}
	if s.cursor == nil {
		s.cursor = &MemoryCursor{}
	}
	if s.repairCursor == nil {
		s.repairCursor = &MemoryCursor{}
	}
	if s.recheckCursor == nil {
		s.recheckCursor = &MemoryCursor{}
	}
	if s.repairAfter == 0 {
		s.repairAfter = DefaultRepairAfter
	}
	if s.recheckAfter == 0 {
		s.recheckAfter = max(DefaultRecheckAfter, 2*s.repairAfter)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.grace == 0 {
		s.grace = DefaultGrace
	}
	if s.stuckAfter == 0 {
		s.stuckAfter = DefaultStuckAfter
	}
	if s.maxItems == 0 {
		s.maxItems = DefaultMaxItems
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Options are a run's; the schedule's constant input.
type Options struct {
	// DryRun decides and reports everything and writes nothing.
	DryRun bool `json:"dry_run"`
}

// Report is what a run did (or, in a dry run, would have done). Its JSON
// field names are stable: dashboards and alarms read them.
type Report struct {
	// Examined counts the objects listed under candidates/.
	Examined int `json:"examined"`
	// Deleted counts the candidates deleted; WouldDelete those a dry run
	// would have deleted.
	Deleted     int `json:"deleted"`
	WouldDelete int `json:"would_delete"`
	// KeptCurrent counts candidates of a live job's current generation.
	KeptCurrent int `json:"kept_current"`
	// KeptResult counts accepted results of final jobs.
	KeptResult int `json:"kept_result"`
	// KeptGrace counts deletable candidates younger than Grace.
	KeptGrace int `json:"kept_grace"`
	// Unparsable counts objects under candidates/ that are not candidates.
	Unparsable int `json:"unparsable"`
	// Stuck counts the live jobs the index listed as unchanged since the
	// cutoff.
	Stuck int `json:"stuck"`
	// Nudged counts stuck jobs nudged; WouldNudge those a dry run would
	// have nudged.
	Nudged     int `json:"nudged"`
	WouldNudge int `json:"would_nudge"`
	// Held counts stuck jobs not nudged because their commands group is
	// held or draining in the quarantine (Config.Quarantine): an operator's
	// redrive is what moves them.
	Held int `json:"held"`
	// NudgeRefused counts nudges the store refused because the job moved
	// on (another worker, another sweeper): expected, harmless.
	NudgeRefused int `json:"nudge_refused"`
	// Finished counts the final jobs the finished index listed after the
	// repair cursor, each checked against its projection.
	Finished int `json:"finished"`
	// Rechecked counts the final jobs the finished index listed after the
	// recheck cursor, each checked a second time.
	Rechecked int `json:"rechecked"`
	// Repaired counts final jobs whose view or totals were not their job
	// item's (behind it, ahead of it, or different at its version) and
	// were recovered from it; WouldRepair those a dry run would have
	// recovered.
	Repaired    int `json:"repaired"`
	WouldRepair int `json:"would_repair"`
	// Diverged counts, of Repaired (of WouldRepair in a dry run), the jobs
	// whose projection was ahead of their job item or different at its
	// version (projection.Lag.Diverged), which no lost event leaves: moved
	// by events that were not the job's (forged, or left from a job whose
	// id was reused after its item expired). Each is logged at ERROR.
	Diverged int `json:"diverged"`
	// RepairedOnRecheck counts, of Repaired (of WouldRepair in a dry
	// run), the jobs the recheck found out of step: a job the finished
	// index showed only after the repair cursor had passed it, or one that
	// events which were not the job's reached after the first check.
	RepairedOnRecheck int `json:"repaired_on_recheck"`
	// RepairCursor is where the next run's check of final jobs starts (""
	// the first): saved, unless this was a dry run. RecheckCursor is the
	// recheck's.
	RepairCursor  string `json:"repair_cursor"`
	RecheckCursor string `json:"recheck_cursor"`
	// RepairLagSeconds is how far RepairCursor is behind the time it would
	// reach if the check kept up (now - RepairAfter), in whole seconds:
	// zero when the run checked every job up to it. RecheckLagSeconds is
	// RecheckCursor's, behind now - RecheckAfter. Both are zero when the
	// cursor could not be read.
	RepairLagSeconds  int64 `json:"repair_lag_seconds"`
	RecheckLagSeconds int64 `json:"recheck_lag_seconds"`
	// Undecodable counts job items read that do not decode as jobs
	// (jobs.UndecodableError): each is logged and left alone, as if it
	// did not exist, except that its candidates are never deleted.
	Undecodable int `json:"undecodable"`
	// Purged counts the expired rows deleted by Config.Purgers (none in a
	// dry run).
	Purged int `json:"purged"`
	// Errors counts failed requests; a run with errors returns an error.
	Errors int `json:"errors"`
	// Cursor is where the next run starts ("" the beginning): saved,
	// unless this was a dry run.
	Cursor string `json:"cursor"`
	// Wrapped is true when this run reached the end of the bucket.
	Wrapped bool `json:"wrapped"`
	// OutOfTime is true when the context's deadline stopped the run early.
	OutOfTime bool  `json:"out_of_time"`
	DryRun    bool  `json:"dry_run"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// maxReportedErrors bounds the errors a run's error joins.
const maxReportedErrors = 5

// run is the state of one run.
type run struct {
	*Sweeper
	ctx  context.Context
	now  time.Time
	dry  bool
	r    Report
	errs []error
	// repairStart is when the repair began, by the Sweeper's clock: where
	// RepairBudget is counted from.
	repairStart time.Time
	// lags holds the lag metrics known after the repair, by name.
	lags map[string]int64
	// unmeasured counts the held-groups counts that failed.
	unmeasured int
}

func (r *run) fail(err error, msg string, attrs ...any) {
	r.r.Errors++
	if len(r.errs) < maxReportedErrors {
		r.errs = append(r.errs, err)
	}
	r.log.ErrorContext(r.ctx, msg, append(attrs, "error", err)...)
}

// outOfTime reports whether too little time is left to start more work.
func (r *run) outOfTime() bool {
	if r.ctx.Err() != nil {
		r.r.OutOfTime = true
		return true
	}
	if d, ok := r.ctx.Deadline(); ok && time.Until(d) < DeadlineReserve {
		r.r.OutOfTime = true
		return true
	}
	return false
}

// Run nudges the stuck jobs, repairs the projections of the next MaxItems
// final jobs from the repair cursor (with a Projection), then sweeps the
// next MaxItems objects of the candidates bucket from the cursor. It
// returns the report, and an error when any request failed (the report
// says how many).
func (s *Sweeper) Run(ctx context.Context, opts Options) (Report, error) {
	start := time.Now()
	r := &run{Sweeper: s, ctx: ctx, now: s.clock(), dry: opts.DryRun}
	r.r.DryRun = opts.DryRun
	r.nudgeStuck()
	r.repairFinished()
	r.sweepCandidates()
	r.purgeExpired()
	r.countHeld()
	r.logMetrics()
	r.r.ElapsedMS = time.Since(start).Milliseconds()
	r.keepReport()
	s.log.InfoContext(ctx, "sweep", "report", r.r)
	if r.r.Errors > 0 {
		return r.r, fmt.Errorf("sweeper: %d requests failed: %w", r.r.Errors, errors.Join(r.errs...))
	}
	return r.r, nil
}

// keepReport saves the run's report with Config.LastRun, unless this is a
// dry run; a failed save is one more error of the run.
func (r *run) keepReport() {
	if r.lastRun == nil || r.dry {
		return
	}
	if err := r.lastRun.Save(r.ctx, LastRun{At: r.clock(), Report: r.r}); err != nil {
		r.fail(err, "sweep: keep the last run's report")
	}
}

// purgeExpired deletes the Purgers' expired rows, at most purgeLimit in
// all; a dry run deletes nothing.
func (r *run) purgeExpired() {
	for _, p := range r.purgers {
		left := r.purgeLimit - r.r.Purged
		if r.dry || left <= 0 || r.outOfTime() {
			return
		}
		n, err := p.PurgeExpired(r.ctx, r.now, left)
		if err != nil {
			r.fail(err, "sweep: purge expired rows")
			continue
		}
		r.r.Purged += n
	}
}

// nudgeStuck nudges the live jobs unchanged since now - StuckAfter.
func (r *run) nudgeStuck() {
	if r.outOfTime() {
		return
	}
	cutoff := r.now.Add(-r.stuckAfter)
	ids, err := r.jobs.Live(r.ctx, cutoff, r.maxItems)
	if err != nil {
		r.fail(err, "sweep: list stuck jobs")
		return
	}
	r.r.Stuck = len(ids)
	found, _, ok := r.getMany(ids, "sweep: read stuck jobs")
	if !ok {
		return
	}
	type due struct {
		job    jobs.Job
		reason string
	}
	var dues []due
	for _, id := range ids {
		j, ok := found[id]
		if !ok {
			continue // gone since the index was read, or undecodable
		}
		if reason, ok := stuck(&j, r.now, cutoff); ok {
			dues = append(dues, due{j, reason})
		} // else moved since the index was read, or a live lease
	}
	held, ok := r.heldCommands(len(dues), func(i int) string { return dues[i].job.ID })
	if !ok {
		return
	}
	for _, n := range dues {
		if r.outOfTime() {
			return
		}
		r.nudge(&n.job, n.reason, held)
	}
}

// nudge nudges j, stuck for reason, unless its commands group is held.
func (r *run) nudge(j *jobs.Job, reason string, held map[string]quarantine.HoldRecord) {
	attrs := []any{"job_id", j.ID, "generation", j.Generation, "version", j.Version, "status", j.Status, "reason", reason}
	if h, ok := held[j.ID]; ok {
		r.r.Held++
		r.log.InfoContext(r.ctx, "sweep: not nudged: its commands group is held", append(attrs, "hold", h.State, "cause", h.Cause)...)
		return
	}
	if r.dry {
		r.r.WouldNudge++
		r.log.InfoContext(r.ctx, "sweep: would nudge", attrs...)
		return
	}
	_, err := r.jobs.Nudge(r.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: j.Generation, Version: j.Version, Reason: reason})
	switch {
	case err == nil:
		r.r.Nudged++
		r.log.InfoContext(r.ctx, "sweep: nudged", attrs...)
	case errors.Is(err, jobs.ErrStaleGeneration), errors.Is(err, jobs.ErrFinal),
		errors.Is(err, jobs.ErrLeaseHeld), errors.Is(err, jobs.ErrNotFound):
		r.r.NudgeRefused++
		r.log.InfoContext(r.ctx, "sweep: nudge refused: the job moved on", append(attrs, "error", err)...)
	default:
		r.fail(err, "sweep: nudge", attrs...)
	}
}

// heldCommands reads, in one Read, the holds of the n commands groups
// group(i) names, and returns those held or draining. Without a
// Quarantine nothing is held. ok is false when the read failed: then no
// job may be nudged, since any of them may be held.
func (r *run) heldCommands(n int, group func(int) string) (map[string]quarantine.HoldRecord, bool) {
	if r.quarantine == nil || n == 0 {
		return nil, true
	}
	groups := make([]string, n)
	for i := range groups {
		groups[i] = group(i)
	}
	holds, _, err := r.quarantine.Read(r.ctx, r.queues[0], groups, nil)
	if err != nil {
		r.fail(err, "sweep: read the stuck jobs' holds", "queue", r.queues[0], "jobs", n)
		return nil, false
	}
	maps.DeleteFunc(holds, func(_ string, h quarantine.HoldRecord) bool { return h.State == quarantine.StateReleased })
	return holds, true
}

// getMany reads the jobs of ids, none without a request. An item that does
// not decode as a job is logged, counted (Report.Undecodable) and left out
// of found, as a job that does not exist is; undecodable names those, for
// a caller that must tell the two apart. ok is false when the read failed,
// which msg logs.
func (r *run) getMany(ids []string, msg string) (found map[string]jobs.Job, undecodable map[string]error, ok bool) {
	if len(ids) == 0 {
		return nil, nil, true
	}
	found, err := r.jobs.GetMany(r.ctx, ids)
	var bad *jobs.UndecodableError
	switch {
	case errors.As(err, &bad) && found != nil:
		for _, id := range slices.Sorted(maps.Keys(bad.Items)) {
			r.r.Undecodable++
			r.log.ErrorContext(r.ctx, "sweep: a job item does not decode as a job; left alone", "job_id", id,
				"while", msg, "error", bad.Items[id])
		}
		return found, bad.Items, true
	case err != nil:
		r.fail(err, msg, "jobs", len(ids))
		return nil, nil, false
	}
	return found, nil, true
}

// stuck says whether the sweeper nudges j, and why: pending, or running on
// a lease that ended strictly before now, and unchanged since before the
// cutoff (compared at the stored precision, as the index compares).
func stuck(j *jobs.Job, now, cutoff time.Time) (string, bool) {
	if j.UpdatedAt.UnixMilli() >= cutoff.UnixMilli() {
		return "", false
	}
	since := j.UpdatedAt.UTC().Format(time.RFC3339)
	switch {
	case j.Status == jobs.StatusPending:
		return "sweeper: pending, unchanged since " + since, true
	case j.Status == jobs.StatusRunning && j.LeaseExpiresAt.UnixMilli() < now.UnixMilli():
		return fmt.Sprintf("sweeper: running g%d on a lease that ended %s, unchanged since %s",
			j.Generation, j.LeaseExpiresAt.UTC().Format(time.RFC3339), since), true
	}
	return "", false
}

// sweepCandidates examines the next objects after the cursor.
func (r *run) sweepCandidates() {
	if r.outOfTime() {
		return
	}
	from, err := r.cursor.Load(r.ctx)
	if err != nil {
		r.fail(err, "sweep: load cursor")
		return
	}
	if from != "" && !strings.HasPrefix(from, candidate.Prefix) {
		r.log.WarnContext(r.ctx, "sweep: the cursor is not under "+candidate.Prefix+"; starting at the beginning", "cursor", from)
		from = ""
	}
	entries, last, end, ok := r.list(from)
	if !ok && len(entries) == 0 && last == "" {
		r.r.Cursor = from
		return
	}
	// Where the next run starts: after the last key decided about, or at
	// the beginning once the end was reached.
	next := from
	switch decided, all := r.decide(entries); {
	case all && end:
		next, r.r.Wrapped = "", true
	case all:
		next = last
	case decided != "":
		next = decided
	}
	r.r.Cursor = next
	if r.dry || next == from {
		return
	}
	if err := r.cursor.Save(r.ctx, next); err != nil {
		r.fail(err, "sweep: save cursor", "cursor", next)
	}
}

// list lists up to MaxItems objects after from. It returns the candidates,
// the last key examined ("" if none), whether the listing reached the end,
// and false if a request failed (what was listed before is returned).
func (r *run) list(from string) (entries []candidate.Entry, last string, end, ok bool) {
	after := from
	for r.r.Examined < r.maxItems {
		page, err := r.candidates.ListPage(r.ctx, after, r.maxItems-r.r.Examined)
		if err != nil {
			r.fail(err, "sweep: list candidates", "cursor", after)
			return entries, last, false, false
		}
		r.r.Examined += len(page.Entries) + len(page.Unparsable)
		for _, u := range page.Unparsable {
			r.r.Unparsable++
			r.log.WarnContext(r.ctx, "sweep: not a candidate key; left alone", "key", u.Key, "size", u.Size, "error", u.Err)
		}
		entries = append(entries, page.Entries...)
		if k := lastKey(page); k > last {
			last = k
		}
		if page.Next == "" {
			return entries, last, true, true
		}
		after = page.Next
	}
	return entries, last, false, true
}

func lastKey(p candidate.Page) string {
	var k string
	if n := len(p.Entries); n > 0 {
		k = p.Entries[n-1].Key.String()
	}
	if n := len(p.Unparsable); n > 0 && p.Unparsable[n-1].Key > k {
		k = p.Unparsable[n-1].Key
	}
	return k
}

// decide reads the jobs of entries, once each, and acts on every entry in
// key order. It returns the last key decided about and whether it decided
// about all.
func (r *run) decide(entries []candidate.Entry) (string, bool) {
	if len(entries) == 0 {
		return "", true
	}
	ids := make([]string, 0, len(entries))
	for i, e := range entries {
		if i == 0 || e.Key.JobID != entries[i-1].Key.JobID {
			ids = append(ids, e.Key.JobID)
		}
	}
	found, undecodable, ok := r.getMany(ids, "sweep: read the candidates' jobs")
	if !ok {
		return "", false
	}
	decided := ""
	for _, e := range entries {
		if r.outOfTime() {
			return decided, false
		}
		if _, bad := undecodable[e.Key.JobID]; bad {
			// Its job exists but cannot be read: no rule applies, so the
			// candidate stays, and the next round of the bucket looks again.
			decided = e.Key.String()
			continue
		}
		j, ok := found[e.Key.JobID]
		var job *jobs.Job
		if ok {
			job = &j
		}
		r.act(e, judge(&e, job, r.now, r.grace))
		decided = e.Key.String()
	}
	return decided, true
}

// verdict is what a rule says about a candidate.
type verdict struct {
	action action
	why    string // for a deletion: the rule that allows it
}

type action int

const (
	keepCurrent action = iota // a live job's current (or a later) generation
	keepResult                // a final job's accepted result
	keepGrace                 // deletable, but younger than Grace
	remove                    // deletable and older than Grace
)

// judge applies the deletion rules (see the package documentation) to a
// candidate whose job is j (nil when the job does not exist) at now.
func judge(e *candidate.Entry, j *jobs.Job, now time.Time, grace time.Duration) verdict {
	var why string
	switch {
	case j == nil:
		why = "its job no longer exists"
	case j.Status.Final() && j.Result.Key == e.Key.String():
		return verdict{action: keepResult}
	case j.Status.Final():
		why = fmt.Sprintf("its job is %s and this is not its result", j.Status)
	case e.Key.Generation < j.Generation:
		why = fmt.Sprintf("generation %d is below the job's generation %d", e.Key.Generation, j.Generation)
	default:
		return verdict{action: keepCurrent}
	}
	if now.Sub(e.LastModified) <= grace {
		return verdict{action: keepGrace, why: why}
	}
	return verdict{action: remove, why: why}
}

func (r *run) act(e candidate.Entry, v verdict) {
	switch v.action {
	case keepCurrent:
		r.r.KeptCurrent++
		return
	case keepResult:
		r.r.KeptResult++
		return
	case keepGrace:
		r.r.KeptGrace++
		return
	}
	attrs := []any{"job_id", e.Key.JobID, "generation", e.Key.Generation, "attempt_id", e.Key.AttemptID,
		"key", e.Key.String(), "size", e.Size, "last_modified", e.LastModified, "reason", v.why}
	if r.dry {
		r.r.WouldDelete++
		r.log.InfoContext(r.ctx, "sweep: would delete", attrs...)
		return
	}
	if err := r.candidates.Delete(r.ctx, e.Key); err != nil {
		r.fail(err, "sweep: delete", attrs...)
		return
	}
	r.r.Deleted++
	r.log.InfoContext(r.ctx, "sweep: deleted", attrs...)
}

// LastRun is the report of the sweeper's last run, as the sweeper keeps it
// beside its cursors, for the operator's console. A dry run keeps none, so
// a LastRun is always of a run that changed what it reports.
type LastRun struct {
	At     time.Time `json:"at"` // when the run ended
	Report Report    `json:"report"`
}

// ErrNoLastRun: no run has kept its report yet.
var ErrNoLastRun = errors.New("sweeper: no run has kept its report yet")
