package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// journal is the job store under every caller (jobs.MemoryStore or
// jobs.PostgresStore), with each transition it applies appended, as its
// (previous, current) pair, to the job's stream, as the Jobs table's
// stream (NEW_AND_OLD_IMAGES) or job_outbox would have it; it reads the
// job through Get before and after each write. The fault plan sits above it, so the journal sees what was applied,
// answered or not. Every applied write is checked against the job as it
// was just before: the fences are verified here, independently of the
// store's own decision.
type journal struct {
	w   *World
	mem jobStore
}

var _ jobs.Store = (*journal)(nil)

// peek reads the job as it is (nil: none), whatever became of ctx.
func (j *journal) peek(ctx context.Context, id string) *jobs.Job {
	if jobs.ValidateID(id) != nil {
		return nil
	}
	job, err := j.mem.Get(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil
	}
	return &job
}

// attempt is one write request as the journal saw it.
type attempt struct {
	op         string
	jobID      string
	attemptID  string
	generation int64
	version    int64
}

// write calls the store and journals what it applied.
func (j *journal) write(ctx context.Context, a attempt, do func() (jobs.Job, error)) (jobs.Job, error) {
	before := j.peek(ctx, a.jobID)
	now := j.w.clock.Now()
	out, err := do()
	after := j.peek(ctx, a.jobID)
	if after != nil && (before == nil || after.Version != before.Version) {
		j.w.applied(ctx, a, before, *after, now)
	} else {
		j.w.refused(a, err)
	}
	return out, err
}

func (j *journal) Create(ctx context.Context, req jobs.CreateRequest) (jobs.CreateResult, error) {
	id := req.JobID
	if id == "" {
		id = jobs.DeriveJobID(req.Tenant, req.IntentID)
	}
	var res jobs.CreateResult
	_, err := j.write(ctx, attempt{op: "create", jobID: id}, func() (jobs.Job, error) {
		var err error
		res, err = j.mem.Create(ctx, req)
		return res.Job, err
	})
	return res, err
}

func (j *journal) Claim(ctx context.Context, req jobs.ClaimRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "claim", jobID: req.JobID, attemptID: req.AttemptID}, func() (jobs.Job, error) { return j.mem.Claim(ctx, req) })
}

func (j *journal) Renew(ctx context.Context, req jobs.RenewRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "renew", jobID: req.JobID, attemptID: req.AttemptID, generation: req.Generation, version: req.Version},
		func() (jobs.Job, error) { return j.mem.Renew(ctx, req) })
}

func (j *journal) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "accept", jobID: req.JobID, attemptID: req.AttemptID, generation: req.Generation, version: req.Version},
		func() (jobs.Job, error) { return j.mem.Accept(ctx, req) })
}

func (j *journal) Fail(ctx context.Context, req jobs.FailRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "fail", jobID: req.JobID, attemptID: req.AttemptID, generation: req.Generation, version: req.Version},
		func() (jobs.Job, error) { return j.mem.Fail(ctx, req) })
}

func (j *journal) Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "cancel", jobID: req.JobID}, func() (jobs.Job, error) { return j.mem.Cancel(ctx, req) })
}

func (j *journal) Nudge(ctx context.Context, req jobs.NudgeRequest) (jobs.Job, error) {
	return j.write(ctx, attempt{op: "nudge", jobID: req.JobID, generation: req.Generation, version: req.Version},
		func() (jobs.Job, error) { return j.mem.Nudge(ctx, req) })
}

func (j *journal) Get(ctx context.Context, id string) (jobs.Job, error) { return j.mem.Get(ctx, id) }

// applied checks a write the store applied against the job before it, and
// appends the transition to the job's stream.
func (w *World) applied(ctx context.Context, a attempt, before *jobs.Job, after jobs.Job, now time.Time) {
	if err := checkTransition(a, before, &after, now); err != nil {
		w.violate("%s of %s by %q (g%d v%d) was applied against the fence: %v\n  before: %s\n  after:  %s",
			a.op, a.jobID, a.attemptID, a.generation, a.version, err, describe(before), describe(&after))
	}
	switch a.op {
	case "accept":
		w.stats.Accepts++
		w.accepts[a.jobID]++
		if w.accepts[a.jobID] > 1 {
			w.violate("job %s has %d accepted results", a.jobID, w.accepts[a.jobID])
		}
		w.checkResult(ctx, &after)
	case "claim":
		if before != nil && before.Status == jobs.StatusRunning {
			w.stats.Takeovers++
		}
	case "nudge":
		w.stats.Nudges++
	case "create":
		w.created[after.ID] = len(w.jobIDs)
		w.jobIDs = append(w.jobIDs, after.ID)
	}
	w.logf("  %s %s → %s", a.op, a.jobID, describe(&after))
	w.record(before, after)
	w.checkOutboxRow(ctx, before, after)
}

