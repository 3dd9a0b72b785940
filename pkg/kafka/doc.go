// Package kafka processes a Kafka batch delivered to AWS Lambda (Amazon MSK
// or self-managed Apache Kafka) so that the records of one partition and
// key are handled strictly in offset order while different keys and
// partitions run in parallel, and answers with the partial batch response
// aws-lambda-go has no type for. It also gives the contiguous-prefix commit
// a faithful local event source mapping applies.
//
// A Processor is built from a Config whose only required field is the
// Handler; the zero value of every other field is its documented default.
// New refuses a Config that cannot work with an error wrapping
// ErrInvalidConfig that names the field; it never panics:
//
//	p, err := kafka.New(kafka.Config{Handler: h, Concurrency: 16})
//	if err != nil {
//		return err
//	}
//	lambda.Start(p.Process)
//
// The lanes run on pkg/lanes, the lane engine pkg/fifo's SQS processor runs
// on too (serial per key, parallel across keys under Concurrency with the
// longest lanes first, the deadline margin and response reserve, panics
// and runtime.Goexit contained), and so does what becomes of each record
// (lanes.Batch: its outcome, the log line, the metrics hook, the
// quarantine's steps on a held key): Outcome and PanicError are pkg/lanes'
// types under this package's names. What is Kafka's, the records, the
// lanes' keys, the response and the commit, is this package's.
//
// # Records
//
// Process decodes the event into Records in a deterministic order: by
// topic-partition (the event's records key, compared as a string), then by
// offset, whatever order the event lists them in. Keys and values are
// standard base64; headers, which Lambda sends as arrays of signed bytes
// (a Java byte[]), become []byte; the timestamp, epoch milliseconds, a
// time.Time. aws-lambda-go's KafkaRecord holds the key and the value as
// strings tagged omitempty, so a JSON null, an absent field and an empty
// string all arrive as "": this package cannot tell a null key from an
// empty one (a producer's zero-length key, which Kafka's default
// partitioner hashes like any other), nor a tombstone's null value from an
// empty value, and decodes each as nil. For an empty key that is safe: it
// runs in its partition's null-key lane, in offset order with every other
// record of its partition without a key, so no two records of the same
// empty key ever reorder; they only lose parallelism with the null keys.
// A handler that must tell a tombstone from an empty value cannot, with
// aws-lambda-go's type.
//
// A batch that breaks what Lambda's Kafka event promises is refused whole:
// a record under another partition's key, an offset twice in a partition,
// a negative offset or partition, a key or value that is not padded
// standard base64. Process then runs nothing and returns an error wrapping
// ErrInvalidBatch, which makes Lambda retry the batch (and its
// MaximumRetryAttempts, BisectBatchOnFunctionError and on-failure
// destination decide); a response computed from such a batch could name
// the wrong record. Response and CommitOffsets, which read no key or
// value, refuse the others the same way, through the same check.
//
// # Lanes
//
// A lane is a partition and a lane key: the records of one partition with
// the same key, in offset order. The key is the record key by default;
// Config.LaneKey chooses another (a header, a field of the value). The same
// key in two partitions is two lanes: a partition is Kafka's only ordering
// scope, and a key's records are in one partition unless the topic's
// partition count changed.
//
// Records without a key (a null or empty key, or LaneKey's ok false) run in
// their partition's offset order among themselves: one null-key lane per
// partition, as a plain consumer of the partition would have run them.
// Two other rules were weighed. A lane per null-key record runs them all
// at once and loses the order a producer without keys still gets from a
// partition. A null-key record as a barrier (waiting for every earlier
// record of its partition, and holding every later one) keeps the whole
// partition's order around it, but serialises every keyed lane at each
// null key: a partition with a few null keys among many keyed records
// would run nearly sequentially. The null-key lane keeps what a null key
// promises, order among the records without a key, and no more: like any
// two lanes, it and the keyed lanes are independent. A handler that needs
// its partition as one lane (what Powertools does: one record after
// another) says so with a LaneKey that returns the same key for every
// record.
//
// A LaneKey that panics, or calls runtime.Goexit, for a record fails that
// record (Panicked, PanicInLaneKey) and every later record of its
// partition, whatever their keys: any of them may share its unknown lane,
// so none may run before it. The records of the partition before it, and
// the other partitions, run as usual; under StopOnFirstFailure it is the
// batch's first failure and nothing starts.
//
// # Guarantees
//
//   - A lane never runs two records at once, and starts them in offset
//     order. Different lanes run in parallel, at most Concurrency at once
//     (0: all), the longest first.
//   - A failed record fails every later record of its lane; those are
//     reported without being started. With StopOnFirstFailure, a failure
//     anywhere stops every record that has not started yet.
//   - No record starts when less than the deadline margin remains before
//     the context's deadline; the handlers' context expires the response
//     reserve before it, so that the response leaves in time. A record
//     skipped for the deadline skips the rest of its lane without another
//     look at the clock: the deadline is wall-clock time (Lambda's has no
//     monotonic reading), and the wall clock can step back.
//   - A panic or a runtime.Goexit in a handler is a failure of that record,
//     never a crash. So is one in code the processor calls for the record:
//     the lane key function, the dead-letter store, the logger (even on
//     the line of a record whose handler succeeded: it is delivered again,
//     which loses nothing), a method of the handler's error. One in the
//     metrics hook, or in logging about the batch, is contained (those run
//     on a goroutine of their own) and changes no outcome.
//   - Process returns only after every handler it started has returned, and
//     cancels the handlers' context on return: no goroutine outlives it.
//   - A permanent error (Permanent) sends the record to Config.DeadLetter
//     when there is one; once Send returns nil the record counts as
//     completed and its lane goes on. If Send fails (or there is none) the
//     record is an ordinary failure: reported, nothing lost. Send is at
//     least once: an invocation that dead-letters a record and then times
//     out, or fails it afterwards (its log line panicked), leads to a
//     second Send of the same record on its redelivery; the store drops
//     the repeat by topic, partition and offset.
//   - The metrics hook sees every record's outcome, wait and duration,
//     the lanes and the batch's duration, after every handler returned;
//     it is skipped (and a warning logged) once the response reserve is
//     spent, rather than risk a Lambda timeout, which would deliver the
//     whole batch again.
//   - The response names every record not completed, each once, in
//     topic-partition then offset order, and nothing that is not in the
//     batch: in particular each partition's lowest offset not completed
//     (see below).
//
// # The response, and what Lambda commits: documented and assumed
//
// The response is
//
//	{"batchItemFailures": [{"itemIdentifier": {"topic-partition": "orders-0", "offset": 42}}]}
//
// an itemIdentifier object, not a string as for SQS and Kinesis:
// "topic-partition" holds the KafkaEvent's records key, the topic, a
// hyphen and the partition number in decimal (TopicPartition), not the
// bare partition number; "offset" is a JSON number. An empty list tells
// Lambda the whole batch succeeded.
//
// What AWS documents, checked 2026-12: "Configuring error handling controls
// for Kafka event sources"
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html)
// says that in provisioned mode a Kafka mapping offers
// MaximumRetryAttempts, MaximumRecordAgeInSeconds,
// BisectBatchOnFunctionError and a partial batch response that lets the
// function "return information about which records in a batch failed
// processing, so Lambda can retry only the failed records"; infinite
// retries with an on-failure destination are capped at 10
// (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
// Without a partial response, Lambda commits a batch's offsets after it
// succeeds and retries the whole batch when the function returns an error
// (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-process.html).
// The same page's PartialBatchResponse section gives the schema this
// package writes,
//
//	{"batchItemFailures": [{"itemIdentifier": {"topic-partition": "topic-partition_number", "offset": 100}}]}
//
// and its Python and Node.js examples build "topic-partition" as
// f"{topic}-{partition}" and "offset" as a number. Its "Important" note:
// "If you return an empty valid JSON or null, the event source mapping
// will consider a batch as successfully processed. Any invalid
// topic-partition_number or offset returned that was not present in the
// invoked event will be treated as failure and entire batch will be
// retried." (Powertools for AWS Lambda (Python), pull request 7941, sends
// the same value under "partition" instead; pkg/localesm's mapping accepts
// both keys, this package writes AWS's.)
//
// What AWS does not document: what Lambda commits and redelivers for a
// Kafka partial response. The page says the handler's identifiers allow
// "Lambda to retry just those specific items", and elsewhere "retry only
// the failed records"; neither says where the partition's committed
// offset goes, and read literally they would commit past a record that
// was not reported. For Kinesis and
// DynamoDB Streams AWS does document it: the lowest reported sequence
// number becomes the checkpoint and every record from it is retried
// (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html),
// which is also the only rule that fits Kafka's committed offset, one
// number per partition. This package assumes that stream reading: per
// partition, Lambda commits up to the lowest reported offset and
// redelivers everything from it; CommitOffsets computes that commit, and
// pkg/localesm's Kafka mapping applies it.
//
// The response reports every record not completed, not only each
// partition's lowest, because that is safe under both readings: if Lambda
// retried only the reported records, every incomplete one is among them
// (reporting only the lowest would then lose the others); if it restarts
// each partition from the lowest reported offset, that offset is reported
// and the rest do no harm.
//
// # What a redelivered completed record costs
//
// Under the stream reading, a partition's records after its lowest
// incomplete offset are delivered again, including those of other lanes
// that completed. Their handlers run again: fifoworker's fenced store
// absorbs that, as it absorbs any at-least-once delivery (the command of a
// job already final finds it final at the claim and is acknowledged with
// nothing written, docs/TESTING.md's table of bad input): a request, no
// second effect. Handlers outside fifoworker must be idempotent for the
// same reason; Lambda documents Kafka delivery as at least once anyway.
//
// # Head-of-line blocking, measured and bounded
//
// The commit is a contiguous prefix, so a failing key (or one skipped for
// the deadline) holds back every later offset of its partition, for every
// key, on redelivery. TestHeadOfLineCost measures it on the real
// processor, delivering a partition's log the way the stream reading
// does (BenchmarkHeadOfLine reports the same figures). One failure at
// position p (from 0) of a batch of n records whose keys go round-robin
// over k keys redelivers exactly (n-1-p) - floor((n-1-p)/k) completed
// records: with Lambda's default BatchSize of 100 and p = 0,
//
//	keys per partition   redelivered completed records per failure
//	1                    0   (one lane: nothing after the failure ran, as sequentially)
//	10                   90
//	100                  99
//
// The bound is BatchSize-1 completed records per failed delivery of a
// partition. It is per delivery, not per failure: a key that fails on
// every delivery pins the partition's window at its offset, and each
// delivery runs (and redelivers) the same batch again with nothing new
// committed, until the key stops failing. That is what the quarantine is
// for: a parked key stops failing, its records count as completed, and
// the prefix moves. With Config.Quarantine and a QuarantineThreshold of T,
// a record is parked in the invocation of its (T-1)th failed attempt, so a
// poisoned key costs at most (T-1) × (BatchSize-1) redelivered records
// (T = 6, 10 keys: 450; a permanent failure is parked at once, costing
// none); without one, the mapping's MaximumRetryAttempts bounds it (with
// infinite retries and no on-failure destination, nothing does). Processing each partition sequentially
// redelivers as many records but none of them completed: the lanes do
// that work early, and pay for it with redelivery only when a key fails.
//
// # The quarantine
//
// Config.Quarantine (pkg/quarantine implements it on DynamoDB) is pkg/fifo's
// quarantine in Kafka's terms, with every guarantee it has there. A held
// key is a key of a topic (a TopicKey: the lane key, of the record's
// topic); a parked record's sequence is its offset, in the partition the
// hold records. A record that fails permanently, that failed as often as
// the threshold allows, or that carries another partition count (below)
// holds its key: it and every later record of its lane are parked in one
// call, in offset order, and count as completed, so the partition's commit
// moves past them and its other keys go on. A held key's later records are
// parked after them, in every later batch, until an operator redrives the
// key: the redrive re-publishes copies of the parked records to the hold's
// partition, oldest first, and the copy of the oldest parked record (and
// only it) runs, each success recorded (Quarantine.Done) until the last
// releases the key. A copy of another epoch, of a record already done or
// discarded, and a redelivery of a record parked before a release are
// dropped; a copy that fails again holds the key again; a record that only
// claims to be a copy is an ordinary record. A Check that fails fails every
// keyed record of the batch; a panic or a runtime.Goexit in the quarantine
// fails the records of its call, never the invocation. Records without a
// lane key (the null-key lanes) are not quarantined.
//
// # What replaces the receive count
//
// SQS counts a message's receives (ApproximateReceiveCount), and pkg/fifo
// parks a message whose count reached its threshold before it runs. A
// Kafka record has no such count. Two ways to make one were weighed:
//
//   - The mapping's MaximumRetryAttempts, with an on-failure destination
//     feeding the quarantine: Lambda gives a record up after its retries,
//     and a consumer of the destination parks it. But giving it up commits
//     past it: the key's later records, already in the partition, run
//     before the failed one is parked, and the key's order is lost. The
//     destination also receives whole batches (Lambda sends the invocation,
//     not the record), every other key's records included. Cost: no request
//     per attempt, then a write per record given up, but R+1 invocations of
//     the partition's batch (up to BatchSize-1 other records each) for a
//     MaximumRetryAttempts of R.
//   - A failure count per key, kept in the key's quarantine item: what this
//     package does. Quarantine.Failed records each failed attempt of a keyed
//     record (its partition and offset, how many of its attempts failed,
//     the last cause): one conditional write per failed attempt, and no
//     read, because the processor's one Check per batch already reads every
//     key's item (one BatchGetItem per 100 keys, which the quarantine makes
//     anyway) and passes the hold it read to Failed. A key with no item is
//     not held and has failed nothing, so a batch that fails nothing costs
//     that read alone, and a record that succeeds the first time costs no
//     write. The count is of the record's own failures: a redelivery caused
//     by another key's failure (head-of-line), a record skipped after an
//     earlier failure of its lane or for the deadline, is not counted. A
//     record whose (T-1)th attempt failed is parked in that same
//     invocation, where a receive count would park it on its Tth delivery,
//     before it runs: the same attempts, and one delivery of its
//     partition's batch less. A record delivered with T-1 failures counted
//     (its parking failed last time) is parked before it runs. Cost: T-1
//     writes and one park for a poisoned record (the park reads its hold
//     and its lane's records in one BatchGetItem, then writes them in one
//     TransactWriteItems), T-1 invocations of its partition's batch.
//
// What the count cannot see: an attempt whose invocation crashed or timed
// out (a handler that ignores its context, the process out of memory)
// records nothing, where SQS counts every receive. Such a record is
// bounded by the mapping: BisectBatchOnFunctionError narrows the batch
// down to it, and MaximumRetryAttempts gives it up to the on-failure
// destination. QuarantineThreshold must be at most the mapping's
// MaximumRetryAttempts + 1 (the invocations Lambda makes of a record), so
// that the quarantine parks every record that fails in its handler before
// the mapping gives it up, a failed park included (the last invocation
// parks it before it runs). template-kafka.yaml keeps its thresholds at
// most MaximumRetryAttempts, one invocation spare, and its tests hold that.
// A handler that runs into its deadline is counted: it returns when its
// context ends, and the count is written in the first half of
// ResponseReserve.
//
// # A key that moves partition
//
// A key's partition is murmur2(key) modulo the topic's partition count, so
// adding partitions moves most keys to another partition, where their new
// records could run before their older ones still waiting in the old
// partition. A record runs only if it carries the count the consumer is
// configured with, or none. The relay (internal/app/outbox/kafkaout)
// stamps every record with its configured count (TOPIC_PARTITIONS),
// produces to a topic only while the brokers' metadata, asked for at each
// round, shows that count, and refuses a record its producer's cached
// metadata would partition over another. So once partitions are added no
// relay produces until TOPIC_PARTITIONS is deployed with the new count,
// and no relay of the new count produces before the brokers have it: a
// key's records carry the old count until that deployment and the new one
// after, never interleaved. The one exception is a relay round that
// checked just before the partitions were added, which lasts at most the
// relay's timeout. Under docs/KAFKA.md's procedure ("A key that moves
// partition") a relay's record never runs before an older record of its
// key. The checks:
//
//   - The relay writes its configured count, the one its partitioner used,
//     into each record (PartitionCountHeader), and a consumer configured
//     with the topic's count (Config.PartitionCount; the wiring's
//     TOPIC_PARTITIONS, template-kafka.yaml's TopicPartitions) holds the
//     key of a record that carries another count (ErrPartitionCountChanged),
//     or fails the record without a quarantine. Records without the header
//     (another producer's) are not checked, nor are the null-key lanes,
//     which have no key order to lose.
//   - A record of a held key read from another partition than the hold's is
//     refused (ErrKeyMovedPartition): it fails, uncounted, with the rest of
//     its lane, until the mapping's MaximumRetryAttempts gives it up to the
//     on-failure destination. Its offset is of another partition's sequence,
//     so it can be neither parked among the hold's records nor run before
//     them. A redrive sends each copy to its hold's partition, so a held key
//     drains where it was held, whatever the count.
//
// Deploying the new count before the old partitions are consumed breaks
// that: a key's record stamped with the new count, on its new partition,
// would run while an older one waits in the old partition.
//
// # The commit
//
// CommitOffsets is what a faithful local mapping commits: each partition's
// contiguous completed prefix, walked over the records the batch holds, so
// a missing offset (compaction, a transaction marker) never stalls it and
// a completion after a hole never moves it past the hole.
package kafka
