package pgsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// ErrInvalidConfig is outbox.ErrInvalidConfig: every relay's constructor
// refuses a configuration with the same error.
var ErrInvalidConfig = outbox.ErrInvalidConfig

// ErrNotHeld is wrapped by the error of a pass whose delete found fewer
// rows than it published: something else deleted a job's rows while this
// relay held the job's lock, which only a relay that does not take the
// lock can do. The pass rolls back, so its rows are published again (the
// outbox ids tell the copies); nothing is lost.
var ErrNotHeld = errors.New("pgsource: published rows were deleted by another: a relay without the per-job lock is running")

// Defaults and limits of Config.
const (
	DefaultJobs       = 100
	DefaultRowsPerJob = 10
	DefaultMaxRows    = 10_000
	DefaultMargin     = 5 * time.Second
	MaxJobs           = 1_000
	MaxRowsPerJob     = 1_000
)

// Config configures a Relay.
type Config struct {
	// DB is the database whose job_outbox table (pkg/jobs' PostgreSQL
	// store writes it) the relay publishes. Required. The relay opens one
	// transaction at a time on it.
	DB *sql.DB
	// Sink publishes the messages: sqsout's or kafkaout's. Required.
	Sink outbox.Sink
	// Jobs is how many jobs one pass locks and publishes together, so a
	// round of the sink carries up to Jobs messages. Default (0): 100; at
	// most 1,000.
	Jobs int
	// RowsPerJob is how many of a job's rows one pass reads (and so how
	// many rounds a pass has at most). A job with more keeps its lock for
	// the next pass's read only if no other relay takes it first, which
	// changes nothing: the next holder reads from the first row left.
	// Default (0): 10; at most 1,000.
	RowsPerJob int
	// MaxRows is how many rows one Drain publishes at most: it stops there
	// even if more wait (the next trigger goes on). Default (0): 10,000.
	MaxRows int
	// Margin is the time Drain leaves before its context's deadline (the
	// Lambda invocation's): it starts no pass later than the deadline minus
	// Margin, so a pass ends, deletes what it published and commits before
	// Lambda stops the function. A pass cut by the deadline rolls back and
	// its rows are published again by the next run. Default (0): 5 s.
	Margin time.Duration
	// Now is the clock. Default (nil): time.Now.
	Now func() time.Time
	// Logger logs what could not be published and each Drain's outcome.
	// Default (nil): nothing is logged.
	Logger *slog.Logger
	// FunctionName is the value of the FunctionName dimension of the
	// metrics each Drain writes through Logger (MetricsNamespace: the age
	// of the oldest row left and the rows published); the wiring passes
	// the function's name. Default (""): no metrics.
	FunctionName string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.DB == nil:
		return fmt.Errorf("%w: DB is nil", ErrInvalidConfig)
	case c.Sink == nil:
		return fmt.Errorf("%w: Sink is nil", ErrInvalidConfig)
	case c.Jobs < 0 || c.Jobs > MaxJobs:
		return fmt.Errorf("%w: Jobs %d is not within 0 (default %d) and %d", ErrInvalidConfig, c.Jobs, DefaultJobs, MaxJobs)
	case c.RowsPerJob < 0 || c.RowsPerJob > MaxRowsPerJob:
		return fmt.Errorf("%w: RowsPerJob %d is not within 0 (default %d) and %d", ErrInvalidConfig, c.RowsPerJob, DefaultRowsPerJob, MaxRowsPerJob)
	case c.MaxRows < 0:
		return fmt.Errorf("%w: MaxRows %d is negative", ErrInvalidConfig, c.MaxRows)
	case c.Margin < 0:
		return fmt.Errorf("%w: Margin %v is negative", ErrInvalidConfig, c.Margin)
	}
	return nil
}

// Relay publishes the job_outbox table, per job in version order, under a
// per-job lock.
type Relay struct {
	db         *sql.DB
	sink       outbox.Sink
	jobs       int
	rowsPerJob int
	maxRows    int
	margin     time.Duration
	now        func() time.Time
	log        *slog.Logger
	function   string
}

