package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// attempt is one delivery of one command in one invocation, from its
// successful claim on.
type attempt struct {
	w     *Worker
	log   *slog.Logger
	job   jobs.Job // as the claim left it
	id    string
	lease time.Time // the invocation's deadline plus the skew: it does not move
	start time.Time
	stop  context.CancelCauseFunc // cancels the task
	room  *candidate.Reservation  // the candidate's room in the spool, taken before the claim

	mu      sync.Mutex // serialises renewals; guards what follows
	version int64      // the version this attempt's last write produced
	fenced  error      // a renewal was refused: the attempt lost the job
	broken  error      // a renewal failed without an answer: the version is unknown
	over    bool       // Run has returned
}

// run runs the job's task into the attempt's candidate and settles the
// outcome.
func (a *attempt) run(ctx context.Context) error {
	name, t, err := a.w.cfg.Tasks.Lookup(a.job.Spec)
	if err != nil {
		// The same spec names the same task on every delivery: no retry
		// can run it.
		return a.fail(ctx, a.version, CodeUnknownTask, err)
	}
	a.log = a.log.With(slog.String("task", name))
	job := task.Job{ID: a.job.ID, Tenant: a.job.Tenant, Spec: a.job.Spec, Generation: a.job.Generation}
	key, err := candidate.NewKey(a.job.ID, a.job.Generation, a.id, t.Ext(job))
	if err != nil {
		// The task chose an extension outside the key's rule: a fault of the
		// task, the same on every try.
		return a.fail(ctx, a.version, CodeTaskFailed, fmt.Errorf("worker: task %s: %w", name, err))
	}
	taskCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	a.stop = stop
	cw, err := a.room.Create(taskCtx, key)
	if err != nil {
		return fmt.Errorf("worker: job %s g%d: %w", a.job.ID, a.job.Generation, err)
	}
	defer func() { _ = cw.Close() }() // unless committed, the content is discarded

	out, taskErr := a.runTask(taskCtx, t, task.Input{Job: job, AttemptID: a.id, Out: cw, Progress: a.progress})
	version, fenced, broken := a.outcome()
	switch {
	case fenced != nil:
		a.log.InfoContext(ctx, "worker: attempt fenced; candidate abandoned", versionAttr(version), slog.Any("reason", fenced), a.took())
		return nil
	case broken != nil:
		a.log.WarnContext(ctx, "worker: progress write failed; the command will be received again", versionAttr(version), slog.Any("error", broken), a.took())
		return broken
	case errors.Is(cw.Err(), candidate.ErrTooLarge):
		// Whatever the task made of the refused write (a retryable error, as
		// the reference task's, or none): the same content is as large on
		// every try.
		return a.fail(ctx, version, CodeCandidateTooLarge, cw.Err())
	case errors.Is(taskErr, candidate.ErrTooLarge):
		return a.fail(ctx, version, CodeCandidateTooLarge, taskErr)
	case taskErr == nil && out.Items < 0:
		taskErr = fifo.Permanent(fmt.Errorf("worker: task reported %d items", out.Items))
	}
	if taskErr != nil {
		if fifo.IsPermanent(taskErr) {
			return a.fail(ctx, version, CodeTaskFailed, taskErr)
		}
		a.log.WarnContext(ctx, "worker: task failed; the command will be received again", versionAttr(version), slog.Any("error", taskErr), a.took())
		return fmt.Errorf("worker: job %s g%d: task: %w", a.job.ID, a.job.Generation, taskErr)
	}
	res, err := cw.Commit()
	if err != nil {
		return fmt.Errorf("worker: job %s g%d: %w", a.job.ID, a.job.Generation, err)
	}
	return a.accept(ctx, version, res, out.Items)
}

// runTask calls the task; once it returns, Progress refuses to write.
func (a *attempt) runTask(ctx context.Context, t task.Task, in task.Input) (task.Output, error) {
	defer func() {
		a.mu.Lock()
		a.over = true
		a.mu.Unlock()
	}()
	return t.Run(ctx, in)
}

func (a *attempt) outcome() (version int64, fenced, broken error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version, a.fenced, a.broken
}

