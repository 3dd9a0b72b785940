// Package fifo processes an SQS batch delivered to AWS Lambda so that every
// MessageGroupId is handled strictly in order while different groups run in
// parallel, and reports exactly the messages that must be received again.
//
// A Processor is built from a Config whose only required field is the
// Handler; the zero value of every other field is its documented default.
// New refuses a Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field; it never panics:
//
//	p, err := fifo.New(fifo.Config{
//		Handler:    h,
//		DeadLetter: &fifo.DeadLetterQueue{Client: sqsClient, QueueURL: dlqURL},
//	})
//	if err != nil {
//		return err
//	}
//	lambda.Start(p.Process)
//
// The lanes run on pkg/lanes, the transport-neutral lane engine (serial per
// key, parallel across keys under Concurrency, the deadline margin and
// response reserve, panics and runtime.Goexit contained), and so does what
// becomes of each message (lanes.Batch: its outcome, the log line, the
// metrics hook, the quarantine's steps on a held group), which pkg/kafka
// shares: Outcome and PanicError are pkg/lanes' types under this package's
// names. What is SQS's, the message ids and groups, the response, the
// dead-letter queue and the quarantine's holds, is this package's.
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
//     dead-letter client, the quarantine, the logger (even on the line of a message whose
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
//
// # Quarantine
//
// Config.Quarantine replaces the dead-letter queue (the two exclude each
// other) for a FIFO queue whose order must survive a message that cannot
// be processed. Instead of failing until SQS moves it aside, or being
// dead-lettered while the rest of its group moves on, such a message holds
// its group: it is parked with every later message of the group, in order,
// until an operator fixes the cause and redrives them. The Quarantine keeps
// the holds and the parked messages; the processor asks and follows.
//
//   - Check is called once per batch, before any handler runs, with the
//     batch's messages that have a group. It returns each group's hold and
//     recognises redriven copies and messages to drop. If it fails, every
//     message with a group is failed, to be received again. Messages
//     without a group are never quarantined: Check does not see them, and
//     a permanent error among them is an ordinary failure.
//   - In a group that is not held, messages run as without a quarantine,
//     until one returns a permanent error, or arrives with an
//     ApproximateReceiveCount at or above the threshold (checked before it
//     would run: it has been received that often without being deleted,
//     whether it ran or was skipped). That message and the rest of
//     its lane are parked in one Park call that holds the group, and
//     acknowledged with the outcome Parked. A transient failure or a panic
//     stays an ordinary failure: the message is received again.
//   - In a held group, every ordinary message is parked, in one call,
//     without running. In a draining group (a redrive under way), the copies of
//     the current epoch run, in order, and an ordinary message is parked,
//     each Park taking the messages up to the next copy that runs. A copy's
//     success is recorded with Done, which returns the hold: once it is
//     released, the lane's later messages run. A copy that fails
//     permanently or reaches the threshold holds the group again with a
//     Park of no messages (its parked message stays parked) and is Parked
//     too; one that fails otherwise is received again.
//   - Only the copy of the group's oldest parked message runs (Hold.Next).
//     A copy of the current epoch that stands for a later message means
//     the older one's copy was lost, dead-lettered by SQS when the
//     quarantine could not take it back: the copy holds the group again,
//     as a failed one does (ErrCopyOutOfOrder), and the next redrive sends
//     both again, in order.
//   - A copy of another epoch, or one whose group is not draining, and a
//     message Check says to drop are acknowledged without running, with
//     the outcome Dropped.
//   - A Park or Done that fails, panics or calls runtime.Goexit fails the
//     messages it was called for (a copy whose success was not recorded
//     runs again), and the rest of the lane is skipped. More generally,
//     once a message of a lane fails or is skipped, nothing after it in
//     the lane is parked, dropped or run: a message parked ahead of an
//     earlier one that is received again could be redriven, and run,
//     first. This holds for a stop (StopOnFirstFailure) and a deadline
//     skip as for a failure. Parking a held group's lane starts no
//     handler, so it goes on after a stop, or inside the deadline margin.
//   - A parked message is acknowledged, not failed: under
//     StopOnFirstFailure it stops nothing, and a failure to park it does.
//     Logging, a message parked after its handler ran gets two lines: the
//     handler's outcome (failed, with the error), then parked, with the
//     cause as the reason. A message parked or dropped without running
//     gets one line, with the reason.
package fifo
