// Package localesm is a local event source mapping: it polls an SQS queue or
// a DynamoDB stream, or reads a Kafka topic, the way the AWS Lambda service
// does and invokes a function, either a Go handler in this process (Func)
// or a bootstrap binary running under the Lambda runtime interface emulator
// (RIE). No emulator runs Lambda's event source mappings; this package
// stands in for them in tests and in the local stack.
//
// A mapping is built from its configuration, client and invoker included:
// NewSQSMapping(SQSConfig), NewStreamMapping(StreamConfig),
// NewKafkaMapping(KafkaConfig), and the emulator's invoker NewRIE(RIEConfig).
// A configuration that cannot work is an error wrapping ErrInvalidConfig
// that names the field.
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
// Kafka (KafkaMapping), as Lambda's Amazon MSK and self-managed Apache Kafka
// mappings. What it copies from AWS's documentation (checked 2026-12):
//   - It is one member of the consumer group ConsumerGroupID (franz-go,
//     cooperative-sticky) reading one topic: Lambda takes exactly one
//     (CloudFormation's Topics has minItems and maxItems 1). A group with a
//     committed offset for a partition resumes there and ignores
//     StartingPosition; without one, TRIM_HORIZON, LATEST or AT_TIMESTAMP
//     applies, and a mapping with no ConsumerGroupID makes up a unique one
//     (https://docs.aws.amazon.com/lambda/latest/dg/kafka-consumer-group-id.html,
//     https://docs.aws.amazon.com/lambda/latest/dg/kafka-starting-positions.html).
//     It commits by hand only, after each invocation: "After Lambda
//     processes each batch, it commits the offsets of the messages in that
//     batch"
//     (https://docs.aws.amazon.com/lambda/latest/dg/with-kafka-configure.html).
//   - A batch holds up to BatchSize records (default 100, at most 10,000)
//     and may hold several partitions, each partition's records in offset
//     order. It is invoked when it is full, when the next record would
//     make its event longer than MaxRequestSize (6 MiB less a byte), or
//     MaximumBatchingWindow (default 500 ms) after its oldest record was
//     fetched: "A batching window begins as soon as the first record
//     arrives"
//     (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html).
//     A record whose event alone is over MaxRequestSize is never invoked:
//     it goes to the on-failure destination as MaximumPayloadSizeExceeded,
//     with a null responseContext (AWS's example record); with no
//     destination it holds its partition (reported as OutcomeTooLarge at
//     each try) rather than be skipped.
//   - The event is Lambda's KafkaEvent: eventSource "aws:kafka" with the
//     cluster's eventSourceArn, or "SelfManagedKafka" without one;
//     bootstrapServers; records under "topic-partition" keys; base64 keys
//     and values, a null one left out and an empty one ""; headers as
//     one-key objects of signed bytes; timestamps in milliseconds and
//     CREATE_TIME or LOG_APPEND_TIME.
//   - A function error or a timeout fails the batch whole (an invocation
//     that could not be made is tried again without using up a retry).
//     With ReportBatchItemFailures the response is kafka.EventResponse,
//     each itemIdentifier {"topic-partition": "topic-0", "offset": 5} as
//     AWS's schema has it; "an empty valid JSON or null" is a success, and
//     "any invalid
//     topic-partition_number or offset returned that was not present in the
//     invoked event will be treated as failure and entire batch will be
//     retried"
//     (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html),
//     as is a malformed response (AWS's rule for streams). Without it the
//     response is ignored.
//   - MaximumRetryAttempts (-1, the default, retries until success; Lambda
//     caps -1 at 10 when an on-failure destination is set),
//     MaximumRecordAge (a record older is given up instead of invoked, one
//     exactly that old still runs; only a partition's leading run of old
//     records, since timestamps need not increase and giving up an old
//     record behind a young one would put it out of order),
//     BisectBatchOnFunctionError, and
//     on-failure records in AWS's shapes: KafkaSQSDestination sends one
//     record per span given up with each partition's recordsInfo;
//     KafkaS3Destination writes that record with the span's event as its
//     payload, an escaped JSON string as AWS's S3 example has it;
//     KafkaTopicDestination produces one message per record, keyed as the
//     record, with its recordInfo and the event that holds it, and
//     refuses the source topic
//     (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html,
//     https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
//     The mapping commits past records given up only once the destination
//     took them. FunctionTimeout is at most 14 minutes, Lambda's limit
//     behind a Kafka mapping.
//
// Where AWS documents no rule, the Kafka mapping has chosen one:
//   - An itemIdentifier may name its topic-partition under "partition"
//     instead of AWS's "topic-partition": Powertools for AWS Lambda
//     (Python) sends that key (its pull request 7941), and a function
//     written with it is taken to work against Lambda, so the mapping
//     does not fail its batches where Lambda would not. Both keys with the
//     same value are one identifier; both disagreeing, or neither, is a
//     malformed response, which fails the batch whole like an identifier
//     not in the event. Beside a valid "topic-partition", a "partition"
//     that is not a non-empty string (a bare partition number, a null) is
//     not a topic-partition and is ignored.
//   - A partial batch response commits, per partition, exactly up to the
//     lowest offset reported there (kafka.CommitOffsets over the records
//     held: the first one not finished), and the retry carries every
//     record of the batch from it, reported or not: AWS documents this
//     for Kinesis and DynamoDB Streams, and for Kafka only "retry only the
//     failed records". It is the reading that loses nothing under either;
//     a record that ran and is redelivered costs a fenced store's refusal.
//     The retry is not topped up with newer records.
//   - MaximumRetryAttempts counts each partition's attempts at its
//     committed offset: whenever the commit moved forward since the last
//     count, whatever moved it (a partial batch response, a bisected half
//     that succeeded, an expiry), the count starts again at 0 for the
//     record now first, which has just failed its first attempt; one whose
//     commit stayed uses up a retry; and a partition whose retries ran out
//     is given up alone while the others of its span go on. So a record is
//     given up after its own first attempt and MaximumRetryAttempts
//     retries (one attempt, no retry, when it is 0: AWS says the count
//     excludes the first invocation), as internal/sim counts. AWS
//     documents no rule for when the count restarts. Under the other
//     reading, one count for the whole batch, a record that starts
//     failing late in a batch already retried would be given up after
//     fewer of its own attempts: a quarantine whose
//     threshold is MaximumRetryAttempts + 1 (pkg/kafka) could then lose
//     the record to the on-failure destination before parking it.
//   - One invocation per partition at a time: a partition's records join
//     no batch while a batch holding it runs, retries and waits between
//     them included. AWS says Lambda reads each partition sequentially and
//     commits after each batch, not this in so many words.
//   - Bisection halves each partition: the first half is each partition's
//     first ⌊n/2⌋ records (or, when each has one, the first ⌊k/2⌋
//     partitions), run to its end before the second. A split uses up no
//     retry; a partial batch response and an invalid one are not split.
//   - read_committed: an aborted transaction's records never reach the
//     function. Missing offsets (compaction, transaction markers, aborted
//     records) are never waited for: commits walk the records the batch
//     holds, so a commit after a gap lands on the next record there is.
//   - A partition revoked by a rebalance while its batch runs is neither
//     committed nor retried by the member that lost it: the broker would
//     take the commit (it checks the member's generation, not what it
//     owns), so the mapping checks ownership itself, and a commit in
//     flight is answered before a revocation is recorded. The new owner
//     reads from the last commit, so the batch's records run again, maybe
//     beside the old invocation (at least once, as Lambda promises).
//   - Bounded retries and MaximumRecordAge require an on-failure
//     destination, as the stream mapping requires one, so that nothing is
//     given up unrecorded; the record-age condition is named
//     RecordAgeExceeded, the streams' name (AWS's Kafka pages name none).
//   - A partition whose buffered records make a batch is paused, so a
//     partition held by a long invocation does not fill memory.
//
// Not implemented for Kafka: pollers and scaling (provisioned or on-demand:
// a mapping is one group member, run several for more), filter criteria,
// schema registries, authentication (SourceAccessConfigurations), SNS
// destinations, and finding an MSK cluster's brokers from its ARN
// (BootstrapServers is required for MSK too). With an invoker that runs
// one invocation at a time (RIE), a batch waiting to retry holds the
// invoker's only slot.
//
// Both invokers hold a function's response to Lambda's limit for a
// synchronous invocation, MaxResponseSize: a longer response is a function
// error of type Function.ResponseSizeTooLarge whose message gives the size
// and the limit, never a response cut short. An SQS batch then fails whole
// and returns to the queue; a stream or Kafka batch is retried like any
// batch whose function failed. (Under aws-lambda-rie the emulator refuses such a
// response itself, and its message names only the limit.)
//
// Every mapping gives the function the context a Lambda invocation has: a
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
