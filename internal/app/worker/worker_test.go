package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// faultyStore answers the writes a test names with an error instead of the
// store's answer: what a timeout or a lost response looks like to the
// worker.
type faultyStore struct {
	jobs.Store
	renew, fail, accept error
}

func (f *faultyStore) Renew(ctx context.Context, req jobs.RenewRequest) (jobs.Job, error) {
	if f.renew != nil {
		return jobs.Job{}, f.renew
	}
	return f.Store.Renew(ctx, req)
}

func (f *faultyStore) Fail(ctx context.Context, req jobs.FailRequest) (jobs.Job, error) {
	if f.fail != nil {
		return jobs.Job{}, f.fail
	}
	return f.Store.Fail(ctx, req)
}

func (f *faultyStore) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	if f.accept != nil {
		return jobs.Job{}, f.accept
	}
	return f.Store.Accept(ctx, req)
}

// The whole path: claim, progress per line (each a renewal), upload,
// accept. The result is the attempt's own key and holds what the task
// wrote; every write raised the version by one.
func TestHandleRunsClaimsAndAccepts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", map[string]string{"export": "articles"})
	var input task.Input
	work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		input = in
		return lines("a", "b", "c").Run(ctx, in)
	})

	require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))

	require.Equal(t, "req-1_msg-job-42", input.AttemptID)
	require.Equal(t, "t-1", input.Job.Tenant)
	require.Equal(t, map[string]string{"export": "articles"}, input.Job.Spec)
	require.Equal(t, "job-42", input.Job.ID)
	require.EqualValues(t, 1, input.Job.Generation, "the task sees the job as its claim left it")

	done := b.get(t, "job-42")
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.EqualValues(t, 1, done.Generation)
	require.EqualValues(t, 5, done.Version, "claim v1, three renewals v2-v4, accept v5")
	require.Equal(t, "req-1_msg-job-42", done.LeaseOwner)
	require.EqualValues(t, 3, done.Progress)
	require.Equal(t, "candidates/job-42/g0000000001/req-1_msg-job-42.txt", done.Result.Key)
	require.Equal(t, "a\nb\nc\n", b.read(t, done.Result.Key))
	require.EqualValues(t, 6, done.Result.Size)
	require.Equal(t, []string{done.Result.Key}, b.s3.keys())

	rec := b.logs.one(t, "result accepted")
	require.Equal(t, slog.LevelInfo, rec.Level)
	for k, v := range map[string]any{
		"job_id": "job-42", "group_id": "job-42", "message_id": "msg-job-42", "aws_request_id": "req-1",
		"attempt_id": "req-1_msg-job-42", "generation": int64(1), "version": int64(5), "result_key": done.Result.Key,
	} {
		require.Equal(t, v, rec.Attrs[k], k)
	}
}

func TestHandleRefusesMalformedCommandsPermanently(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"empty":           "",
		"not JSON":        "job-42",
		"empty object":    "{}",
		"an event":        body(t, func(c *outbox.Command) { c.Type = jobs.EventStarted }),
		"job id with /":   body(t, func(c *outbox.Command) { c.JobID, c.CommandID = "job/42", "job/42/v0" }),
		"foreign id":      body(t, func(c *outbox.Command) { c.CommandID = "job-7/v0" }),
		"no tenant":       body(t, func(c *outbox.Command) { c.Tenant = "" }),
		"unknown field":   strings.Replace(body(t, nil), `{`, `{"extra":1,`, 1),
		"trailing data":   body(t, nil) + "{}",
		"two objects":     body(t, nil) + body(t, nil),
		"oversized":       strings.Replace(body(t, nil), `"t-1"`, `"`+strings.Repeat("t", outbox.MaxBody)+`"`, 1),
		"array of itself": "[" + body(t, nil) + "]",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, msg := b.create(t, "job-42", nil)
			msg.Body = raw
			err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
			require.True(t, fifo.IsPermanent(err), "got %v", err)
			require.ErrorIs(t, err, outbox.ErrMalformed)
			require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status, "nothing was claimed")
			require.Equal(t, slog.LevelWarn, b.logs.one(t, "malformed command").Level)
		})
	}
}

func TestHandleRefusesACommandInAnotherJobsGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	msg.Attributes["MessageGroupId"] = "job-7"
	err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
	require.True(t, fifo.IsPermanent(err), "got %v", err)
	require.ErrorIs(t, err, worker.ErrGroupMismatch)
	require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status)
}

// Without a Lambda request id there is no attempt id, and none is made up:
// the message fails (and is received again), nothing is claimed.
func TestHandleWithoutLambdaContextClaimsNothing(t *testing.T) {
	t.Parallel()
	for name, ctx := range map[string]func(t *testing.T) context.Context{
		"no Lambda context": func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			return ctx
		},
		"empty request id": func(t *testing.T) context.Context { return invocation(t, "", time.Minute) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, msg := b.create(t, "job-42", nil)
			err := b.worker(mustNotRun(t)).Handle(ctx(t), msg)
			require.ErrorIs(t, err, worker.ErrNoLambdaContext)
			require.False(t, fifo.IsPermanent(err))
			require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status)
		})
	}
}

// A lease needs the invocation's deadline.
func TestHandleWithoutDeadlineClaimsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	err := b.worker(mustNotRun(t)).Handle(ctx, msg)
	require.ErrorIs(t, err, jobs.ErrNoDeadline)
	require.False(t, fifo.IsPermanent(err))
	require.Equal(t, jobs.StatusPending, b.get(t, "job-42").Status)
}

// A command for a job that has ended is done with: acknowledged, nothing
// run, nothing written.
func TestHandleAcknowledgesACommandForAFinalJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	cancelled, err := b.store.Cancel(context.Background(), jobs.CancelRequest{JobID: "job-42", Reason: "user"})
	require.NoError(t, err)

	require.NoError(t, b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg))
	require.Equal(t, cancelled, b.get(t, "job-42"))
	require.Zero(t, b.s3.putCalls())
	rec := b.logs.one(t, "job is final")
	require.Equal(t, "cancelled", rec.Attrs["status"])
}

// The claim that finds the last generation's lease ended fails the job
// under the recovery policy and returns the failed job with a
// *FinalError: the command is acknowledged and the task does not run.
func TestHandleAcknowledgesTheClaimThatExhaustsRecovery(t *testing.T) {
	t.Parallel()
	b := setupWith(t, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 1}})
	_, msg := b.create(t, "job-42", nil)
	_, err := b.store.Claim(context.Background(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	b.clock.Advance(2 * time.Minute)

	// This invocation's deadline lies after the store's now.
	require.NoError(t, b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", 3*time.Minute), msg))
	failed := b.get(t, "job-42")
	require.Equal(t, jobs.StatusFailed, failed.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, failed.Error.Code)
	require.Equal(t, "req-1_msg-job-42", failed.Outbox.Payload[jobs.PayloadAttemptID])
	require.Zero(t, b.s3.putCalls())
	require.Equal(t, "failed", b.logs.one(t, "job is final").Attrs["status"])
}

// A duplicate delivery while another attempt's lease is live fails the
// message (its group waits, it is received again); it is not permanent.
func TestHandleFailsTheMessageWhileAnotherAttemptHoldsTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	held, err := b.store.Claim(context.Background(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)

	err = b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
	require.ErrorIs(t, err, jobs.ErrLeaseHeld)
	require.False(t, fifo.IsPermanent(err))
	require.Equal(t, held, b.get(t, "job-42"))
}

func TestHandleRefusesACommandForNoJobPermanently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msg := events.SQSMessage{MessageId: "msg-1", Body: body(t, nil), Attributes: map[string]string{"MessageGroupId": "job-42"}}
	err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
	require.True(t, fifo.IsPermanent(err), "got %v", err)
	require.ErrorIs(t, err, jobs.ErrNotFound)
}

// The job's tenant is the job item's, never the command's: a command that
// names another tenant is forged, and it is refused before the claim
// writes anything. The job stays exactly as created (pending, generation 0,
// version 0): no lease holds it, no generation is used up, and the genuine
// command that follows runs at once.
func TestHandleRefusesACommandOfAnotherTenantPermanently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, genuine := b.create(t, "job-42", nil)
	forged := genuine
	forged.MessageId = "msg-forged"
	forged.Body = body(t, func(c *outbox.Command) { c.Tenant = "t-2" })

	err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), forged)
	require.True(t, fifo.IsPermanent(err), "got %v", err)
	require.ErrorIs(t, err, jobs.ErrNotFound)
	require.Zero(t, b.s3.putCalls())
	j := b.get(t, "job-42")
	require.Equal(t, created, j, "the forged command changed the job")
	require.Equal(t, jobs.StatusPending, j.Status)
	require.Zero(t, j.Generation)
	require.Zero(t, j.Version)
	require.Equal(t, slog.LevelWarn, b.logs.one(t, "no job of its tenant").Level)

	require.NoError(t, b.worker(lines(`{"n":1}`)).Handle(invocation(t, "req-2", time.Minute), genuine))
	done := b.get(t, "job-42")
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.Equal(t, int64(1), done.Generation, "the genuine command's claim is the first generation")
}

