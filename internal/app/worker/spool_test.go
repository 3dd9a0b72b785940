package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// spoolMax is the tests' MaxCandidateBytes: small, so that a test fills a
// spool of a few of them.
const spoolMax = 64 << 10

// onDisk makes the bundle's candidates spool to a disk of budget bytes,
// bounded as the worker's wiring bounds them: at most maxSize bytes a
// candidate, and the disk's size as the budget.
func (b *testBundle) onDisk(maxSize, budget int64) *candidatetest.Disk {
	disk, err := candidatetest.NewDisk(candidatetest.DiskConfig{Size: budget})
	require.NoError(b.t, err)
	b.candidates, err = candidate.New(candidate.Config{Client: b.s3, Bucket: testBucket, Spool: disk, MaxSize: maxSize, SpoolBudget: budget})
	require.NoError(b.t, err)
	return disk
}

// fullSpool returns a bundle whose spool holds one candidate, job-42 and
// its command, and the reservation that holds the whole spool.
func fullSpool(t *testing.T) (*testBundle, jobs.Job, events.SQSMessage, *candidate.Reservation) {
	t.Helper()
	b := setup(t)
	b.onDisk(spoolMax, spoolMax)
	created, msg := b.create(t, "job-42", nil)
	held, err := b.candidates.Reserve(t.Context())
	require.NoError(t, err)
	return b, created, msg, held
}

// requireUnclaimed checks that Handle's err is a retryable ErrSpoolBusy
// and that job-42 is still created: nothing claimed, nothing written.
func (b *testBundle) requireUnclaimed(t *testing.T, err error, created jobs.Job) {
	t.Helper()
	require.ErrorIs(t, err, candidate.ErrSpoolBusy)
	require.False(t, fifo.IsPermanent(err))
	require.Equal(t, created, b.get(t, "job-42"), "nothing claimed, nothing written")
}

// writeN writes n bytes to w in pieces of 4 KiB, as a task writes a page
// at a time, and returns the first error.
func writeN(w io.Writer, n int64) error {
	piece := bytes.Repeat([]byte("x"), 4<<10)
	for n > 0 {
		m := min(n, int64(len(piece)))
		if _, err := w.Write(piece[:m]); err != nil {
			return err
		}
		n -= m
	}
	return nil
}

// One invocation, seven lanes of seven jobs, a spool of two candidates of
// the max size. The hog writes a whole candidate of exactly the max size
// and holds it until every other lane is done; the runaway writes without
// end; five others write half the max size each and hold it a second. A
// spool without a budget (the worker before) is full at once: the others'
// writes failed with ENOSPC and their jobs were left for a takeover, a
// generation lost each. With the budget each lane takes its room before
// its claim, the others pass one by one through the room the hog leaves,
// the runaway alone fails, for good, with candidate_too_large, and no
// write is ever refused for space.
func TestALaneThatFillsTheSpoolFailsNoOtherLane(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t)
		disk := b.onDisk(spoolMax, 2*spoolMax)
		others := []string{"job-1", "job-2", "job-3", "job-4", "job-5"}
		var batch []events.SQSMessage
		for _, id := range append([]string{"job-hog", "job-runaway"}, others...) {
			_, msg := b.create(t, id, nil)
			batch = append(batch, msg)
		}
		othersDone := make(chan struct{}, len(others))
		work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
			switch in.Job.ID {
			case "job-hog":
				if err := writeN(in.Out, spoolMax); err != nil {
					return task.Output{}, err
				}
				for range others {
					select {
					case <-othersDone:
					case <-ctx.Done():
						return task.Output{}, ctx.Err()
					}
				}
				return task.Output{Items: 1}, nil
			case "job-runaway":
				for {
					if err := writeN(in.Out, 4<<10); err != nil {
						return task.Output{}, fmt.Errorf("export: %w", err) // retryable, as the reference task wraps it
					}
				}
			default:
				defer func() { othersDone <- struct{}{} }()
				if err := writeN(in.Out, spoolMax/2); err != nil {
					return task.Output{}, err
				}
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return task.Output{}, ctx.Err()
				}
				return task.Output{Items: 1}, nil
			}
		})
		proc, err := fifo.New(fifo.Config{Handler: b.worker(work).Handle})
		require.NoError(t, err)
		resp, err := proc.Process(invocation(t, "req-1", time.Minute), events.SQSEvent{Records: batch})
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures, "no lane failed its message")

		for _, id := range append([]string{"job-hog"}, others...) {
			job := b.get(t, id)
			require.Equal(t, jobs.StatusCompleted, job.Status, "%s: %+v", id, job.Error)
			require.EqualValues(t, 1, job.Generation, id)
		}
		require.EqualValues(t, spoolMax, b.get(t, "job-hog").Result.Size, "a candidate of exactly the max size passes")
		runaway := b.get(t, "job-runaway")
		require.Equal(t, jobs.StatusFailed, runaway.Status)
		require.Equal(t, worker.CodeCandidateTooLarge, runaway.Error.Code)

		stats := disk.Stats()
		require.Zero(t, stats.Full, "no write was refused for space")
		require.LessOrEqual(t, stats.Peak, int64(2*spoolMax))
		require.Zero(t, stats.Files, "every spool was closed")
		require.NotEmpty(t, b.logs.find("waited for spool room"), "the others waited for room, before their claims")
	})
}

