package worker

import (
	"context"
	"io"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Task is the work a job's command runs. The worker calls Run once per
// attempt, on the goroutine of Handle, with the attempt's own candidate as
// Input.Out; what Run writes there becomes the job's result if, and only
// if, Run returns nil and this attempt's accept wins.
//
// Run's error decides what happens to the job:
//   - nil: the candidate is uploaded and accepted.
//   - an error marked with fifo.Permanent (fifo.IsPermanent): the job fails
//     (code CodeTaskFailed) and the command is acknowledged.
//   - any other error, ctx.Err() included: the command is received again
//     after its visibility timeout, and a later attempt takes the job over
//     with a new generation.
//
// Run must return when ctx ends: the worker cancels it when the attempt
// loses the job, and it ends before the invocation's deadline. It must
// start no goroutine that outlives it.
type Task interface {
	// Ext is the extension of the candidate's key, without the dot
	// ([a-z0-9]{1,16}); the candidate store derives the object's content
	// type from it.
	Ext() string
	// Run does the work of one attempt.
	Run(ctx context.Context, in Input) (Output, error)
}

// Input is what an attempt gives its task.
type Input struct {
	// Job is the job as this attempt's claim left it: its ID, Tenant, Spec
	// (the task's parameters), Generation and Version.
	Job jobs.Job
	// AttemptID is this attempt's id, "<aws_request_id>_<message_id>".
	AttemptID string
	// Out is the attempt's candidate. Writes after ctx has ended fail.
	Out io.Writer
	// Progress records that n items are done: one fenced renewal of the
	// attempt's lease, which the relay publishes as a job.progress event.
	// An error wrapping ErrFenced means the attempt has lost the job; the
	// task's context is then cancelled and the task should return. Any other
	// error leaves the attempt's version unknown, so the worker cancels the
	// task too and the command is received again. Progress is safe for
	// concurrent use; calls are serialised, and every call costs a write,
	// so report per page or batch, not per item.
	Progress func(ctx context.Context, n int64) error
}

// Output is what a task reports when it succeeds.
type Output struct {
	// Items is the number of items the candidate holds. It becomes the
	// job's final progress, recorded by the accept, whatever Progress
	// reported before. It must not be negative.
	Items int64
}

// TaskFunc returns a Task whose candidates have extension ext and whose
// work is run.
func TaskFunc(ext string, run func(ctx context.Context, in Input) (Output, error)) Task {
	return funcTask{ext: ext, run: run}
}

type funcTask struct {
	ext string
	run func(ctx context.Context, in Input) (Output, error)
}

func (t funcTask) Ext() string { return t.ext }

func (t funcTask) Run(ctx context.Context, in Input) (Output, error) { return t.run(ctx, in) }
