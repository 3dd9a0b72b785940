// Package localesm is a local event source mapping: it polls an SQS queue or
// a DynamoDB stream the way the AWS Lambda service does and invokes a
// function, either a Go handler in this process (Func) or a bootstrap binary
// running under the Lambda runtime interface emulator (RIE). No emulator runs
// Lambda's event source mappings; this package stands in for them in tests
// and in the local stack.
//
// A mapping is built from its configuration, client and invoker included:
// NewSQSMapping(SQSConfig), NewStreamMapping(StreamConfig), and the
// emulator's invoker NewRIE(RIEConfig). A configuration that cannot work is
// an error wrapping ErrInvalidConfig that names the field.
//
// SQS (SQSMapping) invariants:
//   - A message is deleted only after an invocation that included it ended
//     well: a successful invocation without ReportBatchItemFailures deletes
//     the whole batch; with it, a valid partial batch response deletes every
//     message it does not name. A function error, a timeout, an invocation
//     that could not be made, or a response naming a message that is not in
//     the batch (or otherwise malformed) deletes nothing. Whatever is not
//     deleted is left to the visibility timeout and the queue's redrive
//     policy, exactly as with Lambda.
//   - SQSBatchResult.Deleted lists what was really deleted, with one blind
//     spot. The mapping keeps the receipt handle of each message's latest
//     receive; a message received again before its batch's delete landed
//     (its visibility timeout ran out) is not listed, though SQS answers
//     that delete with success: a delete with an older receipt handle may
//     leave the message in the queue (AWS documents it; fauxqs always
//     leaves it), and the message runs again under its new handle. The
//     blind spot: a receive SQS answered before the delete landed but whose
//     answer is still on its way when the delete's answer arrives cannot be
//     seen, so a message it returns is listed as deleted, and it runs
//     again after this batch has been reported. The mapping's receives are
//     sequential, so that is at most one receive per delete. Closing it
//     would hold every delete until the long poll in flight returns (up to
//     PollWait).
//   - A group's results reach OnBatch in the order its batches ran: a batch
//     lets go of its groups only after OnBatch returned for it.
//   - No two invocations in flight share a message group, and a group's
//     messages run in order. The queue's FIFO group lock already keeps a
//     group in one batch at a time; the mapping also tracks the groups of
//     its batches, from the receive until the batch's outcome has been
//     applied (its deletes answered) and reported. A message of such a
//     group that arrives while the batch's function still runs (its
//     visibility timeout ran out) is withheld: it is neither invoked nor
//     deleted nor made visible, so it returns after its visibility timeout
//     like any message of a failed batch. One that arrives after the
//     function has returned is not withheld: SQS unlocks a group the
//     moment the delete of its last message in flight lands, before the
//     delete's answer arrives, so it is the group's next message (or one
//     of the batch's own, back after its visibility timeout). Its batch takes the group
//     over and is invoked once the previous batch's outcome has been
//     applied and reported to OnBatch, so no message runs before its
//     predecessor's outcome is settled.
//   - Limitation: a withheld receive is still a receive. It raises the
//     message's ApproximateReceiveCount like any other, so a message whose
//     group is withheld again and again can reach the queue's
//     maxReceiveCount and be moved to the dead-letter queue without ever
//     having been invoked. Every receive that withholds messages is logged
//     at Warn with their message ids, groups and receive counts, and the
//     batch's SQSBatchResult lists them in Withheld. It happens only when an
//     invocation outlasts the queue's visibility timeout: the mapping
//     refuses a visibility timeout shorter than FunctionTimeout, but a
//     handler that ignores its deadline (Func waits for it), a slow delete
//     of the group's previous batch (which the next batch waits for), or a
//     function that changes its messages' visibility can still make one
//     outlast it.
//   - At most Concurrency invocations run at once: MaximumConcurrency, or
//     fewer when the invoker is a ConcurrencyLimiter that runs fewer at
//     once (RIE runs one). A batch is received only when an invocation slot
//     is free, and the invoker can start every invocation the mapping
//     gives it at once, so no message waits in memory, in the mapping or in
//     the invoker, while its visibility timeout runs, except for the one
//     wait above: a batch that took a group over waits for the previous
//     batch's deletes to be answered (bounded by their 10 s timeout) and
//     its OnBatch to return. (An RIE shared by two mappings breaks this:
//     give each mapping its own emulator.)
//
// DynamoDB Streams (StreamMapping) invariants:
//   - Shards are read in order, a child shard only after its parent is
//     finished; one batch per shard is in flight at a time, and a shard's
//     records are invoked in sequence-number order.
//   - By default (MaximumRetryAttempts nil, Lambda's -1) a failed batch is
//     retried until it succeeds or the mapping stops: its shard waits on
//     it, and no record is ever discarded. With a bounded
//     MaximumRetryAttempts the remaining records of a batch are discarded
//     after that many retries, and an OnFailureRecord describing them is
//     sent to the OnFailure queue, which Validate then requires: no record
//     is discarded without one. With ReportBatchItemFailures the mapping resumes
//     from the lowest reported sequence number: the records before it are
//     done, the retry starts with it. A retry carries the rest of the failed
//     batch only; it is not topped up with newer records. An invocation that
//     could not be made at all is retried without using up an attempt.
//   - With BisectBatchOnFunctionError, an invocation that failed (the
//     function returned an error, crashed, answered over MaxResponseSize,
//     or timed out) splits its batch in two, whatever
//     ReportBatchItemFailures says, and each half is processed on its own
//     like a batch: the first ⌊n/2⌋ records to their end (finished or
//     discarded), then the rest, so a shard's records still run in order.
//     A split uses up no retry: a half keeps the retries its batch had
//     used, and only a batch of one record, which cannot be split, spends
//     them. So a record that fails every invocation it is in ends up alone,
//     is retried MaximumRetryAttempts times and discarded alone (one
//     OnFailureRecord with BatchSize 1), and its neighbours are finished.
//     A partial batch response is not bisected: the retry starts at its
//     checkpoint and carries the rest of the batch whole, and uses up a
//     retry. StreamBatchResult.Bisected marks the invocations that split
//     their batch.
//   - Where AWS documents no rule for bisection, the mapping has chosen
//     one: which half is the larger one (here the second); that the halves
//     keep their batch's used retries rather than starting afresh (the two
//     are the same unless a checkpoint retry came first); that a checkpoint
//     retry uses up a retry with bisection as without it; and that an
//     invalid partial batch response is retried whole, not split (AWS names
//     function errors only). One known difference: Lambda may merge the
//     metadata of several discarded records into one on-failure record (its
//     BatchSize can then exceed 1); this mapping sends one per discarded
//     span, so after bisection one per poison record.
//   - Not implemented: MaximumRecordAgeInSeconds, tumbling windows, filter
//     criteria, ParallelizationFactor above 1.
//
// Both invokers hold a function's response to Lambda's limit for a
// synchronous invocation, MaxResponseSize: a longer response is a function
// error of type Function.ResponseSizeTooLarge whose message gives the size
// and the limit, never a response cut short. An SQS batch then fails whole
// and returns to the queue; a stream batch is retried like any batch whose
// function failed. (Under aws-lambda-rie the emulator refuses such a
// response itself, and its message names only the limit.)
//
// Both mappings give the function the context a Lambda invocation has: a
// deadline FunctionTimeout after the function starts and a
// lambdacontext.LambdaContext; the context is also cancelled when the
// mapping stops. The mapping passes the timeout, not a deadline, in the
// Invocation: the invoker starts the clock when the function starts, so an
// invocation that waits for the invoker (a stream shard's turn at an RIE,
// which runs one invocation at a time) loses none of its budget. Run returns only after
// every invocation it started has returned and been settled: it leaves no
// goroutine behind. Work a function finished before the stop is still
// acknowledged (its messages deleted).
package localesm
