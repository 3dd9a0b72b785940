//go:build kafka && !postgres

// Command worker, built with the kafka tag (template-kafka.yaml), is the
// Lambda function that consumes the commands topic: each record's job.run
// command is claimed, run and accepted (internal/app/worker), one lane per
// partition and job (pkg/kafka). Wired by internal/lambdawire.WorkerKafka,
// which names its settings; the bootstrap links no SQS processor.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.WorkerKafka) }
