// Command relay is the Lambda function that publishes the Jobs table's
// outbox, its stream, to the commands and events FIFO queues: internal/app/outbox,
// wired by internal/lambdawire.Relay.
package main

import "github.com/fifoworker/fifoworker/internal/lambdawire"

func main() { lambdawire.Main(lambdawire.Relay) }
