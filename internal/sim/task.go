package sim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// simTask is the worker's task in the simulation, the default (and only)
// task of its registry. Its output is determined by
// the job and the attempt: a header naming the job, the generation and the
// attempt, then one line per item of the job's spec. It takes itemTime of
// simulated time per item and reports progress every pageSize items. With
// faults on, an attempt may stall (its invocation is suspended while
// other steps run, or the clock runs past its deadline, its lease, or its
// message's visibility timeout), fail transiently, or see its job
// cancelled under it. A job whose spec says
// "fate": "poison" fails permanently on every attempt.
type simTask struct{ w *World }

func (simTask) ValidateSpec(map[string]string) error { return nil }

func (simTask) Ext(task.Job) string { return "txt" }

func (t simTask) Run(ctx context.Context, in task.Input) (task.Output, error) {
	w := t.w
	items := itemsOf(in.Job.Spec)
	if _, err := io.WriteString(in.Out, header(in.Job.ID, in.Job.Generation, in.AttemptID)); err != nil {
		return task.Output{}, err
	}
	stallAt, failAt, cancelAt := -1, -1, -1
	if w.faulty {
		switch r := w.rng.IntN(100); {
		case r < 10:
			stallAt = w.rng.IntN(items + 1)
		case r < 18:
			failAt = w.rng.IntN(items + 1)
		case r < 21:
			cancelAt = w.rng.IntN(items + 1)
		}
	}
	for i := 0; ; i++ {
		if i == stallAt {
			w.stall(ctx)
		}
		if i == cancelAt {
			w.logf("  the job %s is cancelled while %s runs", in.Job.ID, in.AttemptID)
			w.cancel(in.Job.ID, in.Job.Tenant) //nolint:contextcheck // the client's request, in an invocation of its own
		}
		if i == failAt {
			return task.Output{}, fmt.Errorf("sim: %s failed for now", in.AttemptID)
		}
		if i == items {
			break
		}
		if _, err := fmt.Fprintf(in.Out, "item %d\n", i+1); err != nil {
			return task.Output{}, err
		}
		w.clock.Advance(itemTime)
		if n := i + 1; n%pageSize == 0 && n < items {
			if err := in.Progress(ctx, int64(n)); err != nil {
				return task.Output{}, err
			}
		}
	}
	if in.Job.Spec["fate"] == "poison" {
		return task.Output{}, fifo.Permanent(fmt.Errorf("%w: job %s", errPoisonTask, in.Job.ID))
	}
	return task.Output{Items: int64(items)}, nil
}

// stall makes the attempt slow: its invocation is suspended while the
// scheduler goes on with other steps (among them the same command received
// again once its visibility timeout has ended, and taken over), or, outside
// an invocation the scheduler can suspend, the clock runs past the
// deadline, the lease or the visibility timeout at once. Either way the
// attempt then goes on where it was: its later requests are the ones a
// stalled process still has in flight.
func (w *World) stall(ctx context.Context) {
	inv := invocationOf(ctx)
	w.stats.Stalls++
	if w.rng.IntN(3) > 0 && w.yield() {
		return
	}
	left := inv.deadline.Sub(w.clock.Now())
	var d time.Duration
	switch w.rng.IntN(3) {
	case 0:
		d = left + time.Duration(1+w.rng.IntN(10))*time.Second // about when the lease ends
	case 1:
		d = left + time.Duration(30+w.rng.IntN(240))*time.Second // past the lease
	default:
		d = w.visibility() + time.Duration(w.rng.IntN(300))*time.Second // past the visibility timeout
	}
	w.logf("  %s stalls for %s", inv.id, d)
	w.clock.Advance(d)
}

// visibility is the commands' visibility timeout; with Kafka, which has
// none, the template's.
func (w *World) visibility() time.Duration {
	if w.kafka != nil {
		return commandsVisibility
	}
	return w.commands.Visibility
}

// newWorker is the world's worker: every job runs simTask.
func (w *World) newWorker() (*worker.Worker, error) {
	tasks, err := task.NewRegistry(task.RegistryConfig{Tasks: map[string]task.Task{"sim": simTask{w}}, Default: "sim"})
	if err != nil {
		return nil, err
	}
	return worker.New(worker.Config{Jobs: w.jobs, Candidates: w.candidates, Tasks: tasks, Now: w.clock.Now, Sleep: w.sleep})
}

// sleep is the worker's wait for another attempt's lease to end
// (worker.Config.Sleep; on Kafka only): the invocation spends the time,
// and the simulated clock moves on by it.
func (w *World) sleep(ctx context.Context, d time.Duration) error {
	w.logf("  %s waits %s for a lease to end", invocationOf(ctx).id, d)
	w.clock.Advance(d)
	return ctx.Err()
}
