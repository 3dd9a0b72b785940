package jobs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
)

// Store is the arbiter of job state. Every method is one atomic decision:
// it either applies its transition (and the transition's outbox message) or
// changes nothing and returns an error matching one of the Err* categories.
// DynamoStore and MemoryStore implement it and pass the same conformance
// suite, jobstest.Run.
type Store interface {
	// Create creates the job of an intent, or returns the job the intent
	// already created (Existing set, nothing written). A create retried after
	// a lost response may report Existing for the job its own first try
	// wrote; either way there is one job and one command.
	Create(ctx context.Context, req CreateRequest) (CreateResult, error)
	// Claim starts a new generation: pending → running, or takes over a
	// running job whose lease has expired. When the expired generation was
	// the last the recovery policy allows, the same write fails the job
	// instead, and Claim returns the failed job with a *FinalError (so does
	// a retry of that claim). A claim by the attempt that holds a live lease
	// returns the job unchanged; once that lease has expired, the attempt's
	// claim is a takeover like any other.
	Claim(ctx context.Context, req ClaimRequest) (Job, error)
	// Renew extends the caller's lease and records its progress.
	Renew(ctx context.Context, req RenewRequest) (Job, error)
	// Accept selects the caller's candidate as the result: running → completed.
	Accept(ctx context.Context, req AcceptRequest) (Job, error)
	// Fail ends the job as failed.
	Fail(ctx context.Context, req FailRequest) (Job, error)
	// Cancel ends a pending or running job and fences its worker.
	Cancel(ctx context.Context, req CancelRequest) (Job, error)
	// Nudge re-issues the run command of a job that is pending, or running
	// on a lease that ended strictly before now, and still at the
	// generation and version the caller read: the version rises by one and
	// the outbox holds a fresh job.run command; the generation, the lease
	// and the progress stay. A job whose command was lost (to the
	// dead-letter queue, or with a stream record that expired) is not
	// stranded: the command the nudge writes leads to a claim, and the
	// claim, not the nudge, starts the next generation under the recovery
	// policy. A live lease is ErrLeaseHeld, a job that moved on
	// ErrStaleGeneration, an ended job ErrFinal.
	Nudge(ctx context.Context, req NudgeRequest) (Job, error)
	// Get reads the job (strongly consistent).
	Get(ctx context.Context, id string) (Job, error)
}

// CreateRequest asks for the job of an intent.
type CreateRequest struct {
	// JobID is the id of the new job; empty means DeriveJobID(Tenant, IntentID).
	JobID    string
	IntentID string // the client's idempotency key
	// Tenant is the authenticated caller, never a request field. It must
	// not contain '#'.
	Tenant string
	// Spec's keys and values, as every free text of a request (a failure's
	// message, a reason), are UTF-8 without NUL (else ErrInvalid): what
	// every store keeps byte for byte.
	Spec map[string]string
}

// CreateResult is the outcome of Create.
type CreateResult struct {
	Job Job
	// Existing is true when the intent had already created the job: nothing
	// was written and no command was emitted.
	Existing bool
}

// ClaimRequest asks for a new generation of a job.
type ClaimRequest struct {
	JobID string
	// AttemptID names one delivery of one command in one invocation, e.g.
	// "<aws_request_id>_<message_id>": never the request id alone, which
	// every message of a batch shares.
	AttemptID string
	// LeaseUntil is when the lease ends (see LeaseEnd): after now, and at
	// most MaxLambdaTimeout plus twice the store's clock-skew margin after
	// it.
	LeaseUntil time.Time
	// Tenant, when set, is part of the claim's condition: a job of another
	// tenant is refused with ErrNotFound and nothing is written, exactly as
	// if there were no job, so a command naming the wrong tenant neither
	// uses a generation nor learns that the job exists. The worker sets it
	// from the command. Empty means any tenant.
	Tenant string
}

// RenewRequest extends a lease and reports progress.
type RenewRequest struct {
	JobID      string
	AttemptID  string
	Generation int64
	Version    int64     // the version the caller last saw (its claim's or last renewal's)
	LeaseUntil time.Time // the new lease end, bounded like ClaimRequest.LeaseUntil
	Progress   int64
}

// AcceptRequest selects a candidate as the job's result. Result.Key must be
// the caller's own candidate key (ValidateResultKey): another job's,
// generation's or attempt's key is ErrInvalid and nothing is written.
type AcceptRequest struct {
	JobID      string
	AttemptID  string
	Generation int64
	Version    int64
	Result     Result
	Progress   int64 // the final count
}

// FailRequest ends a job as failed.
type FailRequest struct {
	JobID      string
	AttemptID  string
	Generation int64
	Version    int64
	Failure    Failure // Code is required
}

// CancelRequest ends a pending or running job.
type CancelRequest struct {
	JobID  string
	Reason string // optional, recorded as the failure message; UTF-8 without NUL
	// Strict makes a job that is already cancelled a *FinalError, as any
	// other ended job is, so the cancel succeeds only when this request
	// wrote. Without it (the API's DELETE) a cancelled job is success, which
	// makes a retried cancel idempotent but cannot tell the caller whether
	// its own request or someone else's cancelled the job; a caller that
	// must say so (the operator's jobs cancel) sets it. A strict cancel whose
	// write landed but whose response was lost, and that the SDK retried, is
	// answered *FinalError too: the answer errs towards "not by this
	// request", never the other way.
	Strict bool
}

// NudgeRequest re-issues the run command of a stuck job. Generation and
// Version are what the caller read (Get): the nudge lands only if the job
// is still there.
type NudgeRequest struct {
	JobID      string
	Generation int64
	Version    int64
	// Reason is recorded in the command's payload (PayloadReason); optional,
	// UTF-8 without NUL. A retry of the request must send the same reason to
	// be recognised.
	Reason string
}

