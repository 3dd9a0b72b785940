// Package fifo processes an SQS batch delivered to AWS Lambda so that every
// MessageGroupId is handled strictly in order while different groups run in
// parallel, and reports exactly the messages that must be received again.
//
// Invariants:
//   - Messages of one group form a lane. A lane never runs two messages at
//     once, and starts them in batch order.
//   - A failed message fails every later message of its lane; those are
//     reported without being started. With StopOnFirstFailure, a failure
//     anywhere stops every message that has not started yet.
//   - No message starts when less than the deadline margin remains before
//     the context's deadline; every message not completed is reported. A
//     message skipped for the deadline skips the rest of its lane too,
//     without another look at the clock: the deadline is wall-clock time
//     (Lambda's has no monotonic reading), and the wall clock can step back.
//   - A panic in a handler is a failure of that message, never a crash. So
//     is a panic in code the processor calls for the message: the
//     dead-letter client, the logger (even on the line of a message whose
//     handler succeeded: the message is received again, which loses
//     nothing), a method of the handler's error. A panic in the metrics
//     hook, or in logging about the batch, is contained and changes no
//     outcome. The same holds for runtime.Goexit in any of them: it fails
//     the message (and the rest of its lane), or, in the metrics hook and
//     the batch's logging, which run on a goroutine of their own for this,
//     is dropped; Process always returns.
//   - Process returns only after every handler it started has returned, and
//     cancels the handlers' context on return: no goroutine outlives it.
//   - The response names each failed message once, in batch order, and
//     nothing that is not in the batch. An invalid batch is not processed:
//     Process returns an error wrapping ErrInvalidBatch, which makes Lambda
//     retry the whole batch and lets the queue's redrive policy decide.
//   - A permanent error (Permanent) sends the message to the dead-letter
//     queue when one is configured, then acknowledges it; if that send fails
//     the message is reported as failed, so nothing is lost. The send is at
//     least once: its deduplication id, the source message id, holds for
//     SQS's five minutes, but a message comes back only after its visibility
//     timeout (6 minutes for template.yaml's commands queue), so an
//     invocation that dead-letters a message and then times out, or fails it
//     afterwards, leads to a second copy. A copy carries the source message
//     id, queue ARN and sequence number in its DeadLetterAttribute, the
//     same on every copy, by which a reader drops the repeat. Except when
//     the message already has SQS's maximum of ten message attributes: the
//     copy is sent without the DeadLetterAttribute (a user's attribute is
//     never dropped to make room), and the processor logs it at Warn with
//     the message id and sequence number. On a FIFO dead-letter queue such
//     a copy's MessageDeduplicationId is still the source message id, by
//     which a reader drops the repeat; its source sequence number, queue
//     ARN, error and receive count are lost. On a standard dead-letter
//     queue (only a standard source can have one) it carries no source
//     identity at all.
package fifo
