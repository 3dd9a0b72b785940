// Package pgsource is the outbox relay of the PostgreSQL job store: it
// publishes the rows of the job_outbox table (pkg/jobs' PostgresStore writes
// one per transition, in the transition's own statement) through an
// outbox.Sink (sqsout's or kafkaout's), per job in version order, and
// deletes each row once every message of it was acknowledged. The messages
// are outbox.FromTransition's and go out through outbox.Publish, the rounds
// of the DynamoDB stream's relay: a job's message only after its previous
// one was acknowledged, one message per job per round, so that one round of
// the sink carries many jobs.
//
// A Drain runs passes until none finds a job it may publish, MaxRows rows
// are published, or the invocation's deadline minus Margin is near. A pass
// is one Read Committed transaction:
//
//  1. lock jobs: the oldest jobs with rows, each by a transaction-scoped
//     advisory lock keyed by its id (pg_try_advisory_xact_lock of
//     hashtextextended(job_id, seed)), skipping, not waiting for, a job
//     another relay holds;
//  2. read the locked jobs' rows in version order, in a statement of its own
//     begun after the locks, so it sees everything the previous holder
//     deleted and committed (Read Committed, set on the transaction: under
//     Repeatable Read the snapshot is the lock statement's, taken before
//     the lock was granted, and the concurrent relays' test sees messages
//     published again and out of order);
//  3. publish them in rounds;
//  4. delete exactly the rows whose messages were all acknowledged, by
//     (job_id, version);
//  5. commit, which releases the locks.
//
// Handle is the Lambda handler: it drains for a writer's nudge (package
// nudge) and for the EventBridge schedule that backs the nudges up.
// Aurora has no stream and logical decoding needs a long-lived consumer,
// so the writers trigger the relay: after each commit that wrote a row a
// writer's Coalescer invokes the relay function asynchronously, at most
// once per interval (the commits in between go with the next nudge or the
// writer's Flush before its invocation returns), and a Drain publishes
// everything committed until it finds nothing left. A nudge lost, refused
// or throttled delays its rows until the schedule's next run, and never
// changes which rows are published or in what order. BenchmarkCommitToPublish
// measures commit, nudge and Drain in one process on the local server;
// Lambda's queueing of an asynchronous invocation and the relay's start
// come on top and cannot be measured here.
//
// Invariants:
//   - Per job, a message is published only after every earlier version's
//     messages were acknowledged, whatever the number of relays and
//     whatever crashes: one relay at a time holds a job, reads its rows from
//     the first one left, and a row leaves the table only in the transaction
//     that published it.
//   - Nothing is lost: a row is deleted only once all its messages were
//     acknowledged, and only by the transaction that published it. A pass
//     that ends without its commit (a crash, a lost connection, the
//     deadline) deletes nothing, so its rows are published again by the next
//     holder, from the job's first row left: duplicates, in order, that
//     consumers recognise by their outbox id.
//   - A row committed while a relay holds its job is not deleted by that
//     pass (the delete names the rows it published) and goes out after the
//     job's earlier rows, in a later pass.
//   - One job's failure (a message the sink refused, a row that cannot be
//     decoded) stops that job's later rows and nothing else: the job is left
//     out of the rest of the run and retried by the next.
//
// Two traps it avoids, each of which loses or reorders messages:
//   - Locking outbox rows with SELECT ... FOR UPDATE SKIP LOCKED: a second
//     relay skips the job's v1 row that the first holds and takes its v2
//     row, which was committed meanwhile and is not locked, and publishes v2
//     before (or without) v1. Locking the job, not its rows, makes the
//     second relay skip the whole job. TestASecondRelaySkipsAHeldJobAndItsNewRows
//     holds it.
//   - Reading after a cursor on a global sequence (or on created_at): ids
//     are drawn when a row is inserted but become visible when its
//     transaction commits, so a row that commits late, behind a row
//     already published, sits below the cursor and is skipped for ever.
//     The relay keeps no cursor: the table is the queue, and a row is there
//     until it is published. TestARowThatCommitsLateIsPublished holds it.
//
// It imports database/sql and no driver (the wiring opens the pool with internal/base/pgwire), and
// pkg/jobs/jobitem, not pkg/jobs, so the relay's function links no
// DynamoDB client.
package pgsource
