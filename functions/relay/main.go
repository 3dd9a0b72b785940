//go:build !kafka && !postgres

// Command relay is the Lambda function that publishes the Jobs table's
// outbox, its stream, to the commands and events FIFO queues: internal/app/outbox,
// wired by internal/lambdawire.Relay. Built with the kafka tag,
// main_kafka.go is the command instead: the same relay to the commands
// and events topics.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.Relay) }
