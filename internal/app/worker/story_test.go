package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// The running example through Handle: worker A claims generation 1 and
// stalls; a duplicate delivery is refused while A's lease is live; after
// it has ended, worker B takes over as generation 2 and its accept wins;
// A wakes up, its late accept is refused and its command acknowledged,
// and A's candidate is the orphan beside B's result.
func TestRunningExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", map[string]string{"export": "articles"})

	stalled, resume := make(chan struct{}), make(chan struct{})
	taskA := task.Func("json", func(_ context.Context, in task.Input) (task.Output, error) {
		if _, err := io.WriteString(in.Out, `{"by":"A"}`+"\n"); err != nil {
			return task.Output{}, err
		}
		close(stalled)
		<-resume
		return task.Output{Items: 1}, nil
	})
	doneA := make(chan error, 1)
	go func() { doneA <- b.worker(taskA).Handle(invocation(t, "req-a", time.Minute), msg) }()
	<-stalled
	require.EqualValues(t, 1, b.get(t, "job-42").Generation)

	err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-dup", time.Minute), msg)
	require.ErrorIs(t, err, jobs.ErrLeaseHeld, "a duplicate delivery does not displace A")

	// A's lease (its deadline plus the skew) ends; the command comes back
	// to B, whose deadline lies after the store's now.
	b.clock.Advance(2 * time.Minute)
	taskB := task.Func("json", func(_ context.Context, in task.Input) (task.Output, error) {
		_, err := io.WriteString(in.Out, `{"by":"B"}`+"\n")
		return task.Output{Items: 1}, err
	})
	require.NoError(t, b.worker(taskB).Handle(invocation(t, "req-b", 3*time.Minute), msg))
	won := b.get(t, "job-42")
	require.Equal(t, jobs.StatusCompleted, won.Status)
	require.EqualValues(t, 2, won.Generation)
	require.Equal(t, jobs.OutboxID("job-42", 3), won.Outbox.ID, "job-42/v3: claim v1, takeover v2, accept v3")
	require.Equal(t, "candidates/job-42/g0000000002/req-b_msg-job-42.json", won.Result.Key)

	close(resume)
	require.NoError(t, <-doneA, "A's refused accept is acknowledged")
	require.Equal(t, won, b.get(t, "job-42"), "A's late accept changed nothing")

	orphanA := "candidates/job-42/g0000000001/req-a_msg-job-42.json"
	rec := b.logs.one(t, "stale accept refused; candidate left for the sweeper")
	require.Equal(t, slog.LevelWarn, rec.Level)
	require.Equal(t, orphanA, rec.Attrs["orphan_key"])
	require.Equal(t, "req-a_msg-job-42", rec.Attrs["attempt_id"])
	require.Equal(t, int64(1), rec.Attrs["generation"])

	keys := b.s3.keys()
	require.Equal(t, []string{orphanA, won.Result.Key}, keys)
	orphans := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == won.Result.Key })
	require.Equal(t, []string{orphanA}, orphans)
	require.Equal(t, `{"by":"B"}`+"\n", b.read(t, won.Result.Key))
	require.Equal(t, `{"by":"A"}`+"\n", b.read(t, orphanA))
}

// A task that runs out of time returns ctx.Err(): retryable. Under
// pkg/fifo its context ends the response reserve before the invocation's
// deadline, so the lease (deadline plus skew) outlives the task, and the
// message is reported for another receive.
func TestTaskOutOfTimeIsRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t) // inside the bubble: the store's clock and deadlines share the fake time
		_, msg := b.create(t, "job-42", nil)
		var stopped time.Time
		var taskErr error
		slow := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
			if _, err := io.WriteString(in.Out, "partial\n"); err != nil {
				return task.Output{}, err
			}
			<-ctx.Done()
			stopped, taskErr = time.Now(), ctx.Err()
			return task.Output{}, ctx.Err()
		})
		ctx := invocation(t, "req-1", time.Minute)
		deadline, _ := ctx.Deadline()

		proc, err := fifo.New(fifo.Config{Handler: b.worker(slow).Handle})
		require.NoError(t, err)
		resp, err := proc.Process(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
		require.NoError(t, err)
		require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: msg.MessageId}}, resp.BatchItemFailures)
		require.ErrorIs(t, taskErr, context.DeadlineExceeded)
		require.True(t, stopped.Before(deadline), "the task stopped before the invocation's deadline")

		job := b.get(t, "job-42")
		require.Equal(t, jobs.StatusRunning, job.Status)
		require.True(t, job.LeaseExpiresAt.After(deadline), "the lease outlives the invocation")
		require.Zero(t, b.s3.putCalls(), "nothing uploaded")
		b.logs.one(t, "task failed; the command will be received again")
	})
}

// Retries are bounded by the recovery policy: a task that always fails
// retryably spends one generation per delivery, and the claim after the
// last one fails the job and acknowledges the command.
func TestRetriesAreBoundedByMaxGenerations(t *testing.T) {
	t.Parallel()
	b := setupWith(t, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 2}})
	_, msg := b.create(t, "job-42", nil)
	failing := task.Func("txt", func(context.Context, task.Input) (task.Output, error) {
		return task.Output{}, errors.New("injected: always throttled")
	})
	// Deliveries come a visibility timeout (6 minutes) apart; each
	// invocation's deadline lies after the store's now at its start.
	for i, timeout := range []time.Duration{time.Minute, 7 * time.Minute} {
		err := b.worker(failing).Handle(invocation(t, fmt.Sprintf("req-%d", i+1), timeout), msg)
		require.Error(t, err)
		require.False(t, fifo.IsPermanent(err))
		require.EqualValues(t, i+1, b.get(t, "job-42").Generation)
		b.clock.Advance(6 * time.Minute)
	}
	require.NoError(t, b.worker(mustNotRun(t)).Handle(invocation(t, "req-3", 13*time.Minute), msg))
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusFailed, job.Status)
	require.Equal(t, jobs.CodeRecoveryExhausted, job.Error.Code)
}
