package lambdawire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// countingNudger counts the nudges asked for.
type countingNudger struct{ n int }

func (c *countingNudger) Nudge(context.Context) error { c.n++; return errors.New("not sent") }

// answering is a job store whose every write answers err.
type answering struct {
	writerJobs
	err error
}

func (a *answering) Create(context.Context, jobs.CreateRequest) (jobs.CreateResult, error) {
	return jobs.CreateResult{}, a.err
}
func (a *answering) Claim(context.Context, jobs.ClaimRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Renew(context.Context, jobs.RenewRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Accept(context.Context, jobs.AcceptRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Fail(context.Context, jobs.FailRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Cancel(context.Context, jobs.CancelRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Nudge(context.Context, jobs.NudgeRequest) (jobs.Job, error) {
	return jobs.Job{}, a.err
}
func (a *answering) Get(context.Context, string) (jobs.Job, error) { return jobs.Job{}, nil }

// Each of the seven writes nudges the relay once when it committed (no
// error, or a *jobs.FinalError, which a claim that fails the job for good
// returns after its write) or may have (an answer lost after the commit:
// the connection's error, a deadline), and not when the store refused it
// (each refusal category but ErrFinal); a read nudges nothing; the
// nudge's own failure is not the write's.
func TestEveryCommittedWriteNudgesTheRelay(t *testing.T) {
	t.Parallel()
	writes := map[string]func(s *nudgingJobs) error{
		"Create": func(s *nudgingJobs) error { _, err := s.Create(t.Context(), jobs.CreateRequest{}); return err },
		"Claim":  func(s *nudgingJobs) error { _, err := s.Claim(t.Context(), jobs.ClaimRequest{}); return err },
		"Renew":  func(s *nudgingJobs) error { _, err := s.Renew(t.Context(), jobs.RenewRequest{}); return err },
		"Accept": func(s *nudgingJobs) error { _, err := s.Accept(t.Context(), jobs.AcceptRequest{}); return err },
		"Fail":   func(s *nudgingJobs) error { _, err := s.Fail(t.Context(), jobs.FailRequest{}); return err },
		"Cancel": func(s *nudgingJobs) error { _, err := s.Cancel(t.Context(), jobs.CancelRequest{}); return err },
		"Nudge":  func(s *nudgingJobs) error { _, err := s.Nudge(t.Context(), jobs.NudgeRequest{}); return err },
	}
	final := fmt.Errorf("claim: %w", &jobs.FinalError{})
	for name, write := range writes {
		for _, tc := range []struct {
			err    error
			nudges int
		}{
			{nil, 1}, {final, 1}, {context.DeadlineExceeded, 1}, {io.ErrUnexpectedEOF, 1}, {errors.New("conn closed"), 1},
			{&jobs.StaleError{}, 0}, {&jobs.LeaseHeldError{}, 0}, {jobs.ErrNotFound, 0}, {jobs.ErrIntentConflict, 0},
			{jobs.ErrJobExists, 0}, {jobs.ErrInvalid, 0}, {jobs.ErrNoDeadline, 0},
		} {
			n := &countingNudger{}
			s := &nudgingJobs{writerJobs: &answering{err: tc.err}, nudger: n}
			require.ErrorIs(t, write(s), tc.err, name)
			require.Equal(t, tc.nudges, n.n, "%s answering %v", name, tc.err)
		}
	}
	n := &countingNudger{}
	s := &nudgingJobs{writerJobs: &answering{}, nudger: n}
	_, err := s.Get(t.Context(), "job")
	require.NoError(t, err)
	require.Zero(t, n.n, "a read")
}

// recordingSender records the nudges sent and whether each send's context
// was live.
type recordingSender struct {
	sent []nudge.Payload
	dead int
}

func (r *recordingSender) Send(ctx context.Context, p nudge.Payload) error {
	r.sent = append(r.sent, p)
	if ctx.Err() != nil {
		r.dead++
		return ctx.Err()
	}
	return nil
}

// A writer's handler sends, before it returns, the nudge its last commits
// wait for (those the Coalescer held back within its interval), even when
// the invocation's context has ended with the work: nothing waits for the
// relay's schedule, and nothing of a nudge outlives the invocation.
func TestTheHandlerFlushesTheNudgesItsCommitsWaitFor(t *testing.T) {
	t.Parallel()
	rec := &recordingSender{}
	at := time.Unix(1_700_000_000, 0)
	c, err := nudge.NewCoalescer(nudge.CoalescerConfig{Sender: rec, Now: func() time.Time { return at }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	h := flushing(func(ctx context.Context, commits int) (string, error) {
		for range commits {
			_ = c.Nudge(ctx) // the first is sent, the others held within the interval
		}
		cancel() // the invocation's context ends with its work
		return "done", nil
	}, c)
	got, err := h(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, "done", got)
	require.Len(t, rec.sent, 2, "the first commit's nudge, then the flush of the other two")
	require.Equal(t, 2, rec.sent[1].Commits)
	require.Zero(t, rec.dead, "the flush is not bound to the invocation's context")
}
