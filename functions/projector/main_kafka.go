//go:build kafka && !postgres

// Command projector, built with the kafka tag (template-kafka.yaml), is
// the Lambda function that consumes the events topic into the job views
// and tenant totals (internal/app/projection), one lane per partition and
// job (pkg/kafka). Wired by internal/lambdawire.ProjectorKafka, which
// names its settings; the bootstrap links no SQS processor.
package main

import (
	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

func main() { startup.Main(lambdawire.ProjectorKafka) }
