// Package outbox turns the Jobs table's outbox into messages: the bodies of
// commands and events, their decoders, and the relay that publishes the
// table's stream to the commands and events FIFO queues.
//
// Every transition of a job writes the message it implies into the job item
// (pkg/jobs), so a message exists exactly when its transition won. The relay
// reads those items from the table's stream and sends each message once per
// stream delivery; SQS deduplicates a resend within 5 minutes by its
// deduplication id (the outbox id, "job-42/v3"), and consumers recognise it
// by that id beyond.
//
// Invariants:
//   - A message's group is its job id; its deduplication id is its outbox id
//     (shortened by a hash past SQS's 128 characters), so resends are
//     deterministic.
//   - Per job, messages are sent in version order, and a message is sent only
//     after its job's previous message in the batch was accepted by SQS: a
//     SendMessageBatch holds at most one message per job, and a failure stops
//     the job's later messages. The stream batch then reports its first
//     unsent record, so Lambda retries from there and nothing is skipped.
//   - An event carries the job's full snapshot after the transition and the
//     change of progress since the previous version: snapshot consumers keep
//     the newest version, delta consumers apply versions in order.
//   - Every message the relay sends carries its invocation's X-Ray trace
//     header as the AWSTraceHeader system attribute, rebuilt from the
//     fields that have X-Ray's shape (none when the invocation has no
//     trace, or its root is malformed): a stream carries no trace context,
//     so this is where the worker's and the projector's traces link to the
//     transition's, and SQS would refuse a malformed header, message and
//     all.
//   - The decoders accept only what the relay writes: one JSON object of
//     known fields, an id that matches the job and version, a known type and
//     status, a tenant the job store accepts, no negative count. Anything
//     else wraps ErrMalformed and can never succeed.
package outbox