// A renewal refused because the attempt lost the job cancels the task's
// context, and the attempt ends there: acknowledged, nothing uploaded,
// whatever the task returns.
func TestRefusedProgressStopsTheAttempt(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		lose    func(t *testing.T, b *testBundle, in task.Input)
		refusal error
		ignore  bool // the task returns nil after the refusal
	}{
		"cancelled": {
			lose: func(t *testing.T, b *testBundle, _ task.Input) {
				_, err := b.store.Cancel(context.Background(), jobs.CancelRequest{JobID: "job-42"})
				require.NoError(t, err)
			},
			refusal: jobs.ErrStaleGeneration, // a cancel raises the generation
		},
		"taken over": {
			lose: func(t *testing.T, b *testBundle, _ task.Input) {
				// B's host, past A's lease, takes over; A's host, whose
				// invocation is still running, is not past it.
				b.clock.Advance(2 * time.Minute)
				_, err := b.store.Claim(context.Background(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
				require.NoError(t, err)
				b.behind.Store(int64(2 * time.Minute))
			},
			refusal: jobs.ErrStaleGeneration,
		},
		"ended at this generation": {
			lose: func(t *testing.T, b *testBundle, in task.Input) {
				now := b.get(t, "job-42") // as the claim left it
				_, err := b.store.Fail(context.Background(), jobs.FailRequest{JobID: "job-42", AttemptID: in.AttemptID,
					Generation: in.Job.Generation, Version: now.Version, Failure: jobs.Failure{Code: "elsewhere"}})
				require.NoError(t, err)
			},
			refusal: jobs.ErrFinal,
		},
		"cancelled, and the task ignores the refusal": {
			lose: func(t *testing.T, b *testBundle, _ task.Input) {
				_, err := b.store.Cancel(context.Background(), jobs.CancelRequest{JobID: "job-42"})
				require.NoError(t, err)
			},
			refusal: jobs.ErrStaleGeneration,
			ignore:  true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, msg := b.create(t, "job-42", nil)
			work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
				_, err := io.WriteString(in.Out, "partial\n")
				require.NoError(t, err)
				tc.lose(t, b, in)
				err = in.Progress(ctx, 1)
				require.ErrorIs(t, err, worker.ErrFenced)
				require.ErrorIs(t, err, tc.refusal)
				require.Error(t, ctx.Err(), "the task's context is cancelled")
				require.ErrorIs(t, context.Cause(ctx), worker.ErrFenced)
				require.ErrorIs(t, in.Progress(ctx, 2), worker.ErrFenced, "a fenced attempt writes nothing more")
				_, werr := io.WriteString(in.Out, "more\n")
				require.ErrorIs(t, werr, context.Canceled, "nor into its candidate")
				if tc.ignore {
					return task.Output{Items: 1}, nil
				}
				return task.Output{}, err
			})
			require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
			require.Zero(t, b.s3.putCalls(), "the candidate was abandoned")
			require.Empty(t, b.s3.keys())
			require.NotEqual(t, jobs.StatusCompleted, b.get(t, "job-42").Status)
			b.logs.one(t, "attempt fenced")
		})
	}
}

