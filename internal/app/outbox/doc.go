// Package outbox turns the Jobs table's outbox into messages: the bodies of
// commands and events, their decoders, and the relay that publishes the
// table's stream, per job in version order, through a Sink: the commands
// and events FIFO queues (internal/app/outbox/sqsout, the default) or the
// commands and events Kafka topics (internal/app/outbox/kafkaout). The
// stream logic is this package's and the same for both; each transport is
// a package of its own, so a function links only its transport's client.
//
// Every transition of a job writes the message it implies into the job item
// (pkg/jobs), so a message exists exactly when its transition won. The relay
// reads those items from the table's stream and publishes each message once
// per stream delivery; consumers recognise a message published again by its
// outbox id ("job-42/v3"): SQS also drops a resend within 5 minutes by its
// deduplication id (the outbox id), and a Kafka record carries the outbox
// id in its outbox-id header.
//
// Invariants:
//   - A message's group (SQS) or key (Kafka) is its job id; its
//     deduplication id is its outbox id (shortened by a hash past SQS's 128
//     characters), so resends are deterministic.
//   - Per job, messages are published in version order, and a message is
//     handed to the sink only after its job's previous message in the batch
//     was acknowledged: each Sink.Send holds at most one message per job,
//     and a failure, or a result the sink does not give, stops the job's
//     later messages. The stream batch then reports its first unpublished
//     record, so Lambda retries from there and nothing is skipped.
//   - An event carries the job's full snapshot after the transition and the
//     change of progress since the previous version: snapshot consumers keep
//     the newest version, delta consumers apply versions in order.
//   - Every message the relay publishes carries its invocation's X-Ray
//     trace header (SQS's AWSTraceHeader system attribute, a Kafka record's
//     X-Amzn-Trace-Id header), rebuilt from the fields that have X-Ray's
//     shape (none when the invocation has no trace, or its root is
//     malformed): a stream carries no trace context, so this is where the
//     worker's and the projector's traces link to the transition's, and
//     SQS would refuse a malformed header, message and all.
//   - The decoders accept only what the relay writes: one JSON object of
//     known fields, an id that matches the job and version, a known type and
//     status, a tenant the job store accepts, no negative count. Anything
//     else wraps ErrMalformed and can never succeed.
//
// # The PostgreSQL source
//
// With the PostgreSQL job store there is no stream: each transition
// inserts its "stream record" into the job_outbox table (the job after and
// before it, in the statement that writes the job), and
// internal/app/outbox/pgsource publishes that table. It builds the same
// messages (FromTransition) and sends them through the same rounds
// (Publish, which Relay runs too: one message per job per round, a job's
// message only after its previous one was acknowledged, a failure stopping
// the job's later ones), on the same transports. What the stream gives the
// Relay, per-key order and a checkpoint, pgsource makes itself: a job is
// published under a transaction-scoped advisory lock of its id (a job
// another relay holds is skipped, not waited for), its rows are read in
// version order after the lock was taken, and exactly the rows published
// are deleted in the transaction that published them, so a relay that
// dies deletes nothing and the next holder starts from the job's first row
// left. Two classic designs would lose or reorder messages there: locking
// outbox rows with SKIP LOCKED (a second relay takes a job's v2, unlocked,
// while another holds its v1) and reading after a cursor on a global
// sequence (a row that commits late sits behind the cursor for ever);
// pgsource's doc.go says how, and which tests hold each. The relay runs on
// a writer's asynchronous nudge after its commit (pgsource/nudge), with an
// EventBridge schedule as the backstop.
package outbox
