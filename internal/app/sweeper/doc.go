// Package sweeper does the housekeeping no request path can do: it deletes
// candidate objects nothing can ever accept, it nudges jobs whose command
// was lost, so that no job is stranded, it repairs the projection of a
// final job whose last event was lost, or that events which were not the
// job's moved, so that no view or total stays apart from its job, and it
// measures the gauges the template's alarms watch. It runs on a schedule
// (functions/sweeper), each run bounded in the work it does.
//
// Deletion rules. A candidate of generation g of job J, listed with its
// LastModified, may be deleted only when the object is older than Grace
// and one of these holds for J as read (strongly consistent) after the
// listing:
//   - J is final and the key is not J's result_key: a final job never
//     changes, so nothing will ever select the object.
//   - g is below J's current generation: accept is fenced on the
//     generation, and a job's generation never decreases, so an older
//     generation's candidate can never be accepted (worker A's g1
//     candidate, once B has claimed g2).
//   - J no longer exists: TTL removed it after it was final (its retention,
//     30 days by default), so nothing refers to the object any more, the
//     accepted result included. A job id is never reused by another
//     attempt: candidate keys name the attempt, one invocation's delivery.
//
// Each rule, once true, stays true (the generation only grows, a final job
// never changes, an expired item does not come back with the same
// attempts), so the time between the read and the delete changes nothing.
// Grace is defence in depth and a window for people and tools reading
// fresh objects, not what makes deletion safe.
//
// Invariants:
//   - A candidate of a live job's current generation (or a later one) is
//     never touched, however old it is; neither is a final job's result
//     while the job exists.
//   - An object under candidates/ whose key does not parse as a candidate
//     key is never deleted: it is counted and logged (Report.Unparsable).
//   - A run examines at most MaxItems objects and lists them in key order
//     from a cursor (Cursor: the last key the previous run decided about),
//     so consecutive runs cover the whole bucket and then start again at
//     the beginning. The cursor moves past a key only once the key was
//     decided; when the jobs could not be read it stays, so the next run
//     tries again. The candidates' jobs are read once per run, together
//     (BatchGetItem), however many candidates each has.
//   - A stuck job is nudged, never taken over: a job that is pending, or
//     running on a lease that ended, and whose last transition was before
//     now - StuckAfter, gets Store.Nudge at the generation and version the
//     sweeper read. The store refuses the nudge if anything moved since, and
//     never passes a live lease. A nudged job's last transition is now, so
//     the next run leaves it alone for another StuckAfter; a job that is
//     never claimed is nudged once per StuckAfter (and its command's
//     dead-letter alarm says why).
//   - A stuck job whose commands group the quarantine holds (held, or
//     draining while a redrive runs; Config.Quarantine) is not nudged: its
//     nudge's command would only be parked behind the held one, and its
//     job.requeued event published, once more every StuckAfter. It is
//     counted in Report.Held; the operator's redrive is what moves it. The
//     holds of one listing's jobs are read together (quarantine.Store.Read,
//     a BatchGetItem per 100); when they cannot be read, no job is nudged.
//   - A final job's projection is repaired only from its job item, read
//     strongly consistent after the listing, through the projector's own
//     recovery (projection.RecoverJob); never from anything older, and
//     never by adding a delta of its own (see Repair below).
//   - A gauge is never left out silently. Each run with a FunctionName
//     (not a dry run) logs, as embedded metric format records, how many
//     groups of each queue the quarantine holds (quarantine.MetricHeldGroups,
//     0 included), the repair cursors' lags, and how many of these it could
//     not measure (MetricUnmeasured, 0 included): a count that failed, a
//     lag whose cursor could not be read or that the deadline left
//     unwalked. The template's alarms treat a missing gauge as breaching,
//     so none clears because the measuring stopped.
//   - A job item that does not decode as a job (jobs.UndecodableError)
//     stops nothing: it is logged, counted (Report.Undecodable) and left
//     alone, and the cursors pass it. Its candidates are never deleted:
//     no rule can be applied to a job that cannot be read.
//   - A dry run decides and reports everything and writes nothing: no
//     delete, no nudge, no repair, no cursor, no kept report.
//   - Each other run keeps its report (Config.LastRun: S3LastRun, at
//     LastRunKey beside the cursors) for the operator's console, a run
//     with failed requests included, so that the console shows the last
//     run failed; a report that cannot be kept is one more error of the
//     run.
//   - A run leaves the time it needs to save the cursors and report before
//     its context's deadline: work it could not finish is the next run's.
//   - On a store without a TTL (PostgreSQL), Config.Purgers: each run
//     deletes the rows DynamoDB's TTL would (expired final jobs, intents,
//     the quarantine's tombstones), at most Config.PurgeLimit, counted in
//     Report.Purged; a dry run purges nothing.
//
// # Repair
//
// The relay publishes each transition's event from the Jobs table's
// stream. The stream's event source mapping retries a failing batch
// (MaximumRetryAttempts, 20 in template.yaml) and then gives up, sending
// only a pointer to the on-failure queue, with the rest of the batch. A
// lost event in the middle of a job heals by itself: the next event finds
// the gap, waits, and recovers from the job item (internal/app/projection). A lost
// final event (completed, failed, cancelled) has no next event, and the job
// has left the live index, so no nudge comes either: its view and its
// tenant's totals would stay behind for good. The sweeper closes that hole,
// and the one events that were not the job's (sent to the events queue by
// something other than the relay) can leave: a view or a cursor ahead of
// the job item, or at its version with other content.
//
//   - Which jobs. The Jobs table's sparse "finished" index holds every
//     final job under the key of its final transition (jobs.FinishedKey:
//     time, then id), written by that very transition. Each run lists, in
//     key order, at most MaxItems final jobs after the repair cursor
//     (Config.RepairCursor, an object beside the candidates' cursor) whose
//     final transition was before now - RepairAfter, and reads them
//     together (jobs.BatchGetter: a BatchGetItem per 100). So every final
//     job is checked some RepairAfter after it ended, whatever the table's
//     size: a final job never changes, and a projection once in step stays
//     so as long as only the job's own events reach it (its view is
//     version-gated, its cursor only moves forward). A listing that
//     comes up short has seen every job before the bound and moves the
//     cursor to it (jobs.FinishedBound); otherwise the cursor stays at the
//     last job decided. A request that fails stops the repair at that job,
//     for the next run.
//   - The recheck. The index is eventually consistent, and the key's time
//     comes from the clock of the function that made the job final: a job
//     the index shows more than RepairAfter after its key's time sorts
//     behind a cursor that has already passed it, and the first check
//     never lists it. So each run walks the index a second time, the same
//     way, from a cursor of its own (Config.RecheckCursor) up to
//     now - RecheckAfter (DefaultRecheckAfter, 24 hours): every final job is
//     checked twice, and one the index shows late is found by the recheck
//     as long as it shows within RecheckAfter. That is the bound: a job
//     the index shows later still is never checked. The recheck costs a
//     second check of every job (a listing, a read of the item, of its
//     view and of its cursor), and repairs nothing the first check saw
//     out of step: only a job the index showed late, or one that events
//     which were not the job's reached after the first check;
//     a repair it does make is counted (Report.RepairedOnRecheck) and
//     logged with "walk": "recheck". Both checks are idempotent, so which
//     comes first, or whether one walk overtakes the other, changes
//     nothing. RepairAfter is then how long a lost final event may leave a
//     view behind; neither delay is what makes a repair safe.
//   - How many. Without a RepairBudget, a run lists at most MaxItems
//     final jobs per walk: with the default 1000 and a run every 5
//     minutes, about 3.3 jobs ending per second. With one (lambdawire's
//     default is 45 seconds), a walk whose listing came back full lists
//     the next MaxItems at once, until the budget has passed since the
//     repair began; the context's deadline stops it in any case. A check
//     that cannot keep up falls behind, never silently: each run reports
//     how far each cursor is behind its bound (Report.RepairLagSeconds,
//     RecheckLagSeconds) and logs them as metrics (MetricsNamespace,
//     MetricRepairLag, MetricRecheckLag; with Config.FunctionName), and
//     the template alarms when the repair cursor is an hour behind.
//   - Whether it is in step. projection.LagOf reads the job's view and its
//     cursor in the tenant's totals: in step when the view is exactly the
//     job item's snapshot and the cursor is at its version, progress and
//     status. Anything else is repaired: behind (a lost event), or ahead or
//     different at the job's version (Lag.Diverged: events that were not
//     the job's; counted in Report.Diverged and logged at ERROR). So a
//     projection converges to its final job by the recheck, RecheckAfter
//     after the job ended, at the latest.
//   - The repair. projection.RecoverJob, the path the projector takes on a
//     gap: in one transaction conditioned on the cursor read, the cursor
//     moves to the job's version, progress and status, processed changes
//     by the job's progress minus the cursor's, completed by the job's
//     completion minus the cursor's, and the view takes the job's snapshot:
//     the item being final, even back from a version it never reached.
//
// Why recovery and not a re-published event. The totals are exact because
// a delta is added only in the transaction that moves the job's cursor
// from the version before it, so each version is counted once, by its
// event or by a recovery that skipped it: whichever of the sweeper's
// recovery, the late event itself (a redrive) or the projector's own
// recovery moves the cursor first counts the versions in between, and the
// others find them counted and add nothing. A re-published final event
// would be exact for the same reason, but it cannot be built or projected
// alone: a discarded stream batch loses every later record of the batch,
// so the versions before the final one may be lost too, and a final event
// after a gap only waits and then recovers from the item anyway; and an
// event carries its delta from the previous version's progress, which the
// item no longer holds once the stream record is gone. Recovery needs
// neither, costs no send rights on the events queue nor a second codec of
// events, and repairs what is behind in one write.
package sweeper
