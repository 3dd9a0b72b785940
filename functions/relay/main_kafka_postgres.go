//go:build kafka && postgres

// Command relay, built with the kafka and postgres tags
// (template-kafka-postgres.yaml), is the Lambda function that publishes the
// PostgreSQL job store's outbox table to the commands and events topics,
// for the writers' nudges and its schedule: wired by
// internal/lambdawire/kafkarelay.RelayPostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(kafkarelay.RelayPostgres(pgopen.Open)) }
