// Package kafkarelay wires the relay's Kafka variant
// (internal/app/outbox/kafkaout), which functions/relay's main_kafka.go
// runs. It is a package of its own, not a builder of internal/lambdawire
// beside the others, because only it needs a Kafka client: every other
// bootstrap imports internal/lambdawire, and none of them, the SQS ones
// and the Kafka consumers alike, carries franz-go (internal/dev/layers
// holds that).
package kafkarelay
