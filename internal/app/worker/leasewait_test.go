package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// heldLease returns, inside a synctest bubble, a bundle whose store reads
// the bubble's clock (so that the worker's timer and the store's leases
// agree), job-42 claimed by attempt-a until now+20s (a dead attempt's
// lease), and that lease's end as the store reports it.
func heldLease(t *testing.T) (*testBundle, jobs.Job, time.Time) {
	t.Helper()
	b := setup(t)
	store, err := jobs.NewMemoryStore(jobs.Config{Now: time.Now})
	require.NoError(t, err)
	b.store, b.jobs = store, store
	job, _ := b.create(t, "job-42", nil)
	held, err := store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: time.Now().Add(20 * time.Second)})
	require.NoError(t, err)
	return b, job, held.LeaseExpiresAt
}

// startedAt is a task that notes when it ran, on the worker's clock.
func startedAt(at *time.Time) task.Task {
	return task.Func("txt", func(_ context.Context, in task.Input) (task.Output, error) {
		*at = time.Now()
		_, err := in.Out.Write([]byte("done\n"))
		return task.Output{Items: 1}, err
	})
}

// A Kafka record whose claim is refused on another attempt's lease waits
// for it to end (plus LeaseEndSlack) and claims again, if it can still
// start then: the lease's end plus the slack is at most its deadline
// minus the claim margin, the rule a lane given spool room late is held
// to. At exactly that bound it waits and takes the job over (generation
// 2); with a deadline one nanosecond earlier it fails the record at once,
// as before, nothing written and no time spent.
func TestARecordWaitsForALeaseEndingBeforeItsLastStart(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		margin time.Duration // Config.ClaimMargin; 0 is the default
		early  time.Duration // how much earlier the deadline is than the bound
		waits  bool
	}{
		"default margin, at the bound":     {waits: true},
		"default margin, a tick earlier":   {early: time.Nanosecond},
		"margin of 5 s, at the bound":      {margin: 5 * time.Second, waits: true},
		"margin of 5 s, a tick earlier":    {margin: 5 * time.Second, early: time.Nanosecond},
		"default margin, well before":      {early: -time.Minute, waits: true},
		"default margin, a second earlier": {early: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b, _, until := heldLease(t)
				before := b.get(t, "job-42")
				margin := tc.margin
				if margin == 0 {
					margin = worker.DefaultClaimMargin
				}
				deadline := until.Add(worker.LeaseEndSlack + margin - tc.early)
				ctx := invocation(t, "req-1", time.Until(deadline))
				var ran time.Time
				w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, startedAt(&ran)),
					Logger: slog.New(b.logs), ClaimMargin: tc.margin})
				start := time.Now()

				err := w.HandleRecord(ctx, commandRecord(t, before, 0, 7))

				if !tc.waits {
					require.ErrorIs(t, err, jobs.ErrLeaseHeld)
					require.False(t, kafka.IsPermanent(err))
					require.True(t, start.Equal(time.Now()), "no wait")
					require.Equal(t, before, b.get(t, "job-42"), "nothing written")
					require.Empty(t, b.logs.find("waiting for its lease to end"))
					return
				}
				require.NoError(t, err)
				require.True(t, until.Add(worker.LeaseEndSlack).Equal(ran), "claimed again once the lease had ended, at %v", ran)
				job := b.get(t, "job-42")
				require.Equal(t, jobs.StatusCompleted, job.Status)
				require.EqualValues(t, 2, job.Generation, "a takeover of the dead attempt's generation")
				line := b.logs.one(t, "waiting for its lease to end")
				require.Contains(t, fmt.Sprint(line.Attrs["reason"]), "by attempt-a (g1)")
				require.Equal(t, until.Add(worker.LeaseEndSlack).Sub(start), line.Attrs["wait"])
			})
		})
	}
}

// On SQS the worker never waits: the visibility timeout is the wait, and
// a lane that waited past it would have its message received again beside
// it. The same lease that a record waits for fails the message at once.
func TestAMessageDoesNotWaitForALease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, until := heldLease(t)
		before := b.get(t, "job-42")
		ctx := invocation(t, "req-1", time.Until(until.Add(time.Minute)))
		start := time.Now()

		err := b.worker(mustNotRun(t)).Handle(ctx, commandMessage(t, created, "msg-1"))

		require.ErrorIs(t, err, jobs.ErrLeaseHeld)
		require.False(t, fifo.IsPermanent(err))
		require.True(t, start.Equal(time.Now()), "no wait")
		require.Equal(t, before, b.get(t, "job-42"))
	})
}

// A wait that the invocation's context ends returns at once with the
// context's error, retryable, nothing claimed, and leaves nothing running
// (goleak and the bubble check).
func TestTheLeaseWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, until := heldLease(t)
		before := b.get(t, "job-42")
		ctx, cancel := context.WithCancel(invocation(t, "req-1", time.Until(until.Add(time.Minute))))
		done := make(chan error, 1)
		go func() { done <- b.worker(mustNotRun(t)).HandleRecord(ctx, commandRecord(t, created, 0, 7)) }()
		synctest.Wait() // the worker waits for the lease
		time.Sleep(5 * time.Second)
		cancelled := time.Now()
		cancel()

		err := <-done
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, kafka.IsPermanent(err))
		require.True(t, cancelled.Equal(time.Now()), "returned when the context ended")
		require.Equal(t, before, b.get(t, "job-42"), "nothing claimed")
	})
}