const (
	maxTenant = 256
	maxIntent = 512
	maxText   = 4096
)

func (r *CreateRequest) validate() error {
	if err := validateText("tenant", r.Tenant, maxTenant); err != nil {
		return err
	}
	for _, c := range r.Tenant {
		if c == '#' {
			return fmt.Errorf("%w: tenant %q contains '#'", ErrInvalid, r.Tenant)
		}
	}
	if err := validateText("intent id", r.IntentID, maxIntent); err != nil {
		return err
	}
	if r.JobID != "" {
		if err := ValidateID(r.JobID); err != nil {
			return err
		}
	}
	for k, v := range r.Spec {
		if k == "" {
			return fmt.Errorf("%w: spec has an empty key", ErrInvalid)
		}
		if err := validateFreeText("spec key "+strconv.Quote(k), k); err != nil {
			return err
		}
		if err := validateFreeText("spec value of "+strconv.Quote(k), v); err != nil {
			return err
		}
	}
	return nil
}

// validateFreeText accepts what every store keeps byte for byte: UTF-8
// without NUL. PostgreSQL's jsonb (and text) keeps no NUL, and JSON, the
// form PostgresStore's jsonb columns and DynamoDB's API are sent in, no
// byte that is not UTF-8: encoding/json would replace it with U+FFFD
// without a word. So all stores refuse both, and none changes a request's
// text.
func validateFreeText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not UTF-8", ErrInvalid, what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%w: %s holds NUL", ErrInvalid, what)
	}
	return nil
}

func (r *ClaimRequest) validate(now time.Time, cfg *config) error {
	if err := ValidateID(r.JobID); err != nil {
		return err
	}
	if err := validateAttemptID(r.AttemptID); err != nil {
		return err
	}
	if r.Tenant != "" {
		if err := validateText("tenant", r.Tenant, maxTenant); err != nil {
			return err
		}
	}
	return validateLease(r.LeaseUntil, now, cfg)
}

// validateLease accepts a lease that ends after now and at most
// MaxLambdaTimeout plus twice the clock-skew margin after it, at the stored
// precision.
func validateLease(until, now time.Time, cfg *config) error {
	if until.UnixMilli() <= now.UnixMilli() {
		return fmt.Errorf("%w: lease until %s is not after now (%s)", ErrInvalid,
			until.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	if limit := cfg.leaseLimit(now); until.UnixMilli() > limit.UnixMilli() {
		return fmt.Errorf("%w: lease until %s ends after %s: no Lambda invocation runs longer than %v, plus twice a clock-skew margin of %v",
			ErrInvalid, until.Format(time.RFC3339Nano), limit.Format(time.RFC3339Nano), MaxLambdaTimeout, cfg.clockSkew)
	}
	return nil
}

func validateFence(id, attempt string, g, v int64) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	if err := validateAttemptID(attempt); err != nil {
		return err
	}
	// A claim yields generation ≥ 1 and version ≥ 1.
	if g < 1 || v < 1 {
		return fmt.Errorf("%w: generation %d and version %d must be at least 1", ErrInvalid, g, v)
	}
	return nil
}

func (r *RenewRequest) validate(now time.Time, cfg *config) error {
	if err := validateFence(r.JobID, r.AttemptID, r.Generation, r.Version); err != nil {
		return err
	}
	if r.Progress < 0 {
		return fmt.Errorf("%w: negative progress %d", ErrInvalid, r.Progress)
	}
	return validateLease(r.LeaseUntil, now, cfg)
}

func (r *AcceptRequest) validate(time.Time, *config) error {
	if err := validateFence(r.JobID, r.AttemptID, r.Generation, r.Version); err != nil {
		return err
	}
	if err := ValidateResultKey(r.Result.Key, r.JobID, r.Generation, r.AttemptID); err != nil {
		return err
	}
	if !checksum.IsSHA256Hex(r.Result.SHA256) {
		return fmt.Errorf("%w: result sha256 %q is not 64 lower-case hex digits", ErrInvalid, r.Result.SHA256)
	}
	if r.Result.Size < 0 || r.Progress < 0 {
		return fmt.Errorf("%w: negative size or progress", ErrInvalid)
	}
	return nil
}

func (r *FailRequest) validate(time.Time, *config) error {
	if err := validateFence(r.JobID, r.AttemptID, r.Generation, r.Version); err != nil {
		return err
	}
	if err := validateText("failure code", r.Failure.Code, 256); err != nil {
		return err
	}
	if len(r.Failure.Message) > maxText {
		return fmt.Errorf("%w: failure message longer than %d bytes", ErrInvalid, maxText)
	}
	return validateFreeText("failure message", r.Failure.Message)
}

func (r *CancelRequest) validate(time.Time, *config) error {
	if err := ValidateID(r.JobID); err != nil {
		return err
	}
	if len(r.Reason) > maxText {
		return fmt.Errorf("%w: reason longer than %d bytes", ErrInvalid, maxText)
	}
	return validateFreeText("reason", r.Reason)
}

func (r *NudgeRequest) validate(time.Time, *config) error {
	if err := ValidateID(r.JobID); err != nil {
		return err
	}
	// A claim raises the generation and the version together, so a job's
	// version is never below its generation.
	if r.Generation < 0 || r.Version < r.Generation {
		return fmt.Errorf("%w: generation %d and version %d: want 0 <= generation <= version", ErrInvalid, r.Generation, r.Version)
	}
	if len(r.Reason) > maxText {
		return fmt.Errorf("%w: reason longer than %d bytes", ErrInvalid, maxText)
	}
	return validateFreeText("reason", r.Reason)
}
