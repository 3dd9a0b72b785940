//go:build postgres

// Command intake, built with the postgres tag (template-postgres.yaml, on
// either transport: intake is the same on both), is the jobs API's
// function with the jobs on PostgreSQL: wired by
// internal/lambdawire.IntakePostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.IntakePostgres(pgopen.Open)) }