// A record waits once: when another attempt took the job over during the
// wait, the claim made again is refused and the record fails at once,
// though that attempt's lease too would end in time.
func TestARecordWaitsForALeaseOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, until := heldLease(t)
		w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, mustNotRun(t))})
		ctx := invocation(t, "req-1", time.Until(until.Add(time.Minute)))
		done := make(chan error, 1)
		go func() { done <- w.HandleRecord(ctx, commandRecord(t, created, 0, 7)) }()
		synctest.Wait()
		time.Sleep(time.Until(until) + time.Millisecond) // the lease has ended; the worker still waits
		other, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-c", LeaseUntil: time.Now().Add(2 * time.Second)})
		require.NoError(t, err)

		err = <-done
		var held *jobs.LeaseHeldError
		require.ErrorAs(t, err, &held)
		require.Equal(t, "attempt-c", held.Owner)
		require.True(t, until.Add(worker.LeaseEndSlack).Equal(time.Now()), "no second wait")
		require.Equal(t, other, b.get(t, "job-42"))
	})
}

// The wait is measured on Config.Now and made by Config.Sleep, as a
// simulation that owns the clock runs it: Sleep is asked for exactly the
// time to the lease's end plus the slack.
func TestTheLeaseWaitUsesTheConfiguredClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, _ := b.create(t, "job-42", nil)
	until := b.clock.Now().Add(10 * time.Second)
	_, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-a", LeaseUntil: until})
	require.NoError(t, err)
	var asked []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		asked = append(asked, d)
		b.clock.Advance(d)
		return ctx.Err()
	}
	w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, lines("done")), Now: b.clock.Now, Sleep: sleep})

	require.NoError(t, w.HandleRecord(invocation(t, "req-1", time.Minute), commandRecord(t, created, 0, 7)))
	require.Equal(t, []time.Duration{10*time.Second + worker.LeaseEndSlack}, asked)
	require.Equal(t, jobs.StatusCompleted, b.get(t, "job-42").Status)

	// A Sleep that fails is the record's error, and nothing is claimed.
	created, _ = b.create(t, "job-43", nil)
	_, err = b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-43", AttemptID: "attempt-a", LeaseUntil: b.clock.Now().Add(10 * time.Second)})
	require.NoError(t, err)
	before := b.get(t, "job-43")
	broken := errors.New("sleep broke")
	w = mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, mustNotRun(t)), Now: b.clock.Now,
		Sleep: func(context.Context, time.Duration) error { return broken }})
	err = w.HandleRecord(invocation(t, "req-2", time.Minute), commandRecord(t, created, 0, 8))
	require.ErrorIs(t, err, broken)
	require.Equal(t, before, b.get(t, "job-43"))
}

// A record waiting for another attempt's lease holds no spool room while
// it waits: with a spool budget of one candidate, another lane gets the
// room at once and runs, instead of failing with candidate.ErrSpoolBusy
// when its own deadline comes; the waiting record takes room again once
// the lease has ended, and runs.
func TestTheLeaseWaitHoldsNoSpoolRoom(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, until := heldLease(t)
		b.onDisk(spoolMax, spoolMax)
		other, _ := b.create(t, "job-43", nil)
		w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, lines("done"))})
		waiting := make(chan error, 1)
		go func() {
			waiting <- w.HandleRecord(invocation(t, "req-1", time.Until(until.Add(time.Minute))), commandRecord(t, created, 0, 7))
		}()
		synctest.Wait() // the first record waits for the lease
		start := time.Now()

		err := w.HandleRecord(invocation(t, "req-2", 10*time.Second), commandRecord(t, other, 1, 3))

		require.NoError(t, err, "the other lane got the room while the first waited")
		require.True(t, start.Equal(time.Now()), "no wait for room")
		require.Equal(t, jobs.StatusCompleted, b.get(t, "job-43").Status)
		require.NoError(t, <-waiting)
		require.True(t, until.Add(worker.LeaseEndSlack).Equal(time.Now()), "the first record claimed again once the lease had ended")
		job := b.get(t, "job-42")
		require.Equal(t, jobs.StatusCompleted, job.Status)
		require.EqualValues(t, 2, job.Generation)
	})
}

// The room a record takes again after its lease wait is given back when
// the claim made again is refused (another attempt took the job over
// during the wait): with a spool budget of one candidate, the room is
// free once the record has failed, not held for the life of the process.
func TestTheRoomTakenAfterALeaseWaitIsGivenBackWhenTheClaimIsRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, created, until := heldLease(t)
		b.onDisk(spoolMax, spoolMax)
		w := mustNew(t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(t, mustNotRun(t))})
		done := make(chan error, 1)
		go func() {
			done <- w.HandleRecord(invocation(t, "req-1", time.Until(until.Add(time.Minute))), commandRecord(t, created, 0, 7))
		}()
		synctest.Wait()
		time.Sleep(time.Until(until) + time.Millisecond) // the lease has ended; the worker still waits
		_, err := b.store.Claim(t.Context(), jobs.ClaimRequest{JobID: "job-42", AttemptID: "attempt-c", LeaseUntil: time.Now().Add(2 * time.Second)})
		require.NoError(t, err)
		require.ErrorIs(t, <-done, jobs.ErrLeaseHeld)

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		room, err := b.candidates.Reserve(ctx)
		require.NoError(t, err, "the spool's one room was given back")
		require.False(t, room.Waited())
		room.Release()
	})
}
