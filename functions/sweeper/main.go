//go:build !postgres

// Command sweeper is the scheduled function that deletes orphan candidates,
// nudges stuck jobs, repairs the projections of final jobs whose last
// event was lost (internal/app/sweeper) and reports the quarantine's held groups,
// wired by internal/lambdawire.Sweeper, which also names its settings. Its input is the schedule's constant
// {"dry_run": false}; its result is the run's report.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Sweeper) }
