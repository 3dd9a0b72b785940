// Package localesm is a local event source mapping: it polls an SQS queue or
// a DynamoDB stream the way the AWS Lambda service does and invokes a
// function, either a Go handler in this process (Func) or a bootstrap binary
// running under the Lambda runtime interface emulator (RIE). No emulator runs
// Lambda's event source mappings; this package stands in for them in tests
// and in the local stack.
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
//   - No two invocations in flight share a message group. The queue's FIFO
//     group lock already keeps a group in one batch at a time; the mapping
//     also tracks the groups of its invocations in flight, and a message of
//     such a group that arrives anyway (its visibility timeout ran out while
//     the function still runs) is withheld: it is neither invoked nor
//     deleted nor made visible, so it returns after its visibility timeout
//     like any message of a failed batch.
//   - At most MaximumConcurrency invocations run at once. A batch is
//     received only when an invocation slot is free, so no message waits in
//     memory while its visibility timeout runs.
//
// DynamoDB Streams (StreamMapping) invariants:
//   - Shards are read in order, a child shard only after its parent is
//     finished; one batch per shard is in flight at a time, and a shard's
//     records are invoked in sequence-number order.
//   - A batch is retried until it succeeds, its remaining records are
//     discarded after MaximumRetryAttempts retries (with a record of the
//     discarded batch sent to the on-failure queue when one is configured),
//     or the mapping stops. With ReportBatchItemFailures the mapping resumes
//     from the lowest reported sequence number: the records before it are
//     done, the retry starts with it. A retry carries the rest of the failed
//     batch only; it is not topped up with newer records. An invocation that
//     could not be made at all is retried without using up an attempt.
//   - Not implemented: BisectBatchOnFunctionError, MaximumRecordAgeInSeconds,
//     tumbling windows, filter criteria, ParallelizationFactor above 1.
//
// Both mappings give the function the context a Lambda invocation has: a
// deadline FunctionTimeout away and a lambdacontext.LambdaContext; the
// context is also cancelled when the mapping stops. Run returns only after
// every invocation it started has returned and been settled: it leaves no
// goroutine behind. Work a function finished before the stop is still
// acknowledged (its messages deleted).
package localesm