// progress is task.Input.Progress: a fenced renewal of the lease with the
// version last seen.
func (a *attempt) progress(ctx context.Context, n int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.over:
		return fmt.Errorf("worker: job %s g%d: %w", a.job.ID, a.job.Generation, ErrAttemptOver)
	case a.fenced != nil:
		return a.fenced
	case a.broken != nil:
		return a.broken
	case n < 0:
		return fmt.Errorf("worker: job %s g%d: progress %d is negative", a.job.ID, a.job.Generation, n)
	}
	job, err := a.w.cfg.Jobs.Renew(ctx, jobs.RenewRequest{
		JobID: a.job.ID, AttemptID: a.id, Generation: a.job.Generation, Version: a.version,
		LeaseUntil: a.lease, Progress: n,
	})
	switch {
	case err == nil:
		a.version = job.Version
		return nil
	case errors.Is(err, jobs.ErrStaleGeneration), errors.Is(err, jobs.ErrFinal):
		a.fenced = fmt.Errorf("%w: %w", ErrFenced, err)
		a.stop(a.fenced)
		return a.fenced
	default:
		// Applied or not, nobody can say: a later write with the version we
		// knew could be refused by our own renewal. The attempt ends, and
		// the next delivery's claim decides.
		a.broken = fmt.Errorf("worker: job %s g%d: progress: %w", a.job.ID, a.job.Generation, err)
		a.stop(a.broken)
		return a.broken
	}
}

// failLines are the log lines of a job failed, by code.
var failLines = map[string]string{
	CodeTaskFailed:        "worker: task failed permanently; job failed",
	CodeCandidateTooLarge: "worker: candidate over the size bound; job failed",
	CodeUnknownTask:       "worker: the job's spec names no task of this worker; job failed",
}

// fail ends the job for good: code names the cause, taskErr says it.
func (a *attempt) fail(ctx context.Context, version int64, code string, taskErr error) error {
	job, err := a.w.cfg.Jobs.Fail(ctx, jobs.FailRequest{
		JobID: a.job.ID, AttemptID: a.id, Generation: a.job.Generation, Version: version,
		Failure: jobs.Failure{Code: code, Message: failureMessage(taskErr)},
	})
	switch {
	case err == nil:
		a.log.WarnContext(ctx, failLines[code], versionAttr(job.Version), slog.String("code", code), slog.Any("error", taskErr), a.took())
		return nil
	case errors.Is(err, jobs.ErrStaleGeneration), errors.Is(err, jobs.ErrFinal):
		a.log.InfoContext(ctx, "worker: failure refused; the attempt had lost the job", versionAttr(version),
			statusAttr(err), slog.Any("reason", err), slog.Any("error", taskErr), a.took())
		return nil
	default:
		return fmt.Errorf("worker: job %s g%d: fail: %w", a.job.ID, a.job.Generation, err)
	}
}

// accept selects the committed candidate as the job's result.
// The job store refuses a result key that is not this attempt's own
// (jobs.ValidateResultKey), so a candidate of another job, generation or
// attempt can never become the result.
func (a *attempt) accept(ctx context.Context, version int64, res candidate.Result, items int64) error {
	job, err := a.w.cfg.Jobs.Accept(ctx, jobs.AcceptRequest{
		JobID: a.job.ID, AttemptID: a.id, Generation: a.job.Generation, Version: version,
		Result: jobs.Result{Key: res.Key.String(), SHA256: res.SHA256, Size: res.Size}, Progress: items,
	})
	switch {
	case err == nil:
		a.log.InfoContext(ctx, "worker: result accepted", versionAttr(job.Version),
			slog.String("result_key", job.Result.Key), slog.Int64("result_size", job.Result.Size),
			slog.Int64("progress", job.Progress), a.took())
		a.w.logLatency(ctx, &job)
		return nil
	case errors.Is(err, jobs.ErrStaleGeneration):
		a.log.WarnContext(ctx, "worker: stale accept refused; candidate left for the sweeper", versionAttr(version),
			slog.String("orphan_key", res.Key.String()), statusAttr(err), slog.Any("reason", err), a.took())
		return nil
	case errors.Is(err, jobs.ErrFinal):
		a.log.InfoContext(ctx, "worker: job ended before the accept; candidate left for the sweeper", versionAttr(version),
			slog.String("orphan_key", res.Key.String()), statusAttr(err), slog.Any("reason", err), a.took())
		return nil
	default:
		return fmt.Errorf("worker: job %s g%d: accept: %w", a.job.ID, a.job.Generation, err)
	}
}

func versionAttr(v int64) slog.Attr { return slog.Int64("version", v) }

func (a *attempt) took() slog.Attr { return slog.Duration("duration", a.w.cfg.Now().Sub(a.start)) }
