//go:build kafka && !postgres

// Command relay, built with the kafka tag (template-kafka.yaml), is the
// Lambda function that publishes the Jobs table's outbox, its stream, to
// the commands and events topics, each job's records keyed by its id:
// internal/app/outbox on internal/app/outbox/kafkaout, wired by
// internal/lambdawire/kafkarelay.Relay, which names its settings. It is
// the one bootstrap that carries a Kafka client.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(kafkarelay.Relay) }