// New returns a relay, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Relay{db: cfg.DB, sink: cfg.Sink, jobs: cfg.Jobs, rowsPerJob: cfg.RowsPerJob, maxRows: cfg.MaxRows,
		margin: cfg.Margin, now: cfg.Now, log: cfg.Logger, function: cfg.FunctionName}
	if r.jobs == 0 {
		r.jobs = DefaultJobs
	}
	if r.rowsPerJob == 0 {
		r.rowsPerJob = DefaultRowsPerJob
	}
	if r.maxRows == 0 {
		r.maxRows = DefaultMaxRows
	}
	if r.margin == 0 {
		r.margin = DefaultMargin
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Stop says why a Drain stopped.
type Stop string

// The reasons a Drain stops.
const (
	// StopEmpty: a pass found no job to publish that it could lock. Rows
	// may remain: those of jobs another relay holds (it publishes them and
	// drains on), and those of jobs whose publication failed in this run
	// (the next trigger retries them).
	StopEmpty Stop = "empty"
	// StopDeadline: the context's deadline minus Margin was reached.
	StopDeadline Stop = "deadline"
	// StopBound: MaxRows rows were published.
	StopBound Stop = "bound"
)

// Report is what one Drain did.
type Report struct {
	Rows     int  `json:"rows"`     // rows published and deleted
	Messages int  `json:"messages"` // messages the sink acknowledged (a nudge's row is two: its command and its event)
	Passes   int  `json:"passes"`   // transactions that locked at least one job
	Held     int  `json:"held"`     // times a job was skipped because another relay held it
	Failed   int  `json:"failed"`   // jobs stopped in this run by a failed message or an undecodable row; their rows wait
	Stop     Stop `json:"stop"`
}

// Drain publishes the outbox in passes until a pass finds nothing it may
// publish, MaxRows rows were published, or ctx's deadline minus Margin is
// reached. A job whose publication fails is left out of the rest of the
// run, so that one job's trouble neither stops the others nor keeps the
// run busy; so is a job a pass locked but published nothing of (its rows
// were gone when it read them), so that every pass either publishes or
// shrinks what the run may lock, and the run ends. The error is a pass's database failure: what the pass
// published is published again by the next run. With a FunctionName, each
// Drain ends by writing its metrics (logMetrics), failed or not.
func (r *Relay) Drain(ctx context.Context) (Report, error) {
	rep, err := r.drain(ctx)
	r.logMetrics(ctx, rep)
	return rep, err
}

// drain is Drain without its metrics.
func (r *Relay) drain(ctx context.Context) (Report, error) {
	var rep Report
	skip := []string{} // not nil: the query compares against the array
	for {
		if rep.Rows >= r.maxRows {
			rep.Stop = StopBound
			return rep, nil
		}
		if d, ok := ctx.Deadline(); ok && !r.now().Before(d.Add(-r.margin)) {
			rep.Stop = StopDeadline
			return rep, nil
		}
		p, err := r.pass(ctx, skip, r.maxRows-rep.Rows)
		rep.Held += p.held
		if err != nil {
			return rep, err
		}
		if p.locked == 0 {
			rep.Stop = StopEmpty
			return rep, nil
		}
		rep.Passes++
		rep.Rows += p.rows
		rep.Messages += p.messages
		rep.Failed += p.failed
		skip = append(skip, p.skip...)
	}
}

// passResult is what one pass did.
type passResult struct {
	locked, held, rows, messages int
	failed                       int      // jobs whose lane stopped
	skip                         []string // the jobs it locked and published nothing of, or stopped
}

// pass publishes, in one transaction, the rows of the jobs it locks: at
// most r.rowsPerJob of each and limit in all, leaving out the jobs in skip.
func (r *Relay) pass(ctx context.Context, skip []string, limit int) (passResult, error) {
	var res passResult
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return res, fmt.Errorf("pgsource: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	locked, held, err := lockJobs(ctx, tx, skip, r.jobs)
	res.locked, res.held = len(locked), held
	if err != nil || len(locked) == 0 {
		return res, err
	}
	// A statement of its own, after the locks: under Read Committed it
	// sees every row committed before it began, so it sees what the
	// previous holder deleted and cannot publish it again.
	rows, err := readRows(ctx, tx, locked, r.rowsPerJob, limit)
	if err != nil {
		return res, err
	}
	lanes := r.lanes(rows)
	msgs := make([][]outbox.Message, len(lanes))
	for i := range lanes {
		msgs[i] = lanes[i].msgs
	}
	acked := outbox.Publish(ctx, r.sink, msgs, func(lane, n int, err error) {
		m := lanes[lane].msgs[n]
		r.log.Warn("pgsource: message not published; its job waits for the next run",
			"job_id", m.JobID, "version", m.Version, "kind", m.Kind.String(), "error", err)
	})
	var del published
	progressed := make(map[string]bool, len(lanes))
	for i := range lanes {
		l := &lanes[i]
		n := l.rowsWithin(acked[i])
		for _, v := range l.versions[:n] {
			del.add(l.jobID, v)
		}
		res.rows += n
		res.messages += acked[i]
		if l.stopped || acked[i] < len(l.msgs) {
			res.failed++
			progressed[l.jobID] = false // read, and left out of the run
			continue
		}
		progressed[l.jobID] = n > 0
	}
	// A locked job the read returned no row of had its rows deleted by
	// the previous holder, unless the read stopped at its limit before
	// reaching it: that job keeps its rows and stays in the run (the
	// read's first job is in a lane, which either progressed or failed,
	// so the run still ends).
	truncated := len(rows) == limit
	for _, id := range locked {
		p, read := progressed[id]
		if !p && (read || !truncated) {
			res.skip = append(res.skip, id)
		}
	}
	if err := del.delete(ctx, tx); err != nil {
		res.rows, res.messages = 0, 0
		return res, err
	}
	if err := tx.Commit(); err != nil {
		res.rows, res.messages = 0, 0
		return res, fmt.Errorf("pgsource: commit: %w", err)
	}
	return res, nil
}

// lane is one job's rows of a pass, as messages.
type lane struct {
	jobID    string
	msgs     []outbox.Message
	versions []int64 // the rows' versions, in order
	ends     []int   // ends[i]: how many of msgs the rows up to versions[i] emitted
	stopped  bool    // a row could not be decoded: the rows from it wait
}

// rowsWithin is how many of the lane's rows had every message among the
// first acked: the rows published, which the pass deletes.
func (l *lane) rowsWithin(acked int) int {
	n := 0
	for n < len(l.ends) && l.ends[n] <= acked {
		n++
	}
	return n
}

// lanes turns rows (in job and version order) into one lane per job. A row
// that cannot be decoded stops its job's lane: its later rows must not go
// out before it.
func (r *Relay) lanes(rows []row) []lane {
	var out []lane
	for i := range rows {
		rw := &rows[i]
		if len(out) == 0 || out[len(out)-1].jobID != rw.jobID {
			out = append(out, lane{jobID: rw.jobID})
		}
		l := &out[len(out)-1]
		if l.stopped {
			continue
		}
		msgs, err := rw.messages()
		if err != nil {
			l.stopped = true
			r.log.Error("pgsource: undecodable outbox row; its job's later rows wait", "job_id", rw.jobID, "version", rw.version, "error", err)
			continue
		}
		l.msgs = append(l.msgs, msgs...)
		l.versions = append(l.versions, rw.version)
		l.ends = append(l.ends, len(l.msgs))
	}
	return out
}

// row is one job_outbox row: the stream record of one transition.
type row struct {
	jobID     string
	version   int64
	image     []byte
	prevImage []byte // nil for a creation
}

// messages decodes the row into the messages its transition emitted. The
// images must be the row's job and version: a row that says otherwise
// would publish another job's message in this job's place.
func (rw *row) messages() ([]outbox.Message, error) {
	cur, err := jobitem.FromPostgresImage(rw.image)
	if err != nil {
		return nil, fmt.Errorf("pgsource: row %s: image: %w", jobitem.OutboxID(rw.jobID, rw.version), err)
	}
	if cur.ID != rw.jobID || cur.Version != rw.version {
		return nil, fmt.Errorf("pgsource: row %s holds the image of %s", jobitem.OutboxID(rw.jobID, rw.version), jobitem.OutboxID(cur.ID, cur.Version))
	}
	var prev *jobitem.Job
	if rw.prevImage != nil {
		p, err := jobitem.FromPostgresImage(rw.prevImage)
		if err != nil {
			return nil, fmt.Errorf("pgsource: row %s: previous image: %w", jobitem.OutboxID(rw.jobID, rw.version), err)
		}
		if p.ID != rw.jobID || p.Version >= rw.version {
			return nil, fmt.Errorf("pgsource: row %s holds the previous image of %s", jobitem.OutboxID(rw.jobID, rw.version), jobitem.OutboxID(p.ID, p.Version))
		}
		prev = &p
	}
	return outbox.FromTransition(&cur, prev)
}
