//go:build postgres && !kafka

// Command relay, built with the postgres tag (template-postgres.yaml), is
// the Lambda function that publishes the PostgreSQL job store's outbox
// table to the commands and events FIFO queues, for the writers' nudges
// and its schedule: internal/app/outbox/pgsource, wired by
// internal/lambdawire/pgrelay.Relay, which names its settings and
// imports none of the other builders. It links no DynamoDB client.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgrelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(pgrelay.Relay(pgopen.Open)) }
