// Package projection consumes the events queue into two read models: a view
// of each job (its newest snapshot) and per-tenant totals (items processed,
// jobs completed). Events arrive in a FIFO group per job, one per version
// from 1 up, each carrying the job's full snapshot after its version and the
// change of progress since the previous one (outbox.Event). The view is a
// snapshot consumer: it keeps the newest version and ignores older ones.
// The totals are a delta consumer: they must add every delta exactly
// once, so they refuse to pass one that has not been counted.
//
// Invariants:
//   - A view never goes back, with one exception (below): it takes an
//     event's snapshot only if it holds an older version or none
//     (condition attribute_not_exists(version) OR version < :v). A late
//     "running" never overwrites "completed"; an older or repeated event
//     changes nothing and is acknowledged.
//   - Each job has a cursor in its tenant's totals: the version, progress
//     and status of the last snapshot counted (none: version 0, progress
//     0). An event that adds nothing (delta 0 and a status that is not
//     final: job.started, job.requeued, a renewal without progress) is
//     Skipped: its view is written, its cursor neither read nor moved.
//     Any other event's delta is added only when the cursor is at an
//     earlier version, at the progress the delta starts from (the event's
//     progress minus its delta), with a status that is not final, and the
//     cursor moves to the event in the same transaction, so a delta is
//     counted at most once however often or concurrently its event is
//     delivered, and a tenant's processed total is always the sum of its
//     cursors' progress and completed the number of its cursors at
//     completed, whatever the events say.
//   - That is the gap rule: not "the cursor is at v-1", which a skipped
//     event would break, but "the event starts from the cursor's state".
//     Each application moves a cursor from the state an event starts
//     from to the event's and adds exactly the difference of what the two
//     contribute, so the totals stay the sum of the cursors' states
//     whichever events apply, in whatever order; cursors move forward
//     only. A skipped event leaves the state as it was, so the next event
//     that adds starts from the state the cursor holds. A final event is
//     never skipped, even one that adds nothing (a failure, a
//     cancellation): it ends the cursor, so that nothing applies after it
//     and the sweeper finds a final job's cursor at its item. Events
//     lost between two that net to nothing (a takeover that restarts the
//     count to where it was counted) need not be waited for: what follows
//     starts from the cursor's state, and counting it is exact.
//     (projectiontest's suite holds every store to the rule, with
//     FuzzProjectorHistory and a concurrent test of deliveries and
//     recoveries in any order.)
//   - An event at or behind the cursor is a duplicate (Duplicate: the
//     cursor's version, progress and status) or older (Older):
//     acknowledged, nothing counted. DynamoStore tells it from the refused
//     cursor's old item (ReturnValuesOnConditionCheckFailure ALL_OLD),
//     without another read; only a refusal with no cursor yet, or a first
//     version whose delta is not its progress, costs one. PostgresStore's
//     one statement returns the cursor it read beside what it wrote.
//   - An event beyond cursor+1 that does not start from the cursor's state
//     is a gap: an event between the two that adds has not been counted.
//     Nothing is counted and Apply returns a *GapError (ErrGap), so the
//     message fails and pkg/fifo holds the rest of its group behind it
//     until that event arrives.
//   - An event that disagrees with the cursor (at cursor+1 with a delta
//     that does not start from the cursor's progress; at the cursor's
//     version with another progress or status; past a final status, where
//     no version of the job can follow) is not counted: Apply returns a
//     *MismatchError (ErrMismatch). One of the two is not the job's, and
//     only the job item can tell which.
//   - A gap does not wait forever. From the receive the Projector's
//     threshold names (ProjectorConfig.RecoverAfter, default 3, below the
//     events queue's maxReceiveCount of 10; a Kafka record, which has no
//     receive count, at its first gap: see HandleRecord), it recovers from the
//     authoritative job item (a strongly consistent read), and a mismatch
//     does so at once: in one transaction the cursor moves to the job's
//     version, progress and status, processed changes by the job's
//     progress minus the cursor's, completed by the difference of the two
//     completions, and the view takes the snapshot unless it holds a newer
//     one; the transaction is conditioned on the cursor being the one read.
//     The waiting event is then at or behind the cursor and is
//     acknowledged; so is an event the item, read after it arrived, has not
//     reached: it is not the job's.
//   - A recovery corrects what differs from the item at the item's version
//     (the item's content at a version is the only one there is), and,
//     when the item is final, whatever differs from it, ahead included:
//     nothing of the job's can be past a final item, which never changes.
//     That is the one exception to "a view never goes back": a view moved
//     past a final item, or given other content at its version, by events
//     that were not the job's (forged, or left from a job whose id was
//     reused after its item expired) goes back to the item. A live item's
//     snapshot behind the cursor or the view changes neither: it may be
//     older than what was projected since it was read.
//   - No version of a job is counted twice, by its event and by a recovery
//     that passed it, or by two deliveries; and since every write of the
//     totals moves a cursor by exactly what it adds, a job's share of its
//     tenant's totals is its cursor's progress and completion.
//   - Recovery from the job item is one path, RecoverJob, which the
//     Projector takes on a gap or a mismatch and the sweeper (internal/app/sweeper)
//     takes for a final job whose projection LagOf finds out of step: behind
//     (its last event was lost, and no later one will find the gap), or
//     ahead of the item or different from it (events that were not the
//     job's). Both start from the item read strongly consistent, and the
//     cursor's condition makes either, and any event, count each version
//     once whatever their order. So the projection of a job converges to
//     its item by the sweeper's recheck, RecheckAfter after the job ended,
//     at the latest; the projector itself puts back what an event ahead of
//     a final item moves (at once at the next version, at its recovery
//     threshold beyond).
//   - A recovery whose job is gone (its item expired under the Jobs table's
//     TTL, jobs.ErrNotFound) has nothing to recover to: the event is
//     acknowledged and logged, and the deltas of the versions never seen are
//     missing from the totals for good.
//   - A malformed body can never succeed: Handle returns fifo.Permanent,
//     HandleRecord kafka.Permanent. HandleRecord also refuses for good a
//     Kafka record whose key is not its event's job, a null key included
//     (ErrKeyMismatch): the key is the record's partition and lane.
//     Handle does not check an SQS message's group, as it never has.
//
// Every version from 1 on has exactly one event (a nudge's is job.requeued,
// published beside its command), so a gap means an event that adds was
// lost or is late. A job id reused after its item expired starts again at version 1
// under a cursor that has seen higher versions: its events are taken for
// older ones until the new job is final, when the sweeper's repair sets
// its projection to the new item (and its share of the totals to the new
// job's).
//
// What no check here can catch: an event for a job id that has no item (no
// recovery is asked for, since nothing disagrees), and an event naming
// another tenant than its job's: it counts under a cursor of that tenant,
// which no repair of the job looks at. Only the events queue's senders
// guard against those.
//
// MemoryStore, DynamoStore and PostgresStore make their decisions with the
// same functions (adds, judge, planRecovery, and the view's rules, which
// the two databases' stores render as conditions) and pass the same
// conformance suite, projectiontest.Run.
//
// On DynamoDB (DynamoStore) a tenant's totals are spread over Shards
// partition-key values (default 32), "<tenant>#<k>" with k the FNV-1a hash
// of the job id modulo the count: each holds the item "total" of its share
// and the cursors of its jobs, so an event that adds writes one shard, in
// one transaction of two items (4 write units), and a tenant takes
// DynamoDB's 1,000 write units a second per partition-key value once per
// shard. Totals sums the shards with a consistent BatchGetItem. A job's
// cursor lives in its shard, so the count is fixed for the table's life:
// CheckShards records it, and the functions' wiring refuses to write with
// another. CountEveryEvent writes every event as the design before did (a
// transaction per event, the skipped ones included); with Shards 1 it
// makes that design's requests and writes, kept to measure the two side by
// side (its gap check is this rule of states, not "the cursor at v-1").
// A read of a tenant's totals costs Shards strongly consistent item reads
// (one read unit each), in BatchGetItems of up to 100.
//
// On PostgreSQL (PostgresStore; MigratePostgres creates the tables
// projection_views, projection_cursors and projection_totals from the
// embedded files postgres/NNNN_name.sql, component "projection" of
// internal/base/pgmigrate) every write is one statement in Read Committed,
// so it is one transaction:
//   - Apply's statement writes the view (INSERT ... ON CONFLICT DO UPDATE
//     ... WHERE the held version is older), moves the cursor (UPDATE ...
//     WHERE it is at an earlier version, at the progress the event starts
//     from and not final; from progress 0 also an INSERT ... ON CONFLICT DO
//     NOTHING), adds to the totals only if the cursor moved and something
//     is added (INSERT ... ON CONFLICT DO UPDATE adding to the row of the
//     tenant and the job's shard: PostgresConfig.Shards rows a tenant,
//     summed on read, so that its jobs do not all wait for one row's lock),
//     and returns the cursor of its snapshot. One round trip per event,
//     whatever it answers; an event that adds nothing is one statement of
//     the view alone.
//   - It is race-free because each condition is checked on the newest
//     committed version of its row, under the row's lock: an UPDATE that
//     meets a row another transaction changed, or waits for one that holds
//     it, evaluates its WHERE again on the new version before writing, and
//     ON CONFLICT DO UPDATE locks the conflicting row and evaluates its
//     WHERE and its SET on the newest version. So two writers can never
//     both move a cursor from the same place, and an addition to a total
//     is made to what the last writer committed.
//   - The snapshot's cursor can be older than the row the UPDATE checked
//     (a writer committed between the two): when it says the event
//     follows although nothing moved, Apply runs the statement again (at
//     most ten rounds in all), as it does after a deadlock or a
//     serialization failure, which a writer taking the rows in another
//     order, or a database whose default isolation is higher, can answer.
//     The statements lock the cursor, then the view, then the totals.
//   - Recover reads the cursor and writes with one statement whose cursor
//     move is conditioned on the cursor read, and whose view and totals
//     are written only if the cursor moved: two round trips, two more each
//     time the cursor moved in between.
//   - The driver is the wiring's (internal/base/pgwire): the package uses
//     database/sql alone, so that a bootstrap on DynamoDB links no driver.
package projection
