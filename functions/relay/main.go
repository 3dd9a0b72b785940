// Command relay is the Lambda function that publishes the Jobs table's
// outbox: its stream to the commands and events FIFO queues (pkg/outbox).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/outbox"
)

func main() {
	log := lambdawire.Logger()
	env := lambdawire.NewEnv()
	commands := env.String("COMMANDS_QUEUE_URL")
	evts := env.String("EVENTS_QUEUE_URL")
	if err := env.Err(); err != nil {
		lambdawire.Fatal(log, err)
	}
	cfg, err := lambdawire.AWSConfig(context.Background())
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	relay := outbox.NewRelay(sqs.NewFromConfig(cfg), commands, evts, log)
	lambda.Start(relay.Handle)
}
