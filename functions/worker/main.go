// Command worker is the Lambda function that consumes the commands queue:
// each job.run command is claimed, run by the articles export and accepted
// (pkg/worker), one lane per job (pkg/fifo).
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/lambdawire"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/worker"
	"github.com/fifoworker/fifoworker/pkg/worker/articles"
)

func main() {
	log := lambdawire.Logger()
	env := lambdawire.NewEnv()
	jobsTable := env.String("JOBS_TABLE")
	articlesTable := env.String("ARTICLES_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	dlqURL := env.String("COMMANDS_DLQ_URL")
	// At most the commands queue's maxReceiveCount - 1 (template.yaml's
	// MaxGenerations parameter has the same bounds).
	maxGenerations := env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4)
	if err := env.Err(); err != nil {
		lambdawire.Fatal(log, err)
	}
	cfg, err := lambdawire.AWSConfig(context.Background())
	if err != nil {
		lambdawire.Fatal(log, err)
	}
	ddb := dynamodb.NewFromConfig(cfg)
	w := worker.New(worker.Config{
		Jobs: jobs.NewDynamoStore(ddb, jobsTable,
			jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: int64(maxGenerations)})),
		Candidates: candidate.New(s3.NewFromConfig(cfg), bucket),
		Task:       articles.NewExport(ddb, articlesTable),
		Logger:     log,
	})
	processor := fifo.New(w.Handle,
		fifo.WithDeadLetterQueue(sqs.NewFromConfig(cfg), dlqURL),
		fifo.WithLogger(log),
	)
	lambda.Start(processor.Process)
}