// refused counts a write the store did not apply.
func (w *World) refused(a attempt, err error) {
	switch {
	case err == nil:
	case a.op == "claim" && errors.Is(err, jobs.ErrLeaseHeld):
		w.stats.LeaseHeld++
	case (a.op == "accept" || a.op == "renew" || a.op == "fail") &&
		(errors.Is(err, jobs.ErrStaleGeneration) || errors.Is(err, jobs.ErrFinal)):
		w.stats.FencedWrites++
		w.logf("  %s %s by %s (g%d v%d) refused: %v", a.op, a.jobID, a.attemptID, a.generation, a.version, err)
	}
}

// checkTransition is the fence, stated independently of the store: what
// may be true of the job before a write of each kind landed, and after.
func checkTransition(a attempt, before, after *jobs.Job, now time.Time) error {
	if before == nil {
		if a.op != "create" || after.Version != 0 || after.Generation != 0 || after.Status != jobs.StatusPending {
			return fmt.Errorf("a job appeared by %s", a.op)
		}
		return nil
	}
	switch {
	case a.op == "create":
		return errors.New("create changed an existing job")
	case before.Status.Final():
		return errors.New("a final job changed")
	case after.Version != before.Version+1:
		return fmt.Errorf("the version went from %d to %d", before.Version, after.Version)
	case after.Generation < before.Generation:
		return fmt.Errorf("the generation went back from %d to %d", before.Generation, after.Generation)
	case after.Outbox.ID != jobs.OutboxID(after.ID, after.Version) || after.Outbox.Version != after.Version:
		return fmt.Errorf("the outbox holds %q of version %d", after.Outbox.ID, after.Outbox.Version)
	}
	leaseEnded := !before.LeaseExpiresAt.IsZero() && before.LeaseExpiresAt.UnixMilli() < now.UnixMilli()
	switch a.op {
	case "claim":
		switch {
		case before.Status == jobs.StatusRunning && !leaseEnded:
			return errors.New("a claim took over a live lease")
		case after.Generation != before.Generation+1:
			return errors.New("a claim did not start the next generation")
		case after.Status == jobs.StatusRunning && after.LeaseOwner != a.attemptID:
			return errors.New("a claim gave the lease to another attempt")
		case after.Status != jobs.StatusRunning && (after.Status != jobs.StatusFailed || before.Status != jobs.StatusRunning):
			return fmt.Errorf("a claim left the job %s", after.Status)
		}
	case "renew", "accept", "fail":
		switch {
		case before.Status != jobs.StatusRunning:
			return fmt.Errorf("the job was %s", before.Status)
		case before.Generation != a.generation:
			return fmt.Errorf("the job was at generation %d", before.Generation)
		case before.Version != a.version:
			return fmt.Errorf("the job was at version %d", before.Version)
		case before.LeaseOwner != a.attemptID:
			return fmt.Errorf("the lease was %q's", before.LeaseOwner)
		case after.Generation != before.Generation:
			return errors.New("the generation changed")
		}
	case "cancel":
		if after.Status != jobs.StatusCancelled || after.Generation != before.Generation+1 {
			return errors.New("a cancel did not end the job under a new generation")
		}
	case "nudge":
		switch {
		case before.Generation != a.generation || before.Version != a.version:
			return fmt.Errorf("the nudge read g%d v%d", a.generation, a.version)
		case before.Status == jobs.StatusRunning && !leaseEnded:
			return errors.New("a nudge passed a live lease")
		case after.Generation != before.Generation || after.Status != before.Status:
			return errors.New("a nudge changed the generation or the status")
		}
	}
	return nil
}

func describe(j *jobs.Job) string {
	if j == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s g%d v%d %s owner=%s lease=%s progress=%d result=%s",
		j.ID, j.Generation, j.Version, j.Status, j.LeaseOwner, j.LeaseExpiresAt.Sub(Epoch), j.Progress, j.Result.Key)
}
