//go:build kafka && postgres

// Command worker, built with the kafka and postgres tags
// (template-kafka-postgres.yaml), is the Lambda function that consumes the
// commands topic with the jobs and the quarantine on PostgreSQL: wired by
// internal/lambdawire.WorkerKafkaPostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.WorkerKafkaPostgres(pgopen.Open)) }
