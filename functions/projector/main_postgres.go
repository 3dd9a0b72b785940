//go:build postgres && !kafka

// Command projector, built with the postgres tag (template-postgres.yaml),
// is the Lambda function that consumes the events queue into the views
// and totals on PostgreSQL: wired by internal/lambdawire.ProjectorPostgres,
// which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.ProjectorPostgres(pgopen.Open)) }
