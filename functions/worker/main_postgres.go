//go:build postgres && !kafka

// Command worker, built with the postgres tag (template-postgres.yaml), is
// the Lambda function that consumes the commands queue with the jobs and
// the quarantine on PostgreSQL (the articles stay in DynamoDB): wired by
// internal/lambdawire.WorkerPostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.WorkerPostgres(pgopen.Open)) }
