// Package kafkabroker is the local stack's Kafka broker: franz-go's kfake,
// an in-process fake cluster that speaks Kafka's wire protocol (produce
// and fetch, consumer groups, idempotent and transactional producers,
// compaction), run as one broker. `fifoworker local up` runs it as a
// process of the stack (the hidden `fifoworker local kafka-broker --port
// N`), with a PID, a log and a port like the emulators (see
// internal/dev/localstack); a test that needs only a broker can run one in
// its own process.
//
// Invariants:
//   - It listens on 127.0.0.1 and nowhere else, whatever kfake's default,
//     and advertises that address in its metadata, so a client that
//     bootstraps from it stays on loopback.
//   - It starts with no topic and creates none on demand: a topic exists
//     once a CreateTopics (kadm) made it, as on an MSK cluster with its
//     default configuration (auto.create.topics.enable=false; checked in
//     AWS's "Default Amazon MSK configuration",
//     https://docs.aws.amazon.com/msk/latest/developerguide/msk-default-configuration.html).
//     Whoever deploys creates the topics; a CreateTopics that leaves the
//     partition count to the broker gets Config.DefaultPartitions.
//   - It is one broker, so a topic has one replica: a replication factor
//     above 1 is refused (INVALID_REPLICATION_FACTOR), -1 gets 1, and
//     acks from all replicas are that replica's.
//   - Its records live in memory and go with it. Run serves until its
//     context ends (SIGTERM or SIGINT, for the process), then closes the
//     listener and the cluster.
package kafkabroker
