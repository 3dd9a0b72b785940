// Package projection consumes the events queue into two read models: a view
// of each job (its newest snapshot) and per-tenant totals (items processed,
// jobs completed). Events arrive in a FIFO group per job, one per version
// from 1 up, each carrying the job's full snapshot after its version and the
// change of progress since the previous one (outbox.Event). The view is a
// snapshot consumer: it keeps the newest version and ignores older ones.
// The totals are a delta consumer: they must add every version's delta
// exactly once, in order, so they refuse to skip one.
//
// Invariants:
//   - A view never goes back: it takes a snapshot only if it holds an older
//     version or none (condition attribute_not_exists(version) OR version <
//     :v). A late "running" never overwrites "completed"; an older or
//     repeated event changes nothing and is acknowledged.
//   - Each job has a cursor in its tenant's totals: the version, progress
//     and status of the last snapshot counted (none: version 0). Version v's
//     delta is added only when the cursor is at v-1, and the cursor moves to
//     v in the same transaction, so a delta is counted at most once however
//     often or concurrently its event is delivered.
//   - An event at or behind the cursor is a duplicate (Duplicate) or older
//     (Older): acknowledged, nothing counted. DynamoStore tells it from the
//     refused cursor's old item (ReturnValuesOnConditionCheckFailure
//     ALL_OLD), without another read; only a refusal with no cursor yet
//     costs one.
//   - An event beyond cursor+1 is a gap: nothing is counted and Apply returns
//     a *GapError (ErrGap), so the message fails and pkg/fifo holds the rest
//     of its group behind it until its predecessor arrives.
//   - A gap does not wait forever. From the receive the Projector's
//     threshold names (WithRecoverAfter, default 3, below the events queue's
//     maxReceiveCount of 10), it recovers from the authoritative job
//     item (a strongly consistent read): in one transaction the cursor moves
//     to the job's version and progress, processed changes by the job's
//     progress minus the cursor's, completed grows by one if the job is
//     completed and the cursor was not, and the view takes the snapshot
//     unless it holds a newer one; the transaction is conditioned on the
//     cursor being the one read. The waiting event is then at or behind the
//     cursor and is acknowledged.
//   - Every version of a job is counted once, by its event or by a recovery
//     that skipped it, never both. Since an event's delta is its progress
//     minus its predecessor's (the relay builds both from one stream record),
//     a tenant's processed is the sum of its cursors' progress and completed
//     the number of its cursors at a completed status.
//   - Recovery from the job item is one path, RecoverJob, which the
//     Projector takes on a gap and the sweeper (pkg/sweeper) takes for a
//     final job whose projection LagOf finds behind, because its last event
//     was lost and no later one will find the gap. Both start from the
//     item read strongly consistent, and the cursor's condition makes
//     either, and any event, count each version once whatever their order.
//   - A recovery whose job is gone (its item expired under the Jobs table's
//     TTL, jobs.ErrNotFound) has nothing to recover to: the event is
//     acknowledged and logged, and the deltas of the versions never seen are
//     missing from the totals for good.
//   - A malformed body can never succeed: Handle returns fifo.Permanent.
//
// Every version from 1 on has exactly one event (a nudge's is job.requeued,
// published beside its command), so a gap means an event was lost or is
// late. A job id reused after its item expired starts again at version 1
// under a cursor that has seen higher versions: its events are taken for
// older ones and the totals do not count them.
//
// MemoryStore and DynamoStore make their decisions with the same functions
// and pass the same conformance suite, projectiontest.Run.
package projection