// A lane that finds no room in the spool before its context ends claims
// nothing: the job keeps its generation and version, the command is
// received again, and the next delivery runs it as generation 1. Waiting
// after the claim would have lost the generation to a takeover.
func TestALaneWithoutSpoolRoomClaimsNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, msg, held := fullSpool(t)
		err := b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
		b.requireUnclaimed(t, err, created)
		require.Equal(t, slog.LevelWarn, b.logs.one(t, "no spool room").Level)

		held.Release()
		require.NoError(t, b.worker(lines("done")).Handle(invocation(t, "req-2", time.Minute), msg))
		job := b.get(t, "job-42")
		require.Equal(t, jobs.StatusCompleted, job.Status)
		require.EqualValues(t, 1, job.Generation, "the wait cost no generation")
	})
}

// A candidate over MaxCandidateBytes fails its job for good, with
// candidate_too_large, after exactly one attempt: however the task passes
// the refused write on (as a retryable error, as the reference task does;
// as a permanent one; or not at all), nothing is uploaded, the command is
// acknowledged, and a second delivery finds the job final. Exactly the
// max size is accepted.
func TestCandidateOverTheBoundFailsTheJobForGood(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		size   int64
		wrap   func(error) error
		status jobs.Status
	}{
		"exactly the bound":       {size: spoolMax, wrap: func(err error) error { return err }, status: jobs.StatusCompleted},
		"a byte over, retryable":  {size: spoolMax + 1, wrap: func(err error) error { return fmt.Errorf("export: %w", err) }, status: jobs.StatusFailed},
		"a byte over, permanent":  {size: spoolMax + 1, wrap: fifo.Permanent, status: jobs.StatusFailed},
		"a byte over, error lost": {size: spoolMax + 1, wrap: func(error) error { return nil }, status: jobs.StatusFailed},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.onDisk(spoolMax, 4*spoolMax)
			_, msg := b.create(t, "job-42", nil)
			work := task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
				return task.Output{Items: 1}, tc.wrap(writeN(in.Out, tc.size))
			})
			require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg), "acknowledged")
			job := b.get(t, "job-42")
			require.Equal(t, tc.status, job.Status)
			require.EqualValues(t, 1, job.Generation)
			if tc.status == jobs.StatusCompleted {
				require.EqualValues(t, tc.size, job.Result.Size)
				return
			}
			require.Equal(t, worker.CodeCandidateTooLarge, job.Error.Code)
			require.Contains(t, job.Error.Message, fmt.Sprintf("more than %d bytes", spoolMax))
			require.EqualValues(t, 2, job.Version, "claim v1, fail v2")
			require.Zero(t, b.s3.putCalls(), "nothing uploaded")
			require.Equal(t, slog.LevelWarn, b.logs.one(t, "candidate over the size bound").Level)

			require.NoError(t, b.worker(mustNotRun(t)).Handle(invocation(t, "req-2", time.Minute), msg))
			require.Equal(t, job, b.get(t, "job-42"), "the second delivery finds the job final")
		})
	}
}

// An error that only says it is ErrTooLarge, from a task's own check, is
// the same cause: the job fails with candidate_too_large.
func TestTasksOwnTooLargeFailsTheJobForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	work := task.Func("txt", func(context.Context, task.Input) (task.Output, error) {
		return task.Output{}, fmt.Errorf("export of 9 GB: %w", candidate.ErrTooLarge)
	})
	require.NoError(t, b.worker(work).Handle(invocation(t, "req-1", time.Minute), msg))
	job := b.get(t, "job-42")
	require.Equal(t, jobs.StatusFailed, job.Status)
	require.Equal(t, worker.CodeCandidateTooLarge, job.Error.Code)
}

