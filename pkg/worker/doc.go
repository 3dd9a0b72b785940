// Package worker runs one job.run command end to end: it claims the job,
// runs the Task into the attempt's own candidate object, and accepts the
// candidate as the job's result. Worker.Handle is a fifo.Handler, so a
// batch's commands run one at a time per job and jobs run in parallel:
//
//	w := worker.New(worker.Config{Jobs: store, Candidates: candidates, Task: task})
//	lambda.Start(fifo.New(w.Handle, fifo.WithDeadLetterQueue(sqsClient, dlqURL)).Process)
//
// Invariants:
//   - An attempt is one delivery of one command in one invocation; its id is
//     "<aws_request_id>_<message_id>" (AttemptID). Without a Lambda request
//     id in the context Handle refuses to run rather than invent one: the
//     request id alone is shared by every message of a batch.
//   - The claim decides whether a command runs. A final job (completed,
//     failed, cancelled, or failed by this very claim under the recovery
//     policy) acknowledges the command; a live lease of another attempt
//     fails the message, so its group waits and the command comes back; a
//     command for no job, or for a job of another tenant, is permanent. The
//     command's tenant is part of the claim's condition
//     (jobs.ClaimRequest.Tenant), so a command naming another tenant is
//     refused before it takes a lease or uses up a generation; the store
//     answers it as it answers a missing job (jobs.ErrNotFound).
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
//
// What Handle returns for each outcome (nil acknowledges the message, an
// error has it received again, fifo.Permanent sends it to the dead-letter
// queue):
//
//	body not a command (outbox.ErrMalformed), group ≠ job   fifo.Permanent
//	no Lambda request id, no deadline                      error
//	claim: job final (ErrFinal, *FinalError)               nil
//	claim: lease held by another attempt (ErrLeaseHeld)    error
//	claim: no such job, or the job of another tenant       fifo.Permanent
//	       (ErrNotFound; nothing written)
//	progress renewal refused (stale or final)              nil; task cancelled, nothing uploaded
//	progress renewal failed otherwise                      error; task cancelled, nothing uploaded
//	task: fifo.Permanent error, or negative Items          Fail(task_failed) → nil (refused: nil; failed: error)
//	task: any other error, ctx.Err() included              error; nothing uploaded
//	upload failed                                          error
//	accept: wins                                           nil
//	accept: stale generation or final                      nil; candidate orphaned, logged
//	accept: failed otherwise                               error
//
// A retried command is a new attempt: a new claim, a new generation when
// the previous lease has ended, and a new candidate key. The recovery
// policy's MaxGenerations (jobs.WithRecovery) bounds how often a job is
// taken over.
package worker
