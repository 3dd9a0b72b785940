package worker

import "errors"

var (
	// ErrInvalidConfig is wrapped by the error of New (and
	// Config.Validate) for a configuration that cannot work; the message
	// names the field.
	ErrInvalidConfig = errors.New("worker: invalid configuration")

	// ErrNoLambdaContext: Handle's context carries no Lambda context (or
	// one without a request id), so no attempt id can be made. The worker
	// never invents one: an attempt id that two invocations could share
	// would let both hold one generation.
	ErrNoLambdaContext = errors.New("worker: no Lambda request id in the context")

	// ErrFenced is wrapped by the error task.Input.Progress returns once
	// the attempt has lost the job: a renewal was refused because another
	// generation took over (jobs.ErrStaleGeneration) or the job ended
	// (jobs.ErrFinal). The error also wraps the refusal.
	ErrFenced = errors.New("worker: attempt fenced")

	// ErrAttemptOver is returned by task.Input.Progress called after the
	// task's Run returned.
	ErrAttemptOver = errors.New("worker: progress reported after the task returned")

	// ErrGroupMismatch: the message's group is not its command's job. Per-job
	// order holds only inside the job's own group, so such a command is
	// refused permanently.
	ErrGroupMismatch = errors.New("worker: message group is not the command's job")
)