// A renewal without an answer leaves the attempt's version unknown: the
// task is stopped and the message fails, so the next delivery's claim
// decides; nothing is uploaded.
func TestFailedProgressWriteEndsTheAttemptForARetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	lost := errors.New("injected: connection reset")
	b.jobs = &faultyStore{Store: b.store, renew: lost}
	work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		err := in.Progress(ctx, 1)
		require.ErrorIs(t, err, lost)
		require.NotErrorIs(t, err, worker.ErrFenced)
		require.Error(t, ctx.Err(), "the task's context is cancelled")
		return task.Output{Items: 1}, nil // ignores it: the worker does not
	})
	err := b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg)
	require.ErrorIs(t, err, lost)
	require.False(t, fifo.IsPermanent(err))
	require.Zero(t, b.s3.putCalls())
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusRunning, job.Status)
	require.EqualValues(t, 1, job.Version)
}

// A task's permanent error fails the job with code task_failed and the
// error's text; the command is acknowledged and nothing is uploaded.
func TestPermanentTaskErrorFailsTheJob(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", worker.MaxFailureMessage) // 2 bytes each
	for name, tc := range map[string]struct {
		out     task.Output
		err     error
		message func(t *testing.T, m string)
	}{
		"permanent": {err: fifo.Permanent(errors.New("page_size \"x\" is not an integer")), message: func(t *testing.T, m string) {
			require.Equal(t, `permanent: page_size "x" is not an integer`, m)
		}},
		"wrapped permanent": {err: errors.Join(errors.New("export"), fifo.Permanent(errors.New("bad spec"))), message: func(t *testing.T, m string) {
			require.Contains(t, m, "bad spec")
		}},
		"negative items": {out: task.Output{Items: -1}, message: func(t *testing.T, m string) {
			require.Contains(t, m, "-1 items")
		}},
		"message too long": {err: fifo.Permanent(errors.New(long)), message: func(t *testing.T, m string) {
			require.LessOrEqual(t, len(m), worker.MaxFailureMessage)
			require.True(t, utf8.ValidString(m))
			require.True(t, strings.HasSuffix(m, "é…"), "cut at a rune boundary: %q", m[len(m)-8:])
		}},
		"message not UTF-8": {err: fifo.Permanent(errors.New("bad byte \xff here")), message: func(t *testing.T, m string) {
			require.Equal(t, "permanent: bad byte \uFFFD here", m)
		}},
		"message with NUL": {err: fifo.Permanent(errors.New("key \x00 here")), message: func(t *testing.T, m string) {
			require.Equal(t, "permanent: key \uFFFD here", m) // the job stores refuse NUL (jobs.ErrInvalid)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, msg := b.create(t, "job-42", nil)
			work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
				_, err := io.WriteString(in.Out, "partial\n")
				require.NoError(t, err)
				require.NoError(t, in.Progress(ctx, 1))
				return tc.out, tc.err
			})
			require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
			failed := b.get(t, "job-42")
			require.Equal(t, jobs.StatusFailed, failed.Status)
			require.Equal(t, worker.CodeTaskFailed, failed.Error.Code)
			require.EqualValues(t, 3, failed.Version, "claim v1, renewal v2, fail v3: fenced on the latest version")
			tc.message(t, failed.Error.Message)
			require.Zero(t, b.s3.putCalls())
			require.Equal(t, slog.LevelWarn, b.logs.one(t, "task failed permanently").Level)
		})
	}
}

// The failure of a task is fenced like any write: refused when the
// attempt has lost the job (acknowledged), retried when unanswered.
func TestFailOfALostAttempt(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, msg := b.create(t, "job-42", nil)
		work := task.Func("txt", func(ctx context.Context, _ task.Input) (task.Output, error) {
			cancelled, err := b.store.Cancel(ctx, jobs.CancelRequest{JobID: "job-42"})
			require.NoError(t, err)
			require.Equal(t, jobs.StatusCancelled, cancelled.Status)
			return task.Output{}, fifo.Permanent(errors.New("bad spec"))
		})
		require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
		require.Equal(t, jobs.StatusCancelled, b.get(t, "job-42").Status)
		b.logs.one(t, "failure refused")
	})
	t.Run("unanswered", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, msg := b.create(t, "job-42", nil)
		lost := errors.New("injected: timeout")
		b.jobs = &faultyStore{Store: b.store, fail: lost}
		work := task.Func("txt", func(context.Context, task.Input) (task.Output, error) {
			return task.Output{}, fifo.Permanent(errors.New("bad spec"))
		})
		err := b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg)
		require.ErrorIs(t, err, lost)
		require.False(t, fifo.IsPermanent(err))
		require.Equal(t, jobs.StatusRunning, b.get(t, "job-42").Status)
	})
}

