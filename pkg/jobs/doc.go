// Package jobs is the arbiter of the system: the job item in DynamoDB, its
// state machine, and the conditional writes that decide every transition —
// create, claim, renew, accept, fail, cancel and nudge. A stale worker's late
// completion changes nothing, selects no result and publishes nothing; a
// duplicate message does not displace a live worker.
//
// Invariants:
//   - A job's generation never decreases. Each claim, takeover and
//     cancellation raises it by one, and each generation is granted to at
//     most one attempt.
//   - Every transition raises the version by exactly one and writes the
//     message it implies into the item's outbox in the same conditional
//     write ("job-42/v3" is the message of version 3): a message exists if
//     and only if its transition won. Version 0 (creation) emits the run
//     command; every later version emits one event, so consumers can detect
//     gaps, except a nudge's, which emits a run command that the relay
//     publishes as the command and as the event EventRequeued, so the
//     events stay gapless. After creation, every transition is one
//     conditional UpdateItem.
//   - Renew, accept and fail land only while the job is running at the
//     caller's generation and version. Otherwise nothing is written and the
//     error says why: ErrStaleGeneration, ErrFinal or ErrNotFound.
//   - A claim takes over a running job only when its lease ended strictly
//     before now; a live lease yields ErrLeaseHeld. After the last generation
//     the recovery policy allows, the takeover write fails the job instead,
//     and a retry of that claim gets the same answer: the failed job with a
//     *FinalError.
//   - A claim is never answered with a lease that is already over. The
//     holder's own claim (a retry after a lost response) is recognised only
//     while its lease is live; once the lease has ended, the holder's claim
//     is a takeover like anyone's: a new generation, or the failure of the
//     job under the recovery policy. A refusal would leave the job on an
//     ended lease until another delivery comes, though the caller is alive
//     to run it. Extending the ended lease in place would keep the
//     generation, and the generation, not the lease, is what fences writes
//     (Renew and Accept deliberately land on an ended lease nobody took
//     over): whatever the earlier try started under it, requests still in
//     flight included, would still land as the current generation's
//     writes. A new generation fences them, as any takeover does.
//   - A claim naming a tenant (ClaimRequest.Tenant, which the worker sets
//     from its command) has the tenant in its condition: a job of another
//     tenant answers ErrNotFound, the answer for no job, before anything
//     else about it (final, leased) is told, and nothing is written. A
//     forged command thus uses up no generation, takes no lease and learns
//     nothing of the job; a retry after a lost response is recognised as
//     ever, since the tenant never changes.
//   - An accept's result key is the caller's own candidate key,
//     candidates/<job_id>/g<generation, 10 digits>/<attempt_id>.<ext>, of
//     the request's job, generation and attempt (ValidateResultKey);
//     another is ErrInvalid and nothing is written.
//   - A nudge lands only on a pending job, or a running job whose lease
//     ended strictly before now, at the generation and version its caller
//     read; it never raises the generation and never passes a live lease.
//   - Completed, failed and cancelled are final: nothing changes them, and
//     they carry a TTL (expires_at, epoch seconds).
//   - The same write records the transition in the item's History:
//     creation writes the entry of version 0 and each transition the entry
//     of its version, into slot version mod MaxHistory (jobitem.HistorySlot)
//     without reading the item, so the item keeps its last MaxHistory
//     transitions and a refused write adds none. Describe says what each
//     was. A reader keeps the entries of the item's last MaxHistory
//     versions and skips a slot that holds none: the history is
//     diagnostic, and a bad slot never makes a job unreadable.
//   - The item of a job that is not final carries live_shard (LiveShardOf
//     its id and the store's shard count), and a final job's does not: the
//     table's sparse "live" index (live_shard, updated_at) holds exactly
//     the live jobs, which Lister lists oldest first for the sweeper.
//   - The transition that makes a job final also writes finished_shard
//     (LiveShardOf its id and the count) and finished_key (FinishedKey: the
//     time of that transition, then the id), which nothing changes
//     afterwards: the table's sparse "finished" index holds exactly the
//     final jobs, which FinishedLister lists in key order from a cursor,
//     for the sweeper's check that each one's projection caught up.
//   - The shard count (DynamoConfig.LiveShards, 16 to 256, default 16) may
//     only grow: a job's item keeps the shard its writer computed
//     (LiveShardOf: FNV-1a of the id modulo the count, so at 16 today's
//     items keep theirs, and a new count moves the jobs written after it
//     only), and a walk over fewer shards would miss it. A store above 16
//     records its count in the table before its first write, and
//     CheckLiveShards refuses a store below the record (ErrLiveShardsShrunk):
//     the sweeper checks it at each run, so after a deploy that lowers the
//     count every run fails with that error instead of missing jobs (a
//     live transition keeps the job's live_shard; the final one writes
//     finished_shard under its writer's count, recorded as any other).
//     fifoworker jobs opens its store
//     with the recorded count (RecordedLiveShards). The memory and
//     PostgreSQL stores have no shards.
//   - List pages through both indexes for people (fifoworker jobs list):
//     its token resumes strictly after the last entry a page examined, so a
//     job that does not change meanwhile is shown exactly once.
//   - A DynamoStore's listings query their index's shards together, at most
//     8 at a time (GetMany its chunks of 100 too), and merge them by time
//     and id: the answer is the one a shard-by-shard walk gives, whichever
//     shard answers first; the first error cancels the others. CountLive
//     counts what List's first live page shows, reading statuses only.
//   - Create is idempotent per (tenant, intent): one job and one command per
//     intent, however often or concurrently it is retried; the same intent
//     with another spec is ErrIntentConflict.
//   - An intent is remembered as long as its job's item exists, and no
//     longer. The intent's marker expires (TTL) Config.IntentRetention
//     after creation, the job's item Config.Retention after the job ended, and
//     DynamoDB deletes expired items some time later (typically within two
//     days, AWS's UpdateTimeToLive reference says), in no order, returning
//     them to reads until then. So: while the job's item is there, expired
//     or not, a retry of the intent returns that job (Existing), as Get
//     returns it; once the item is deleted, a retry creates a new job with
//     the spec it carries, whether the marker is still there (it is written
//     over, on the condition that it is still that marker) or not. The
//     answer depends on what a client can see, the job, never on the order
//     of the two deletions; a marker that outlived its job is not an error.
//   - A job written over a marker that outlived its job gets
//     SuccessorJobID(tenant, intent, the marker's job id), never the old
//     job's id: views and the totals' per-job cursors never expire, and a
//     new job under an old id would meet the old job's final cursor, whose
//     repair would subtract the old job's share from its tenant's totals.
//     Every retry over that marker derives the same successor, so
//     concurrent retries race for one job (the marker's put is conditioned
//     on the old marker, the job's on its id being free) and exactly one
//     wins; a third incarnation is the second's successor, and so on.
//
// Known limitation: an intent whose marker is gone is remembered only by
// the item of DeriveJobID(tenant, intent). Once both the marker and that
// item are deleted, Create derives that id again, as it did before
// successors existed: the new job's projection meets the final cursor and
// view the first job of the intent left. Its events are taken for older
// versions or mismatches of the old job, and once the new job is final
// (or at its first mismatch past the old final version) the projection's
// recovery sets the cursor and view to the new item: the tenant's totals
// then hold the new job's progress and completion in place of the old
// job's, whose share is lost for good. The same happens to a later
// incarnation whose marker is deleted before its job item (the usual order:
// the marker expires Config.IntentRetention after the job's creation, the
// item Config.Retention after its end): a retry then finds no marker and a free
// derived id, and creates a new job under it while the later incarnation
// still exists, so that retry is not answered with it. The fix is an
// incarnation on the projection's cursor (for instance the job's
// created_at, carried by every event and stored on the cursor and view):
// an event or recovery of another incarnation would then start a cursor of
// its own and leave the old one's share in the totals. It is not built.
//   - A write whose outcome was unknown (a timeout, a lost response) may be
//     retried with the same request: a retry that finds its own earlier
//     write (same attempt, generation and result) returns success, not a
//     false "stale".
//   - The decision of every transition, and the classification of every
//     refusal, is made by one pure function that every store calls, so the
//     DynamoDB, PostgreSQL and in-memory stores cannot drift; jobstest.Run
//     holds them to the same behaviour.
//   - The item has one decoder (jobitem.Decode), which FromItem (the SDK's
//     attribute values, as the stores read them) and FromStreamImage (a
//     Lambda stream image) share, so the stores, the relay, the
//     projector's recovery and the sweeper read items and images alike.
//
// # Generations and the commands queue
//
// Every receive of a job's command counts toward the commands queue's
// maxReceiveCount, but only some receives claim. A receive withheld behind
// a failed message of its lane, one skipped because too little time was
// left before the deadline, and one answered ErrLeaseHeld each spend a
// receive and no generation. Taking a job through
// all MaxGenerations generations to the claim that fails it takes
// MaxGenerations + 1 receives that claim, so maxReceiveCount must be at
// least MaxGenerations + 1 plus a margin for receives that do not claim
// (DefaultMaxGenerations is 3 against the commands queue's maxReceiveCount
// of 5 in template.yaml: a margin of one). No margin is enough in every case: the receives that do
// not claim have no bound. So the rule is:
//
//   - A command can reach the dead-letter queue before its job's generations
//     are exhausted, with the job still pending or running on an expired
//     lease.
//   - A command that reaches the dead-letter queue must not strand its job,
//     nor may one lost with a stream record that expired before the relay
//     sent it (a stream keeps records for 24 hours). The sweeper
//     (internal/app/sweeper) finds live jobs unchanged for longer than a threshold
//     (Lister.Live, through the live index) and nudges them (Store.Nudge):
//     a pending job, or a running job whose lease has ended, gets a fenced
//     transition, conditional on the status, generation and version the
//     sweeper read and for a running job on its lease having ended, that
//     raises the version and writes a fresh job.run command into the
//     outbox; the relay sends it like the first. A nudge does not raise the
//     generation: the claim its command leads to does, so the recovery
//     policy's limit still ends a job that keeps stalling.
//   - So a job ends only by accept, fail, cancel or the recovery policy; a
//     command in the dead-letter queue is an alarm, not the end of its job.
//
// A nudge's version is published twice by the relay: as the run command
// (deduplication id OutboxID(job, v), like every message of the job) and
// as an event of type EventRequeued with the same id on the events queue,
// so every version from 1 on has exactly one event and a consumer that
// checks versions for gaps sees none. The nudge also fences whatever still
// runs under the ended lease, as a takeover would: the holder's version is
// no longer current.
//
// The job's model (Job, Status, Message, the message types, OutboxID,
// ValidateID, ErrInvalid, ErrNotJob) and that decoder are the job item's,
// in pkg/jobs/jobitem, which this package gives under its own names
// (jobs.Job is jobitem.Job): a reader of the table's stream that needs
// nothing else (the relay) imports jobitem alone, and so links no
// DynamoDB client nor the SDK's DynamoDB types.
//
// A store is built from its configuration: NewDynamoStore(DynamoConfig),
// NewPostgresStore(PostgresConfig) or NewMemoryStore(Config), all with the
// same settings (Config, whose zero value is the defaults). A configuration that cannot work is an error
// wrapping ErrInvalidConfig that names the field, never a panic.
//
// # The PostgreSQL store
//
// PostgresStore keeps the job on PostgreSQL 18, in the schema
// MigratePostgres applies (the files postgres/NNNN_*.sql, embedded: 0001
// the tables jobs, job_intents and job_outbox, 0002 the listings' and the
// purge's partial indexes). A row's columns are the item's attributes, its
// times the same epoch milliseconds (expires_at epoch seconds), so its
// conditions compare the numbers DynamoDB's do; ids are COLLATE "C", so
// they sort as Go compares them. It takes a *sql.DB (the functions open
// it with internal/base/pgwire) and imports no driver itself.
//
// Every transition after creation is one statement, the state machine's
// write rendered as SQL: the guard is the UPDATE's WHERE (status,
// generation, version, and the owner, the tenant, lease_expires_at < now
// where the guard has them), the patch its SET; a data-modifying CTE
// inserts the job_outbox row of the new version from the UPDATE's
// RETURNING (PostgreSQL 18's old and new rows: image the job after,
// prev_image before); and when the WHERE refuses the row, the same
// statement returns the row, on which decide runs again: it tells a stale
// write from a missing job, or recognises the caller's own earlier write,
// without another round trip. Create is one statement too: the intent's
// row (ON CONFLICT DO NOTHING), the job's row and the outbox row of
// version 0 (prev_image NULL), all or none; a job id already taken fails
// it with a unique violation, which undoes the intent's row.
//
// Read Committed, PostgreSQL's default, is enough, because no transition
// reads and then writes: its check and its write are one UPDATE. The
// UPDATE locks the row it changes; one that finds the row locked by
// another transaction waits for it, and when that commits, evaluates its
// WHERE again on the row that transaction wrote, and leaves the row alone
// if the guard no longer holds (if that transaction rolls back, on the row
// as it was). So two transitions of one job take turns on the row's lock,
// and each is checked against the committed row it replaces: the
// compare-and-set of DynamoDB's conditional write. A stricter isolation
// would add serialization failures to retry and fence nothing more. One
// thing is subtle: the statement's plain SELECT of the refused row reads
// the statement's snapshot, taken before it waited, so it can show the
// row as it was before the write that refused it, on which the guard
// holds. The store then runs the statement again (a new snapshot; at most
// maxRounds in all), as TestPostgresReadCommittedRechecksTheBlockedWrite
// shows. For the same reason a job's outbox rows commit in version order:
// version v+1's UPDATE cannot pass the row's lock before version v's
// transaction has committed. The relay (internal/app/outbox) publishes
// them per job in version order and deletes each once published.
//
// Round trips (statements, each one round trip: the driver sends each
// as the unnamed statement, Parse to Sync in one write): renew, accept, fail, a
// nudge, a claim of a pending job, a cancel of a pending job and any
// refusal, one; a takeover and the cancel of a running job, two (the first
// statement returns the row that tells the lease or the status); a write
// that waited for a competing one and was refused, one more (above Read
// Committed, where such a write fails instead of returning the row, a
// read of the row as it is now comes before the next decision, one more
// again). Create: one
// for a new intent, two for an intent that has its job (the write, then a
// read of the intent's row and its job), three for an intent whose job is
// gone. Get, GetMany, LiveAfter and Finished: one each (the partial
// indexes are the table's, so the listings are exact and strongly
// consistent, unlike the DynamoDB indexes).
//
// PostgreSQL has no TTL. An expired row stays, read like any other (as
// DynamoDB returns an expired item until TTL deletes it), until
// PurgeExpired deletes it: rows whose expires_at is before now, at most a
// limit a call, never a job whose outbox rows are still unpublished. The
// rules above about expired intents hold as they are: the job's row
// decides.
//
// Times are injected (Config.Now) and stored as epoch milliseconds. The
// lease of a Lambda attempt ends at its invocation deadline plus a clock-skew
// margin (LeaseEnd). Leases are bounded: a claim or renewal whose lease would
// end more than MaxLambdaTimeout (15 minutes, the longest invocation) plus
// twice the store's margin (Config.ClockSkew, default 5 s, at most
// MaxClockSkew) after the store's now is refused with ErrInvalid, so a
// stalled holder can always be taken over. Twice, so that the longest lease
// LeaseEnd gives (a 15-minute deadline plus the margin) is granted even when
// the host's clock, which the store reads, runs up to a margin behind the
// Lambda service's, which set the deadline.
package jobs