// A command that runs nothing (here: its job is final) gives its room
// back: in a spool of one candidate, the deliveries after it take the room
// without waiting.
func TestSpoolRoomIsGivenBackWhenNothingRuns(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t)
		b.onDisk(spoolMax, spoolMax)
		_, msg := b.create(t, "job-42", nil)
		require.NoError(t, b.worker(lines("done")).Handle(invocation(t, "req-1", time.Minute), msg))
		for i := range 3 {
			require.NoError(t, b.worker(mustNotRun(t)).Handle(invocation(t, fmt.Sprintf("req-again-%d", i), time.Minute), msg))
		}
		require.Empty(t, b.logs.find("waited for spool room"))
		require.Empty(t, b.logs.find("no spool room"))
	})
}

// A lane given spool room claims only if at least the claim margin
// (Config.ClaimMargin, default fifo.DefaultDeadlineMargin) remains before
// its context's deadline: with exactly the margin left it claims and
// runs; with one tick less it gives the room back and returns
// candidate.ErrSpoolBusy, nothing claimed, so the job keeps its generation
// for the next delivery. A lane that did not wait is not judged: fifo has
// judged its start already.
func TestALaneGivenRoomLateClaimsOnlyWithTheMarginLeft(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		margin time.Duration // Config.ClaimMargin; 0 is the default
		left   time.Duration // before the deadline when the room comes
		claims bool
	}{
		"default, exactly the margin": {left: fifo.DefaultDeadlineMargin, claims: true},
		"default, a tick less":        {left: fifo.DefaultDeadlineMargin - time.Nanosecond},
		"set, exactly the margin":     {margin: 5 * time.Second, left: 5 * time.Second, claims: true},
		"set, a tick less":            {margin: 5 * time.Second, left: 5*time.Second - time.Nanosecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b, created, msg, held := fullSpool(t)
				ctx := invocation(t, "req-1", time.Minute)
				deadline, _ := ctx.Deadline()
				w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, lines("done")),
					Logger: slog.New(b.logs), ClaimMargin: tc.margin})
				done := make(chan error, 1)
				go func() { done <- w.Handle(ctx, msg) }()
				time.Sleep(time.Until(deadline) - tc.left)
				held.Release()
				err := <-done

				if tc.claims {
					require.NoError(t, err)
					job := b.get(t, "job-42")
					require.Equal(t, jobs.StatusCompleted, job.Status)
					require.EqualValues(t, 1, job.Generation)
					return
				}
				b.requireUnclaimed(t, err, created)
				require.Equal(t, slog.LevelWarn, b.logs.one(t, "spool room came too late").Level)
				room, err := b.candidates.Reserve(t.Context())
				require.NoError(t, err)
				require.False(t, room.Waited(), "the late room was given back")
				room.Release()
			})
		})
	}
}

// Two lanes of one batch, a spool of one candidate: the hog keeps the room
// until 50 ms before its context's deadline. The other lane, given the
// room then, does not claim (a claim would run a task that cannot finish,
// and the lease, which outlives the invocation, would make the next
// delivery a takeover: a generation lost for another lane's size). Its
// command comes back and runs as generation 1.
func TestALaneGivenRoomAtTheDeadlineLosesNoGeneration(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t)
		b.onDisk(spoolMax, spoolMax)
		_, hog := b.create(t, "job-hog", nil)
		created, other := b.create(t, "job-other", nil)
		work := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
			if in.Job.ID == "job-hog" {
				deadline, _ := ctx.Deadline()
				time.Sleep(time.Until(deadline) - 50*time.Millisecond)
				return task.Output{Items: 1}, writeN(in.Out, 10)
			}
			select { // 100 ms of work
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return task.Output{}, ctx.Err()
			}
			return task.Output{Items: 1}, writeN(in.Out, 10)
		})
		proc, err := fifo.New(fifo.Config{Handler: b.worker(work).Handle})
		require.NoError(t, err)
		resp, err := proc.Process(invocation(t, "req-1", time.Minute), events.SQSEvent{Records: []events.SQSMessage{hog, other}})
		require.NoError(t, err)
		require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: other.MessageId}}, resp.BatchItemFailures)
		require.Equal(t, jobs.StatusCompleted, b.get(t, "job-hog").Status)
		require.Equal(t, created, b.get(t, "job-other"), "nothing claimed")

		b.clock.Advance(2 * time.Minute)
		require.NoError(t, b.worker(lines("done")).Handle(invocation(t, "req-2", time.Minute), other))
		job := b.get(t, "job-other")
		require.Equal(t, jobs.StatusCompleted, job.Status)
		require.EqualValues(t, 1, job.Generation, "the wait cost no generation")
	})
}
