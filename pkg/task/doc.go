// Package task is what a user of the service implements: a Task, the work
// a job runs; its input (the job's id, tenant, spec and generation, the
// attempt's id, where to write the result, how to report progress) and
// its output; and the Registry that names the tasks, from which each job
// picks its own.
//
// Invariants:
//   - A job names its task in its spec: spec[SpecTask] ("task"). A spec
//     without it runs the registry's default task; a name nobody
//     registered is refused with ErrUnknownTask, by intake (400
//     unknown_task, no job created) and by the worker (the job fails for
//     good with code unknown_task, nothing run).
//   - A spec is checked by the task it names, and by that task only
//     (Registry.ValidateSpec, or a Checker of the tasks' SpecChecks, which
//     answers the same without the tasks): intake refuses a spec its task
//     would refuse (400 invalid_spec), so the general limits of a spec (its
//     size, its keys' syntax) are intake's and the meaning of each key is
//     its task's.
//   - The result's extension is the task's choice for the job (Task.Ext is
//     asked with the job, before Run), so one task may write several
//     formats, chosen by the spec.
//   - A task is told nothing of leases, generations' fences or the
//     result's upload: the worker fences every write of the attempt and
//     uploads Input.Out only if Run returned nil and the attempt still
//     holds the job. A task's only duties are to write its result to
//     Input.Out, to return when its context ends, and to say with its
//     error whether trying again can help (fifo.Permanent: it cannot).
//   - A task that panics, in Run or in Ext, is never accepted: pkg/fifo
//     recovers the panic as the message's failure (Panicked), so nothing
//     is uploaded, the command is received again, and each delivery takes
//     the job over with a new generation until the recovery policy fails
//     it (recovery_exhausted). Return an error instead.
//
// # Adding a task
//
// A task is a type with three methods, ValidateSpec, Ext and Run, and a
// name in the Registry the worker is given (worker.Config.Tasks). Its spec
// check is also a SpecCheck on its own, a function of the spec alone, for
// the Checker that intake is given: intake builds no task, so it needs
// none of their clients or settings. In this repository, the service's
// tasks live in internal/app/tasks, and adding one touches three files:
//
//  1. internal/app/tasks/<name>.go: the task. Its spec check is a plain
//     function, which ValidateSpec calls: it refuses every key the task
//     does not read (a misspelt key would otherwise be ignored) and checks
//     the values; its message names the key, not the task (the registry
//     prefixes the name), and intake sends it to the client. Ext returns
//     the extension of its result. Run holds the spec to the same check,
//     writes the result to in.Out, calls in.Progress after each page or
//     batch, returns fifo.Permanent for what no retry can fix (a spec it
//     cannot run, data it cannot write), and a plain error for what may
//     pass (a throttled read). The word count (wordcount.go) is the worked
//     example: it reads the same Articles table as the export.
//  2. internal/app/tasks/<name>_test.go: its tests, on the in-memory
//     Articles table the export's tests use, and through the worker's
//     fenced path on memory stores.
//  3. One line in internal/app/tasks' registry (registry.go): the task's
//     name, the spec keys it reads, its spec check and its constructor.
//     The export, the task of a spec without "task", refuses the keys the
//     other lines declare and it does not read, so that a spec that meant
//     the new task and left out its "task" is refused rather than run as
//     an export: nothing else to edit for that.
//
// A task that reads only what the worker is already given (the Articles
// table) needs nothing else: intake, the wiring and the template do not
// change, and a client creates a job of the new task with
// {"spec":{"task":"<name>",...}}. A task that needs another resource (a
// bucket, another table) also adds, for that resource only: its field to
// internal/app/tasks.Config (with its check in Config.Validate), its
// setting in the worker's wiring (internal/lambdawire's Worker) and, in
// template.yaml, the resource, its variable in WorkerFunction's
// environment and the worker role's access to it. Intake still changes
// not at all.
//
// The worker and intake are deployed in that order (template.yaml's
// DependsOn): a job of a new task is accepted only once the worker runs it.
// The Example below is a whole task, checked, registered and run.
package task
