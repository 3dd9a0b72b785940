//go:build kafka && postgres

// Command projector, built with the kafka and postgres tags
// (template-kafka-postgres.yaml), is the Lambda function that consumes the
// events topic into the views and totals on PostgreSQL: wired by
// internal/lambdawire.ProjectorKafkaPostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.ProjectorKafkaPostgres(pgopen.Open)) }
