// Package kafkarelay wires the relay's Kafka variant
// (internal/app/outbox/kafkaout), which functions/relay's main_kafka.go
// runs. It is a package of its own, not a builder of internal/lambdawire
// beside the others, for two reasons that internal/dev/layers holds. Only
// it needs a Kafka client: every other bootstrap imports
// internal/lambdawire, and none of them, the SQS ones and the Kafka
// consumers alike, carries franz-go. And it builds on the start-up code
// alone (internal/lambdawire/startup), not on internal/lambdawire, whose
// other builders reach every function's application and the DynamoDB, S3
// and SQS clients: linked beside franz-go, their packages' initialisation
// would take the Kafka relay over the 10 MB goal (docs/BENCHMARKS.md).
package kafkarelay
