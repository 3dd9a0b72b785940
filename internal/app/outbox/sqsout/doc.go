// Package sqsout is the relay's SQS transport (the default): the sink that
// sends the Jobs table's outbox to the commands and events FIFO queues, and
// NewRelay, the relay on it. The stream logic (decoding, per-job order, the
// partial batch response, the trace header) is internal/app/outbox's, the
// same for every transport; the Kafka one is in internal/app/outbox/kafkaout,
// so neither transport's function links the other's client.
//
// Invariants:
//   - A message's group is its job id; its deduplication id is its outbox
//     id (shortened by a hash past SQS's 128 characters), so resends are
//     deterministic and SQS drops one within 5 minutes.
//   - A SendMessageBatch holds at most one message per job (the relay hands
//     the sink one message per job per round) and at most 10 entries; a
//     message counts as sent only when SQS lists it as successful.
//   - Every message carries the invocation's X-Ray trace header, when it
//     has one, as the AWSTraceHeader system attribute.
package sqsout
