//go:build postgres

// Command sweeper, built with the postgres tag (template-postgres.yaml, on
// either transport), is the scheduled sweeper with the jobs, the
// projections and the quarantine's holds on PostgreSQL: wired by
// internal/lambdawire.SweeperPostgres, which names its settings.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.SweeperPostgres(pgopen.Open)) }
