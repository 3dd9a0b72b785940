//go:build !kafka && !postgres

// Command worker is the Lambda function that consumes the commands queue:
// each job.run command is claimed, run by the articles export and accepted
// (internal/app/worker), one lane per job (pkg/fifo). Wired by
// internal/lambdawire.Worker, which names its settings. Built with the
// kafka tag, main_kafka.go is the command instead: the same worker on the
// commands topic.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Worker) }
