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

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/worker"
)

// spoolMax is the tests' MaxCandidateBytes: small, so that a test fills a
// spool of a few of them.
const spoolMax = 64 << 10

// onDisk makes the bundle's candidates spool to a disk of budget bytes,
// bounded as the worker's wiring bounds them: at most maxSize bytes a
// candidate, and the disk's size as the budget.
func (b *testBundle) onDisk(maxSize, budget int64) *candidatetest.Disk {
	disk := candidatetest.NewDisk(budget)
	b.candidates = candidate.New(b.s3, testBucket, candidate.WithSpool(disk),
		candidate.WithMaxSize(maxSize), candidate.WithSpoolBudget(budget))
	return disk
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
		task := worker.TaskFunc("txt", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			switch in.Job.ID {
			case "job-hog":
				if err := writeN(in.Out, spoolMax); err != nil {
					return worker.Output{}, err
				}
				for range others {
					select {
					case <-othersDone:
					case <-ctx.Done():
						return worker.Output{}, ctx.Err()
					}
				}
				return worker.Output{Items: 1}, nil
			case "job-runaway":
				for {
					if err := writeN(in.Out, 4<<10); err != nil {
						return worker.Output{}, fmt.Errorf("export: %w", err) // retryable, as the reference task wraps it
					}
				}
			default:
				defer func() { othersDone <- struct{}{} }()
				if err := writeN(in.Out, spoolMax/2); err != nil {
					return worker.Output{}, err
				}
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return worker.Output{}, ctx.Err()
				}
				return worker.Output{Items: 1}, nil
			}
		})
		resp, err := fifo.New(b.worker(task).Handle).Process(invocation(t, "req-1", time.Minute), events.SQSEvent{Records: batch})
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
		b := setup(t)
		b.onDisk(spoolMax, spoolMax)
		created, msg := b.create(t, "job-42", nil)
		held, err := b.candidates.Reserve(t.Context())
		require.NoError(t, err)

		err = b.worker(mustNotRun(t)).Handle(invocation(t, "req-1", time.Minute), msg)
		require.ErrorIs(t, err, candidate.ErrSpoolBusy)
		require.False(t, fifo.IsPermanent(err))
		require.Equal(t, created, b.get(t, "job-42"), "nothing claimed, nothing written")
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
			task := worker.TaskFunc("txt", func(_ context.Context, in worker.Input) (worker.Output, error) {
				return worker.Output{Items: 1}, tc.wrap(writeN(in.Out, tc.size))
			})
			require.NoError(t, b.worker(task).Handle(invocation(t, "req-1", time.Minute), msg), "acknowledged")
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
	task := worker.TaskFunc("txt", func(context.Context, worker.Input) (worker.Output, error) {
		return worker.Output{}, fmt.Errorf("export of 9 GB: %w", candidate.ErrTooLarge)
	})
	require.NoError(t, b.worker(task).Handle(invocation(t, "req-1", time.Minute), msg))
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
