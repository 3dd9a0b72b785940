// Package sim is a deterministic simulation of the whole pipeline, driven
// by one seed: intake, the relay, the worker, the projector, the sweeper
// and the quarantine's operator, each running its real code (intake's
// Handler, outbox.FromTransition, worker.Worker.Handle and
// projection.Projector.Handle under fifo.Processor with the quarantine,
// sweeper.Sweeper, quarantine.Operator) on the in-memory stores
// (jobs.MemoryStore, projection.MemoryStore, quarantine.MemoryStore,
// s3mem.S3; or PostgreSQL's, below), with a simulated clock and simulated SQS FIFO
// queues (group lock, visibility timeout, receive counts, a redrive policy
// to a dead-letter queue, the five-minute deduplication window).
//
// A scheduler drawing from a PCG generator seeded by the seed picks each
// step: a client's request (a new intent, a retry, a conflicting retry, a
// cancellation, a read, another tenant's request), the relay publishing
// stream records (in version order per job, some twice, a few lost), a
// batch of a queue received and processed in one invocation, time
// passing, a sweep, an operator's redrive (sometimes interrupted) with a
// discard of what no redrive can fix, a poison message (a command for a
// job that does not exist yet, a command naming another tenant, an event
// that is not JSON), a forged event (a version its job has not reached,
// the cursor's next version with a forged progress, the job's own event
// with another delta or result), a request held back in the network
// arriving late, an
// outage of a store, a suspended invocation resuming. A fault plan, with
// rates drawn per seed, refuses requests (throttling), applies them and
// loses the answer, holds writes back to deliver them later, answers 409
// to conditional puts, crashes invocations before or after any request,
// drops a batch's answer, makes requests slow, and makes the task stall,
// fail transiently, or see its job cancelled. One seed in eight runs a
// commands visibility timeout shorter than the lease.
//
// Handlers run one at a time (fifo.Config.Concurrency 1). An invocation is a
// fiber: a goroutine the scheduler hands control to and takes it back
// from, so that exactly one goroutine runs at any moment. A task that
// stalls, or a request that is slow, suspends its invocation; the
// scheduler goes on with other steps (the same command received again
// and taken over, a sweep, a redrive) and resumes it later. Every package
// reads the simulated clock, and deadlines lie far beyond the wall clock,
// so no real timer fires: a seed replays exactly.
//
// # Two transports
//
// Config.Transport picks what carries the commands and the events. The
// default, TransportSQS, is the above: two SQS FIFO queues. With
// TransportKafka they are two topics of one to six partitions (per seed),
// keyed by job id and partitioned as Kafka's default partitioner does
// (murmur2 of the key, as franz-go and Java's clients have it: the sim
// needs only a deterministic choice, and takes the real one). Each of the
// worker and the projector is invoked by a simulated Kafka event source
// mapping:
//   - a consumer group of three pollers, each partition owned by one at an
//     epoch, with a committed offset per partition;
//   - a batch is records from the committed offset of one or more of a
//     poller's partitions, with at most one batch in flight per partition
//     and ownership, sent as Lambda's KafkaEvent to the REAL
//     kafka.Processor (Concurrency 1), which runs the REAL
//     worker.Worker.HandleRecord or projection.Projector.HandleRecord;
//     without a batching window (NoBatchingWindow) it is what a poll
//     returned, a few records of some partitions; with one (500 ms, 1 s
//     or 10 s, per seed) it waits, as pkg/localesm's, until its oldest
//     record arrived the window ago or ten records wait, and takes them
//     by their partitions' oldest record;
//   - a batch closes before its event (counted as JSON, EventSize) would
//     cross MaxRequestSize, 6,291,455 bytes, as pkg/localesm's does; a
//     record whose event alone would is never invoked: it goes to the
//     on-failure destination (MaximumPayloadSizeExceeded), and the
//     partition is committed past it;
//   - with a MaximumRecordAge (10 min or 1 h, per seed), before each
//     invocation each partition's leading run of records older than it
//     goes to the on-failure destination (the first record not expired
//     ends the run: timestamps need not rise with the offsets);
//   - the partial batch response is applied by committing, per partition,
//     kafka.CommitOffsets over the records it does not report: the
//     contiguous completed prefix, the conservative reading of what Lambda
//     commits (everything from the lowest reported offset is delivered
//     again), which pkg/kafka's documentation explains;
//   - a failed attempt (a record reported, a function error, a crash, a lost
//     answer, a timeout) is retried from the committed offset after a wait
//     doubling from 1 s to 2 min (AWS documents none for Kafka); past
//     MaximumRetryAttempts (10, what Lambda applies with an on-failure
//     destination), the batch's records not completed go to the on-failure
//     destination and the partition is committed past the batch;
//   - with BisectBatchOnFunctionError (half the seeds), a batch of two
//     records or more whose invocation crashed, lost its answer or timed
//     out is split in halves as pkg/localesm splits one (each partition's
//     first half of records, then the rest), without using up a retry:
//     the halves run in order, each to its end (retried as itself, not
//     fetched again), and nothing else fetches their partitions
//     meanwhile.
//
// The Kafka faults: a rebalance moves a partition to another poller, mostly
// while a batch of it is in flight: that invocation runs on (a zombie) and
// its commit is refused, as Kafka refuses an OffsetCommit of a stale
// generation, while the new owner fetches from the committed offset at
// once; an invocation that crashes, loses its answer or outlives its
// deadline has its batch delivered again, so the running example's
// takeover comes from the invocation's timeout and the mapping's retry
// instead of a visibility timeout (the retry's worker waits for a lease
// that ends while it can still start, spending simulated time:
// worker.Config.Sleep); one seed in four runs compacted topics
// (compaction, below the active segment, removes records with a later
// record of their key), one in three a transactional relay (each stream
// record's messages in a transaction whose marker takes an offset, and a
// refused send or commit aborts what it wrote), so offsets hold no record
// and a fetch passes over them; hostile records have a null key half the
// time. A compacted topic refuses a null-key record, as Kafka's brokers do
// (INVALID_RECORD: the producer gets the error, nothing is appended): the
// simulation models the refusal (ErrNullKeyOnCompactedTopic), so such a
// hostile record never reaches a consumer, and compaction never takes
// null-key records for records of one key.
//
// Records on the edge of the limits: a header bomb replays a record the
// relay published into its partition, with hundreds of headers after
// its own, and its old timestamp; a producer sends records with large
// values, from 32 KiB, over the topic's max.message.bytes (refused,
// ErrRecordTooLarge: Kafka's default is 1 MiB and 12 bytes), or, on the
// topics of one seed in four whose limit is raised to 8 MiB, of 5 MiB or
// more, too large for an event of their own.
//
// One seed in three changes the topics' partition count mid-run, from n
// to between n+1 and 2n, by the procedure docs/KAFKA.md gives: the
// consumers' processors keep checking the old count
// (kafka.Config.PartitionCount) while the relay either checks the brokers'
// count against its own and produces nothing until the new count is
// deployed (kafkaout's relay), or, without that check, learns the new
// count from its metadata at a later step, partitioning over it and
// stamping it (its records hold their keys under the old count); once
// every record stamped with the old count is consumed, the new count is
// deployed to the consumers and the relay.
// From the growth to the deploy the operator redrives neither a held key
// nor an on-failure destination (the procedure's last steps): a redriven
// copy is not checked for its count.
//
// Each mapping runs the real Kafka quarantine, as lambdawire wires it:
// quarantine.NewKafka on the quarantine's MemoryStore (through the fault
// plan, its Failed count included), QuarantineThreshold 6 for both (the
// worker's at least MaxGenerations+2; both at most MaximumRetryAttempts+1,
// checked when the world is built) and the topic's PartitionCount, which
// the relay stamps on each record (kafka.PartitionCountHeader). A keyed
// record that fails for good or at its sixth attempt is parked with the
// rest of its lane, its key held and its partition committed past it. The
// operator redrives held keys through quarantine.Operator with a
// RecordSender that produces each copy to the topic, under its key, in the
// hold's partition, after discarding what no redrive can fix. The
// on-failure destination, the simulation's own list, stays the backstop:
// it gets what the quarantine could not take (a null-key record, a record
// whose parking failed through a store outage until its retries ran out,
// a record whose crashes and timeouts the quarantine does not count), and
// the operator redrives a record from it (re-published under its key,
// after fixing an early command's cause) or discards a hostile one or a
// redriven copy (its record is still the quarantine's); a record given up
// there has had its later records of its key run without it, as after
// SQS's dead-letter queue. A Kafka record has no receive count: the
// projector recovers at its first gap.
//
// After the chaos phase the faults stop, the causes of the poison
// messages are fixed, and the pipeline runs until nothing moves: every
// request delivered, every record published, every queue drained, every
// held group redriven (a draining one only once its copies are
// processed; on Kafka, once its mapping has nothing left to fetch), the
// sweeper run past its thresholds, every projection at its final job.
//
// Invariants, checked as things happen and at the end:
//   - Every write the job store applied was current when it landed: a
//     claim never took over a live lease and started the next generation;
//     a renewal, accept or failure found the job running at the caller's
//     generation, version and lease; a cancel and a nudge did what they
//     say. The check is the journal's own, not the store's decision.
//   - A job has at most one accepted result, the accepting attempt's own
//     candidate of the job's generation, stored with the recorded SHA-256
//     and size and holding what that attempt's task wrote.
//   - Every transition is one stream record, published (unless the relay
//     lost it) under its outbox id: a command for creation and for every
//     nudge, an event for every version from 1; no id is published with
//     two bodies, and no message exists of a version that does not.
//   - Per queue and group, a message is processed only after every older
//     message of the group has been, or was dead-lettered itself (the
//     quarantine's backstop when its store is out), or was discarded by
//     the operator; a redriven copy stands for its parked message, and a
//     dead-lettered copy excuses nothing: its message stays parked.
//   - A job view never goes back, except from a snapshot its job never had
//     to the job's final item; the totals are at every moment the sum of
//     the deltas and completions the store counted, and at the end the
//     sum of the jobs' progress and completions, forged events or not; an
//     event the relay published never disagrees with a cursor the job's
//     own history put there, and its delta is its progress minus its
//     predecessor's.
//   - At the end every job is final, every view and cursor is at its job's
//     version, every message was processed, dead-lettered or discarded, no
//     group is held and nothing is parked, and the sweeper has deleted
//     every candidate that is no result, and no result; no delete ever
//     touched a live job's current generation.
//
// With Kafka the invariants about the jobs, the results, the stream and
// the projection are the same; the queues' are replaced by the log's:
//   - In a batch, a lane's records (a partition and a key, or the
//     partition's null-key lane) start in offset order, none passed over
//     but those the quarantine completes without running (a record it
//     has, a redriven copy). A redelivery starts a lane over from the
//     committed offset, so this holds per batch; across batches,
//     ownerships, zombies and redrives, a record starts only after every
//     earlier record of its key in its partition ran to completion
//     (itself, or its redriven copy), or went to the on-failure
//     destination, or was discarded by the operator, or was aborted away,
//     or compacted away before the quarantine had it: a held key's later
//     records never run before the parked record's copy did. After a
//     partition count change a key's records are in two partitions: a
//     record the relay stamped runs only after every earlier stamped record
//     of its key in the other partition did (or was given up, discarded,
//     or is gone), a re-publish from an on-failure destination standing for
//     the record given up.
//   - A record goes to the on-failure destination only after every
//     earlier record of its partition ran, went there before it, is gone,
//     or is the quarantine's: a partition's records reach the destination
//     in offset order.
//   - No invocation's event is over MaxRequestSize.
//   - A redriven copy runs only in order: it is checked where the record
//     it stands for is, after every earlier record of its key.
//   - A commit that lands was fetched from the committed offset it lands
//     over (no member whose ownership ended commits: BreakCommitFence,
//     the fence disabled, is caught), never moves the committed offset
//     back, and never passes a record that is not completed, given up on,
//     compacted, aborted, or the quarantine's (parked, done or discarded).
//   - At the end every group's lag is 0 (no record at or after a committed
//     offset; an offset holding no record is no lag), no batch is in
//     flight, every record of every partition ran, or was given up on,
//     discarded, aborted or compacted away, every key the quarantine held
//     is released with nothing parked, and the on-failure destinations
//     hold nothing: each record in them was redriven, and its copy
//     completed, or discarded.
//
// # Two stores
//
// Config.Store picks the stores of the jobs, the projection and the
// quarantine. The default, StoreMemory, is the memory stores above. With
// StorePostgres they are jobs.PostgresStore, projection.PostgresStore and
// quarantine.PostgresStore on Config.DB, a PostgreSQL 18 database of the
// run's own, which the run migrates; everything else is the same: the
// fault plan above the stores, the journal (it reads the job through Get
// before and after each write), the observers, the invariants. Every time
// the stores are given is the simulated clock's (none of their statements
// reads the server's clock), and one fiber runs at a time, so each
// statement ends before the next begins: a seed replays exactly, and runs
// as it does on the memory stores (the same steps and the same Stats; the
// traces differ only in the wording of the stores' errors). The relay still
// publishes the journal's stream, which keeps the two runs of a seed
// alike. With Config.OutboxRelay it is the real pgsource.Relay instead:
// Drain reads job_outbox (a step's drain bounded at random in jobs, rows
// per job and rows) through a sink that checks each message against the
// journal's record of its transition and sends it to the queues or
// topics; the sink refuses some sends (the row waits for the next drain),
// loses some answers after sending (the row is published again: an outbox
// row, unlike a stream record, is never lost), sends some messages twice,
// and with a transactional Kafka relay writes a round in one transaction
// that a failure aborts. One more invariant holds the job store's outbox to
// the journal:
//   - Each transition the journal saw applied is the job_outbox row of its
//     job and version, whose images decode (jobitem.FromPostgresImage) to
//     the job before and after it; at the end each job's rows left are the
//     end of its stream, version by version, the records before them the
//     rows the relay took (none without the outbox relay), each published,
//     and no row belongs to another job.
package sim
