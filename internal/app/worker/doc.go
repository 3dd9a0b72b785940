// Package worker runs one job.run command end to end: it claims the job,
// runs the job's task (pkg/task) into the attempt's own candidate object,
// and accepts the candidate as the job's result. Worker.Handle is a
// fifo.Handler, and Worker.HandleRecord a kafka.Handler for the same
// command delivered as a Kafka record (see "On Kafka" below), so a batch's
// commands run one at a time per job and jobs run in parallel:
//
//	w, err := worker.New(worker.Config{Jobs: store, Candidates: candidates, Tasks: registry})
//	if err != nil {
//		return err
//	}
//	p, err := fifo.New(fifo.Config{Handler: w.Handle, DeadLetter: &fifo.DeadLetterQueue{Client: sqsClient, QueueURL: dlqURL}})
//	if err != nil {
//		return err
//	}
//	lambda.Start(p.Process)
//
// Invariants:
//   - An attempt is one delivery of one command in one invocation; its id is
//     "<aws_request_id>_<message_id>" (AttemptID), or for a Kafka record
//     "<aws_request_id>_<topic digest>-<partition>-<offset>"
//     (transport.Delivery.Ref). Without a Lambda request id in the context
//     Handle refuses to run rather than invent one: the request id alone
//     is shared by every message of a batch.
//   - The claim decides whether a command runs. A final job (completed,
//     failed, cancelled, or failed by this very claim under the recovery
//     policy) acknowledges the command; a live lease of another attempt
//     fails the message, so its group waits and the command comes back (on
//     Kafka, a lease that ends in time is waited for first: On Kafka); a
//     command for no job, or for a job of another tenant, is permanent. The
//     command's tenant is part of the claim's condition
//     (jobs.ClaimRequest.Tenant), so a command naming another tenant is
//     refused before it takes a lease or uses up a generation; the store
//     answers it as it answers a missing job (jobs.ErrNotFound).
//   - The job's spec picks its task from Config.Tasks (task.SpecTask, or
//     the registry's default). A spec that names no task of the registry
//     fails the job for good (CodeUnknownTask), after the claim and before
//     anything runs: every delivery would find the same spec.
//   - The result's extension is the task's choice for the job: Ext is
//     asked with the job, before Run. One outside the candidate key's rule
//     fails the job (CodeTaskFailed) without running the task.
//   - The lease ends at the invocation's deadline plus LeaseSkew
//     (jobs.LeaseEnd); the task's context ends before that deadline
//     (pkg/fifo's reserve), so a takeover never races a live task.
//   - Every write after the claim is fenced on the claim's generation, the
//     version the attempt's own last write produced and the attempt id:
//     each progress report is a renewal, and the accept or failure carries
//     the latest version.
//   - A candidate is written only to this attempt's key
//     (candidates/<job>/g<generation>/<attempt>.<ext>), uploaded only when
//     the task succeeded and the attempt was not fenced. The job store
//     accepts only that key (jobs.ValidateResultKey): a key of another job,
//     generation or attempt is refused and nothing is accepted.
//   - A refused write (jobs.ErrStaleGeneration, jobs.ErrFinal) ends the
//     attempt and acknowledges the command: another generation or the end
//     of the job has the last word. A refused renewal cancels the task and
//     nothing is uploaded; a refused accept leaves the uploaded candidate
//     as an orphan for the sweeper, logged at WARN with its key.
//   - A write without an answer (a timeout, a lost response) ends the
//     attempt with an error: the attempt no longer knows its version, so the
//     command is received again and the next claim decides.
//   - The task runs on Handle's goroutine and Progress refuses to write once
//     Run has returned: nothing of an attempt outlives Handle.
//   - Room for the candidate in the spool is taken before the claim
//     (candidate.Store.Reserve: the store's whole max size), so one lane
//     never fails another's writes for space, and a claimed attempt never
//     waits for room. A lane that finds none before its context ends, or
//     is given it after a wait with less than Config.ClaimMargin left
//     before its context's deadline, has claimed nothing: the command comes
//     back, and the job has lost no generation (see The spool, below).
//   - A candidate over the store's max size (candidate.ErrTooLarge) fails
//     its job for good with CodeCandidateTooLarge, whatever the task made
//     of the refused write: the same content is as large on every try, and
//     retrying it would only end in recovery_exhausted.
//
// What Handle returns for each outcome (nil acknowledges the message, an
// error has it received again, fifo.Permanent sends it to the dead-letter
// queue; HandleRecord returns the same with kafka.Permanent in its place):
//
//	body not a command (outbox.ErrMalformed), group ≠ job   fifo.Permanent
//	(Kafka: key ≠ job, a null key included)
//	no Lambda request id, no deadline                      error
//	no spool room before ctx ends (candidate.ErrSpoolBusy) error; nothing claimed
//	room after a wait, < ClaimMargin left (ErrSpoolBusy)   error; room given back, nothing claimed
//	claim: job final (ErrFinal, *FinalError)               nil
//	claim: lease held by another attempt (ErrLeaseHeld)    error (Kafka: after one wait, if its lease ends in time)
//	claim: no such job, or the job of another tenant       fifo.Permanent
//	       (ErrNotFound; nothing written)
//	spec names no task of the registry                     Fail(unknown_task) → nil (refused: nil; failed: error)
//	the task's extension for the job is invalid            Fail(task_failed) → nil (refused: nil; failed: error)
//	progress renewal refused (stale or final)              nil; task cancelled, nothing uploaded
//	progress renewal failed otherwise                      error; task cancelled, nothing uploaded
//	candidate over the max size (candidate.ErrTooLarge)    Fail(candidate_too_large) → nil (refused: nil; failed: error)
//	task: fifo.Permanent error, or negative Items          Fail(task_failed) → nil (refused: nil; failed: error)
//	task: any other error, ctx.Err() included              error; nothing uploaded
//	upload failed                                          error
//	accept: wins                                           nil
//	accept: stale generation or final                      nil; candidate orphaned, logged
//	accept: failed otherwise                               error
//
// A retried command is a new attempt: a new claim, a new generation when
// the previous lease has ended, and a new candidate key. The recovery
// policy's MaxGenerations (jobs.Config's Recovery) bounds how often a job is
// taken over.
//
// # On Kafka
//
// HandleRecord takes the command from a Kafka record published by the
// relay under its job's id (internal/app/transport says what each
// transport carries) and runs the same code as Handle. Four things
// differ:
//   - The record's key must be the command's job, always: the key picks
//     the record's partition and its lane (pkg/kafka), so a record under
//     another key, or a null one, would run beside its job's own commands
//     and out of their order. It is refused for good (ErrGroupMismatch,
//     kafka.Permanent), as an SQS message in another job's group is; an
//     SQS message without a group attribute is still not checked.
//   - The attempt id's second half is the record's topic digest,
//     partition and offset (transport.Delivery.Ref): a record's
//     "<topic>-<partition>@<offset>", its message_id in the logs, is not
//     an id (a topic may hold a dot and be 249 bytes long).
//   - A record carries no receive count. The worker reads none on either
//     transport: the recovery policy counts takeovers in the job store,
//     whatever delivered the command. On SQS the quarantine counts
//     receives (QUARANTINE_AFTER_RECEIVES); on Kafka it counts a keyed
//     record's failed attempts (QUARANTINE_AFTER_ATTEMPTS, docs/KAFKA.md),
//     and the event source mapping's MaximumRetryAttempts and on-failure
//     destination bound a failing record (internal/lambdawire.WorkerKafka).
//   - A claim refused on another attempt's lease waits for it, once, when
//     it ends in time, and claims again. Kafka has no visibility timeout:
//     when an invocation times out or crashes, the mapping retries its
//     batch at once (AWS documents no wait before a retry), while the dead
//     attempt's lease runs on to its deadline plus LeaseSkew; without the
//     wait each retry would find the lease live and fail the record again,
//     and a simple crash would use up the retries (or the quarantine's
//     attempts) and park a healthy job's command or send it to the
//     on-failure destination. The rule: the worker waits (Config.Sleep,
//     measured on Config.Now) when the lease's end (LeaseHeldError.Until)
//     plus LeaseEndSlack is at most its context's deadline minus
//     ClaimMargin, the least time a late claim must have, as for a lane
//     given spool room late; then it claims again, a takeover. A lease
//     that ends later, or a second refusal (another attempt took the job
//     over meanwhile), fails the record as before. The wait holds no
//     spool room: the lane gives its room back before it and takes room
//     again after it, under the rule for room that comes late, so a lane
//     that only sleeps does not keep others from running; the room is
//     given back whatever the claim made again answers. The wait ends with
//     the context (its error, nothing claimed). A claim made with little more than the margin left can
//     still time out and be taken over by the next retry, a generation
//     spent instead of the retries. On SQS the worker never waits: the
//     visibility timeout is that wait, and the lease has normally ended
//     when the message comes back (a visibility timeout shorter than the
//     lease is a misconfiguration); a lane waiting past its message's
//     visibility timeout would have the message received again beside it.
//
// # Adding a task
//
// The worker runs any task.Task; it needs no change for a new one. A task
// is written against pkg/task alone (its package doc, "Adding a task",
// has a whole one, runnable), registered under a name in the registry the
// worker is given, and picked by a job whose spec names it. This
// service's tasks and their registry are internal/app/tasks; the Example
// of this package runs a job through the worker with a registry of two
// tasks.
//
// # The spool
//
// Every lane of a batch (up to ten, of any tenants) spools its candidate
// to the same directory, /tmp on Lambda, whose size is the function's
// ephemeral storage. The candidate store's budget (candidate.Config.SpoolBudget)
// and max size (candidate.Config.MaxSize) share it out: each attempt reserves
// the max size before its claim, so budget / max size lanes spool at once
// and the others wait, unclaimed. The max size is the permanent bound,
// MaxCandidateBytes; the budget only decides how many lanes spool at once.
//
// Where the wait sits is chosen for what a wait that meets the deadline
// costs. After the claim it would cost a generation: the lease outlives the
// invocation and the next delivery is a takeover, and MaxGenerations of
// those fail the job (recovery_exhausted) though nothing was wrong with it.
// Before the claim it costs a receive of the command, as a lease held by
// another attempt does, and no generation. Receives are finite too (the
// quarantine parks a command at QUARANTINE_AFTER_RECEIVES), so the price
// of this design, a lane reserving the whole max size however small its
// candidate, is paid in space instead: the deployment sizes the ephemeral
// storage for ten lanes of MaxCandidateBytes (template.yaml's defaults
// do, and the wiring refuses to start with fewer), and then no lane ever
// waits. A lane given room after a wait claims only if at least
// Config.ClaimMargin (default pkg/fifo's least time for a message to
// start, DefaultClaimMargin) is left before its context's deadline, as a
// lane's later message starts only with fifo's margin left; with less it
// gives the room back unclaimed, since a claim would run a task that
// cannot finish and the next delivery would take the job over. A task
// that needs more than the margin and is given room with little more
// left can still end retryably and be taken over: the margin is fifo's
// rule for any late start, and a deployment sized for ten lanes never
// waits.
//
// Lambda does not tell a function its ephemeral storage size, so the
// wiring (internal/lambdawire.Worker) takes it from the environment,
// EPHEMERAL_STORAGE_MB, which template.yaml sets from the same parameter as
// the function's EphemeralStorage, rather than measure /tmp with statfs at
// cold start: the setting is the same wherever the function runs (a local
// run's /tmp is the host's, shared, and its size means nothing), can be
// checked against MAX_CANDIDATE_BYTES before the first command, and cannot
// change under a running function. The budget is 90% of it, the rest left
// to the file system's own use.
package worker
