// Package sweeper does the housekeeping no request path can do: it deletes
// candidate objects nothing can ever accept, and it nudges jobs whose
// command was lost, so that no job is stranded. It runs on a schedule
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
//   - A dry run decides and reports everything and writes nothing: no
//     delete, no nudge, no cursor.
//   - A run leaves the time it needs to save the cursor and report before
//     its context's deadline: work it could not finish is the next run's.
package sweeper
