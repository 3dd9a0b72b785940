// Package kafkaout is the relay's Kafka transport: the sink that produces
// the Jobs table's outbox to the commands and events topics, NewRelay, the
// relay on it, and NewProducer, its franz-go client (idempotent, acks from
// all in-sync replicas; plain, Amazon MSK's IAM authentication or
// SASL/SCRAM-SHA-512, the last two over TLS). The
// stream logic (decoding, per-job order, the partial batch response, the
// trace header) is internal/app/outbox's, the same as SQS's; this package
// links no SQS client, and sqsout links no Kafka one.
//
// A record of the relay is keyed by its job id (so a job's records are in
// one partition of each topic while the topic's partition count holds:
// the key is hashed with murmur2 as Kafka's own producer does), its value
// is the body SQS would carry, and it has these headers (docs/KAFKA.md,
// "Records on the topics"):
//   - outbox-id: the message's outbox id, "job-42/v3", whole: the id a
//     consumer tells a record published again by (the body's command_id or
//     event_id is the same);
//   - message-type: "job.run" for a command, the event's type for an event;
//   - X-Amzn-Trace-Id: the relay invocation's X-Ray trace header, when it
//     has a well-formed one (none otherwise);
//   - fifoworker-partitions (kafka.PartitionCountHeader): the partition
//     count the record was partitioned over, Config.PartitionCount, the
//     count the consumers check (TOPIC_PARTITIONS).
//
// Invariants:
//   - A job's version v+1 is produced only after the brokers acknowledged
//     v (on either topic: a job's commands and events are one order): the
//     relay hands the sink one message per job per round, and the sink
//     waits for every acknowledgement of a round before it returns. kgo's
//     own ordering is not relied on (see the sink type for what kgo
//     guarantees and where it does not).
//   - What is not acknowledged is not published: a refusal, an error of the
//     client, or no answer by ResponseReserve before the invocation's
//     deadline. The response then names the first such stream record and
//     Lambda retries from it. A record whose outcome was unknown may be
//     written twice; the copy has the same outbox id.
//   - A record is produced only while its topic has exactly
//     Config.PartitionCount partitions, and only over that count: before
//     each round the sink asks the brokers for the round's topics' metadata
//     (one request, AllowAutoTopicCreation off), and a topic they show with
//     another count gets none of the round's records (ErrPartitionCount,
//     naming the topic, the brokers' count and the relay's); the
//     producer's partitioner then refuses a record if its own metadata, on
//     which kgo partitions, has another count than the record carries (it
//     learnt the topic before partitions were added: kgo refreshes it only
//     every 5 minutes), and the sink has that metadata refreshed for the
//     retry. So an execution environment that learnt the old count cannot
//     publish a job's record over it after partitions were added, past
//     another environment's record of the job over the new count (the
//     case pkg/kafka's doc, "A key that moves partition", leaves to the
//     relay): once the brokers have the new count, a relay of the old one
//     produces nothing, and a relay of the new one produces nothing before
//     they have it. Adding partitions stops the relay until
//     TOPIC_PARTITIONS is deployed with the new count (docs/KAFKA.md's
//     procedure); meanwhile the stream mapping retries the records, and
//     past its MaximumRetryAttempts (template-kafka.yaml: 20) gives them to its
//     on-failure queue, as any record the relay cannot publish. A round that
//     checked just before the partitions were added still produces over
//     the old count (the check and the produce are two requests), so that
//     procedure waits for the relay's timeout after adding partitions
//     before it deploys the new count. The check costs one metadata round
//     trip per round; asking once per invocation, or trusting kgo's
//     cached metadata, would stretch that window to an invocation, or to
//     however long an environment's metadata is stale.
//   - A topic that does not exist, a record over the topic's
//     max.message.bytes and brokers that do not answer are each logged
//     with what they are; none is skipped.
package kafkaout
