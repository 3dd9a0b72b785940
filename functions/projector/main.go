//go:build !kafka && !postgres

// Command projector is the Lambda function that consumes the events queue
// into the job views and tenant totals (internal/app/projection), one lane per job
// (pkg/fifo): wired by internal/lambdawire.Projector, which names its
// settings. Built with the kafka tag, main_kafka.go is the command
// instead: the same projector on the events topic.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Projector) }
