package lambdawire

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// lambdaServiceID is the Lambda API's SDK service id: its local endpoint
// is AWS_ENDPOINT_URL_LAMBDA (startup.ServiceEndpoint).
const lambdaServiceID = "Lambda"

// writerJobs is the job store of a function that writes job transitions
// (intake, the worker, the sweeper): every operation those functions call.
type writerJobs interface {
	jobs.Store
	jobs.Lister
	jobs.FinishedLister
	jobs.BatchGetter
}

var _ writerJobs = (*jobs.PostgresStore)(nil)

// nudgingJobs is a writer's job store on PostgreSQL: each write that
// committed or may have nudges the relay, after the commit, as the relay
// has no stream to wake it. Only a write the store refused (refused) sends
// none: a *jobs.FinalError nudges, as a claim that failed the job for good
// returns it after writing it, and so does any other error, an answer lost
// after the commit (the connection's error, a deadline) among them, whose
// row would otherwise wait for the relay's schedule. A nudge for a write
// that did not commit costs one asynchronous invocation that finds
// nothing. Reads nudge nothing.
type nudgingJobs struct {
	writerJobs
	nudger nudge.Nudger
	db     *sql.DB // the pool the store is on, for the function's other stores
}

// after nudges the relay unless the write that returned err was refused.
// The nudge's own failure is not the write's: the Coalescer logs it and
// counts the commit into its next nudge.
func (s *nudgingJobs) after(ctx context.Context, err error) {
	if !refused(err) {
		_ = s.nudger.Nudge(ctx)
	}
}

// refused reports whether err is a store's refusal of a write, which wrote
// nothing: each of jobs' refusal categories but ErrFinal (see
// nudgingJobs), and ErrNoDeadline, refused before anything is sent.
func refused(err error) bool {
	for _, r := range []error{jobs.ErrStaleGeneration, jobs.ErrLeaseHeld, jobs.ErrNotFound, jobs.ErrIntentConflict,
		jobs.ErrJobExists, jobs.ErrInvalid, jobs.ErrNoDeadline} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// Create implements jobs.Store, nudging after a creation. A create that
// found its intent's job (Existing) nudges too: its first try may have
// committed without its nudge.
func (s *nudgingJobs) Create(ctx context.Context, req jobs.CreateRequest) (jobs.CreateResult, error) {
	r, err := s.writerJobs.Create(ctx, req)
	s.after(ctx, err)
	return r, err
}

// Claim implements jobs.Store, nudging after a claim.
func (s *nudgingJobs) Claim(ctx context.Context, req jobs.ClaimRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Claim(ctx, req)
	s.after(ctx, err)
	return j, err
}

// Renew implements jobs.Store, nudging after a renewal.
func (s *nudgingJobs) Renew(ctx context.Context, req jobs.RenewRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Renew(ctx, req)
	s.after(ctx, err)
	return j, err
}

// Accept implements jobs.Store, nudging after an accept.
func (s *nudgingJobs) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Accept(ctx, req)
	s.after(ctx, err)
	return j, err
}

// Fail implements jobs.Store, nudging after a failure.
func (s *nudgingJobs) Fail(ctx context.Context, req jobs.FailRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Fail(ctx, req)
	s.after(ctx, err)
	return j, err
}

// Cancel implements jobs.Store, nudging after a cancellation.
func (s *nudgingJobs) Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Cancel(ctx, req)
	s.after(ctx, err)
	return j, err
}

// Nudge implements jobs.Store (the sweeper's re-issued command), nudging
// the relay after it.
func (s *nudgingJobs) Nudge(ctx context.Context, req jobs.NudgeRequest) (jobs.Job, error) {
	j, err := s.writerJobs.Nudge(ctx, req)
	s.after(ctx, err)
	return j, err
}

// postgresWriterJobs opens the database (open) and returns a writer's job
// store on it, recovering with maxGenerations (0: the default), which
// nudges the relay through the returned Coalescer (relayNudger); nils when
// env has a problem it names.
func postgresWriterJobs(env *startup.Env, cfg aws.Config, open OpenDB, maxGenerations int, log *slog.Logger) (*nudgingJobs, *nudge.Coalescer) {
	db := open(env, cfg)
	nudger := relayNudger(env, cfg, log)
	if db == nil || nudger == nil {
		return &nudgingJobs{db: db}, nil
	}
	store, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db,
		Config: jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: int64(maxGenerations)}}})
	if err != nil {
		env.Refuse(err, jobsSettings)
		return &nudgingJobs{db: db}, nil
	}
	return &nudgingJobs{writerJobs: store, nudger: nudger, db: db}, nudger
}

// relayNudger returns the Coalescer that nudges the relay function
// RELAY_FUNCTION_NAME: an asynchronous invocation through the Lambda API
// (its endpoint AWS's for the function's region, or
// AWS_ENDPOINT_URL_LAMBDA, the local pipeline's), signed with the
// function's credentials, at most one per nudge.DefaultInterval from a
// burst of commits, the rest sent by the handler's Flush (flushing). Nil
// when env has a problem it names.
func relayNudger(env *startup.Env, cfg aws.Config, log *slog.Logger) *nudge.Coalescer {
	function := env.String("RELAY_FUNCTION_NAME")
	if function == "" {
		return nil
	}
	endpoint, _ := startup.ServiceEndpoint(cfg, lambdaServiceID)
	sender, err := nudge.NewLambda(nudge.LambdaConfig{Function: function, Region: cfg.Region, Credentials: cfg.Credentials, Endpoint: endpoint})
	if err != nil {
		env.Refuse(err, startup.Fields{"Function": "RELAY_FUNCTION_NAME", "Region": "AWS_REGION", "Credentials": "AWS_ACCESS_KEY_ID",
			"Endpoint": "AWS_ENDPOINT_URL_LAMBDA"})
		return nil
	}
	c, err := nudge.NewCoalescer(nudge.CoalescerConfig{Sender: sender, Logger: log})
	if err != nil {
		env.Refuse(err, startup.Fields{"Sender": "RELAY_FUNCTION_NAME"}) // not expected: Sender is set
		return nil
	}
	return c
}

// flushing returns h, which, once each invocation's work is done, sends
// the nudge its last commits still wait for (nudge.Coalescer's Flush):
// nothing of a nudge outlives the invocation, which Lambda may freeze. The
// flush has its own bound (the Coalescer's Timeout), not the invocation's
// context, which may have ended with the work.
func flushing[E, R any](h func(context.Context, E) (R, error), c *nudge.Coalescer) func(context.Context, E) (R, error) {
	return func(ctx context.Context, e E) (R, error) {
		r, err := h(ctx, e)
		_ = c.Flush(context.WithoutCancel(ctx))
		return r, err
	}
}
