package task

import (
	"context"
	"io"
)

// SpecTask is the job spec key that names the job's task in its Registry.
// A spec without it runs the registry's default task
// (RegistryConfig.Default).
const SpecTask = "task"

// Task is the work a job's command runs. A Task is registered under a
// name in a Registry; a job picks it with its spec's SpecTask. It must be
// safe for concurrent use: the worker runs several jobs at once.
//
// The worker asks, in this order, for each attempt: Ext, with the job,
// for the extension of the attempt's result; then Run, once, with the
// attempt's own candidate as Input.Out. What Run writes there becomes the
// job's result if, and only if, Run returns nil and the attempt's accept
// wins. A panic in either is never accepted (see the package's
// invariants).
//
// Run's error decides what happens to the job:
//   - nil: the candidate is uploaded and accepted.
//   - an error marked with fifo.Permanent (fifo.IsPermanent): the job fails
//     (code task_failed) and the command is acknowledged.
//   - any other error, ctx.Err() included: the command is received again
//     after its visibility timeout, and a later attempt takes the job over
//     with a new generation.
//
// Run must return when ctx ends: the worker cancels it when the attempt
// loses the job, and it ends before the invocation's deadline. It must
// start no goroutine that outlives it.
type Task interface {
	// ValidateSpec reports why the task can never run a job of spec: an
	// error whose message names the field, or nil. Intake asks it before
	// it creates a job, and answers 400 with the message, so a spec the
	// task would refuse is never queued. It must be quick and pure (no
	// I/O, nothing of the task's state): it runs in the API's request, and
	// intake runs it as a SpecCheck, without the task. Run cannot rely on
	// it alone: a job created before its task's rules changed reaches Run
	// unchecked, and Run should fail such a job with a fifo.Permanent
	// error.
	ValidateSpec(spec map[string]string) error
	// Ext is the extension of the job's result, without the dot
	// ([a-z0-9]{1,16}): the candidate store derives the object's content
	// type from it. It is asked with the job, before Run, so a task may
	// choose it from the spec (a format, say); it must be the same for
	// every attempt of a job. An extension outside the rule fails the job
	// (task_failed) without running it.
	Ext(job Job) string
	// Run does the work of one attempt.
	Run(ctx context.Context, in Input) (Output, error)
}

// Job is what a task knows of the job it runs.
type Job struct {
	// ID is the job's id ([A-Za-z0-9_-]{1,128}).
	ID string
	// Tenant is the job's owner, from the job's own item, never from the
	// command that started the attempt. A task reads the tenant's data and
	// no other's.
	Tenant string
	// Spec is the job's parameters, as the client sent them: SpecTask,
	// when present, and the task's own keys, which ValidateSpec checked
	// when the job was created. The task may not change it.
	Spec map[string]string
	// Generation is the attempt's generation: it rises by one each time
	// another attempt takes the job over.
	Generation int64
}

// Input is what an attempt gives its task.
type Input struct {
	// Job is the job the attempt holds.
	Job Job
	// AttemptID is this attempt's id, "<aws_request_id>_<message_id>".
	AttemptID string
	// Out is the attempt's candidate: where the task writes the job's
	// result. Writes after ctx has ended fail, and so does a write past the
	// store's size bound (candidate.ErrTooLarge), which fails the job for
	// good whatever the task returns.
	Out io.Writer
	// Progress records that n items are done: one fenced renewal of the
	// attempt's lease, which the relay publishes as a job.progress event.
	// An error means the attempt can no longer write (it lost the job, or
	// the renewal's outcome is unknown); the task's context is then
	// cancelled and the task should return the error. Progress is safe for
	// concurrent use; calls are serialised, and every call costs a write,
	// so report per page or batch, not per item.
	Progress func(ctx context.Context, n int64) error
}

// Output is what a task reports when it succeeds.
type Output struct {
	// Items is the number of items the result holds. It becomes the job's
	// final progress, recorded by the accept, whatever Progress reported
	// before. It must not be negative: a negative count fails the job.
	Items int64
}

// Func returns a Task that accepts every spec, whose results have the
// extension ext for every job, and whose work is run.
func Func(ext string, run func(ctx context.Context, in Input) (Output, error)) Task {
	return funcTask{ext: ext, run: run}
}

type funcTask struct {
	ext string
	run func(ctx context.Context, in Input) (Output, error)
}

func (funcTask) ValidateSpec(map[string]string) error { return nil }

func (t funcTask) Ext(Job) string { return t.ext }

func (t funcTask) Run(ctx context.Context, in Input) (Output, error) { return t.run(ctx, in) }