// A retryable task error abandons the candidate and fails the message;
// the delivery after the lease has ended takes the job over as a new
// generation, with a new attempt id and its own candidate.
func TestRetryableTaskErrorLeavesTheJobToTheNextDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	throttled := errors.New("injected: throttled")
	flaky := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		_, err := io.WriteString(in.Out, "partial\n")
		require.NoError(t, err)
		return task.Output{}, throttled
	})
	err := b.worker(flaky).Handle(invocation(t, "req-1", time.Minute), msg)
	require.ErrorIs(t, err, throttled)
	require.False(t, fifo.IsPermanent(err))
	require.Zero(t, b.s3.putCalls())
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusRunning, job.Status)
	require.EqualValues(t, 1, job.Generation)

	// The visibility timeout (6 × the function's) is far past the lease.
	b.clock.Advance(6 * time.Minute)
	require.NoError(t, b.worker(lines("full")).Handle(invocation(t, "req-2", 7*time.Minute), msg))
	done := b.get(t, "job-42")
	require.Equal(t, jobs.StatusCompleted, done.Status)
	require.EqualValues(t, 2, done.Generation)
	require.Equal(t, "candidates/job-42/g0000000002/req-2_msg-job-42.txt", done.Result.Key)
	require.Equal(t, "full\n", b.read(t, done.Result.Key))
}

func TestUploadFailureFailsTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	b.s3.failNextPuts(apiError("InternalError", "injected"))
	err := b.worker(lines("a")).Handle(invocation(t, "req-1", time.Minute), msg)
	require.Error(t, err)
	require.False(t, fifo.IsPermanent(err))
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusRunning, job.Status)
	require.Zero(t, job.Result)
	require.Empty(t, b.s3.keys())
}

// An accept refused because the job ended meanwhile (at this generation)
// is acknowledged; the uploaded candidate is left for the sweeper.
func TestAcceptOfAJobThatEndedIsAcknowledged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		_, err := io.WriteString(in.Out, "done\n")
		require.NoError(t, err)
		now, err := b.store.Get(ctx, "job-42") // as the claim left it
		require.NoError(t, err)
		_, err = b.store.Fail(ctx, jobs.FailRequest{JobID: "job-42", AttemptID: in.AttemptID,
			Generation: in.Job.Generation, Version: now.Version, Failure: jobs.Failure{Code: "elsewhere"}})
		require.NoError(t, err)
		return task.Output{Items: 1}, nil
	})
	require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusFailed, job.Status)
	require.Zero(t, job.Result)
	orphan := "candidates/job-42/g0000000001/req-1_msg-job-42.txt"
	require.Equal(t, []string{orphan}, b.s3.keys())
	rec := b.logs.one(t, "job ended before the accept")
	require.Equal(t, orphan, rec.Attrs["orphan_key"])
	require.Equal(t, "failed", rec.Attrs["status"])
}

func TestUnansweredAcceptFailsTheMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	lost := errors.New("injected: timeout")
	b.jobs = &faultyStore{Store: b.store, accept: lost}
	err := b.worker(lines("a")).Handle(invocation(t, "req-1", time.Minute), msg)
	require.ErrorIs(t, err, lost)
	require.False(t, fifo.IsPermanent(err))
	require.Equal(t, jobs.StatusRunning, b.get(t, "job-42").Status)
	require.Len(t, b.s3.keys(), 1, "uploaded, not accepted")
}

// Progress belongs to the attempt while its task runs: a call after Run
// returned (from a goroutine the task left behind) writes nothing.
func TestProgressAfterTheTaskReturnedIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	var leaked func(context.Context, int64) error
	work := task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
		leaked = in.Progress
		return task.Output{}, errors.New("injected: retry")
	})
	require.Error(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
	before := b.get(t, "job-42")
	require.ErrorIs(t, leaked(context.Background(), 5), worker.ErrAttemptOver)
	require.Equal(t, before, b.get(t, "job-42"))
}

func TestProgressRefusesANegativeCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		require.Error(t, in.Progress(ctx, -1))
		require.NoError(t, ctx.Err(), "a refused call is the task's business")
		return task.Output{}, nil
	})
	require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
	require.EqualValues(t, 2, b.get(t, "job-42").Version, "claim and accept, no renewal")
}

// Two messages of one batch share the invocation's request id; their
// attempts, leases and candidates are still their own.
func TestAttemptIDDiffersForTwoMessagesOfABatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, m1 := b.create(t, "job-1", nil)
	_, m2 := b.create(t, "job-2", nil)
	processor, err := fifo.New(fifo.Config{Handler: b.worker(lines("x")).Handle})
	require.NoError(t, err)
	resp, err := processor.Process(invocation(t, "req-batch", time.Minute), events.SQSEvent{Records: []events.SQSMessage{m1, m2}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	j1, j2 := b.get(t, "job-1"), b.get(t, "job-2")
	require.Equal(t, "req-batch_msg-job-1", j1.LeaseOwner)
	require.Equal(t, "req-batch_msg-job-2", j2.LeaseOwner)
	require.NotEqual(t, j1.Result.Key, j2.Result.Key)
	require.Equal(t, jobs.StatusCompleted, j1.Status)
	require.Equal(t, jobs.StatusCompleted, j2.Status)
}

func TestAttemptID(t *testing.T) {
	t.Parallel()
	id, err := worker.AttemptID("c0ffee00-0000-4000-8000-000000000001", "0e1f6a8e-5b3a-4a7e-9f11-5c8e2d0c7a11")
	require.NoError(t, err)
	require.Equal(t, "c0ffee00-0000-4000-8000-000000000001_0e1f6a8e-5b3a-4a7e-9f11-5c8e2d0c7a11", id)
	for name, parts := range map[string][2]string{
		"no request id":   {"", "msg-1"},
		"no message id":   {"req-1", ""},
		"a slash":         {"req-1", "msg/1"},
		"a dot":           {"req.1", "msg-1"},
		"over 128 bytes":  {strings.Repeat("r", 64), strings.Repeat("m", 64)},
		"non-ASCII bytes": {"req-1", "msg-é"},
	} {
		_, err := worker.AttemptID(parts[0], parts[1])
		require.Error(t, err, name)
	}
	_, err = worker.AttemptID(strings.Repeat("r", 64), strings.Repeat("m", 63))
	require.NoError(t, err, "exactly 128 bytes")
}

// The lease ends LeaseSkew after the invocation's deadline.
func TestLeaseEndsAtTheDeadlinePlusTheSkew(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		skew, want time.Duration
	}{
		"default": {0, jobs.DefaultClockSkew},
		"set":     {2 * time.Second, 2 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, msg := b.create(t, "job-42", nil)
			ctx := invocation(t, "req-1", time.Minute)
			deadline, _ := ctx.Deadline()
			var lease time.Time
			work := task.Func("txt", func(ctx context.Context, _ task.Input) (task.Output, error) {
				job, err := b.store.Get(ctx, "job-42")
				lease = job.LeaseExpiresAt
				return task.Output{}, err
			})
			w := mustNew(t, worker.Config{Jobs: b.store, Candidates: b.candidates, Tasks: only(t, work), LeaseSkew: tc.skew})
			require.NoError(t, w.Handle(ctx, msg))
			require.Equal(t, deadline.Add(tc.want).UnixMilli(), lease.UnixMilli())
		})
	}
}

// The candidate's key carries the task's extension.
func TestCandidateKeyCarriesTheTasksExtension(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	work := task.Func("ndjson", lines("{}").Run)
	require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
	key, err := candidate.ParseKey(b.get(t, "job-42").Result.Key)
	require.NoError(t, err)
	require.Equal(t, candidate.Key{JobID: "job-42", Generation: 1, AttemptID: "req-1_msg-job-42", Ext: "ndjson"}, key)
}
