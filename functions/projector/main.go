// Command projector is the Lambda function that consumes the events queue
// into the job views and tenant totals (pkg/projection), one lane per job
// (pkg/fifo), recovering a job that waited too long for a lost event from
// the Jobs table.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/projection"
)

func main() {
	log := lambdawire.Logger()
	env := lambdawire.NewEnv()
	views := env.String("VIEWS_TABLE")
	totals := env.String("TOTALS_TABLE")
	jobsTable := env.String("JOBS_TABLE")
	deadLetters := env.StringOr("EVENTS_DLQ_URL", "")
	recoverAfter := env.Int("RECOVER_AFTER_RECEIVES", projection.DefaultRecoverAfter, 1, projection.MaxRecoverAfter)
	if err := env.Err(); err != nil {
		lambdawire.Fatal(log, err)
	}
	cfg, err := lambdawire.AWSConfig(context.Background())
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	projector := projection.NewProjector(
		projection.NewDynamoStore(db, projection.Tables{Views: views, Totals: totals}),
		jobs.NewDynamoStore(db, jobsTable),
		projection.WithLogger(log),
		projection.WithRecoverAfter(recoverAfter),
	)
	opts := []fifo.Option{fifo.WithLogger(log)}
	if deadLetters != "" {
		// Only a malformed body is permanent; without a DLQ URL it is
		// retried until the queue's redrive policy moves it.
		opts = append(opts, fifo.WithDeadLetterQueue(sqs.NewFromConfig(cfg), deadLetters))
	}
	lambda.Start(fifo.New(projector.Handle, opts...).Process)
}
