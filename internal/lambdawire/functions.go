package lambdawire

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/outbox"
	"github.com/fifoworker/fifoworker/pkg/projection"
	"github.com/fifoworker/fifoworker/pkg/worker"
	"github.com/fifoworker/fifoworker/pkg/worker/articles"
)

// Builder builds a function's handler from its settings. The function's
// main.go (through Main) and the local pipeline (in process, with the
// settings template.yaml gives the function) call the same builder, so a
// function runs the same code wherever it runs.
type Builder[E, R any] func(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, E) (R, error), error)

// Main is a function's main: settings and the AWS configuration from the
// process environment (AWSConfig), the handler, lambda.Start. A function
// that cannot be built fails its init with every problem named.
func Main[E, R any](build Builder[E, R]) {
	log := Logger()
	env := NewEnv()
	h, err := build(env, env.AWSConfig(), log)
	if err == nil {
		err = env.Err() // the AWS configuration's problems, had the builder not asked
	}
	if err != nil {
		Fatal(log, err)
	}
	lambda.Start(h)
}

// S3 returns an S3 client; with an endpoint override (a local emulator on
// 127.0.0.1, which has no virtual-host names) it addresses buckets by path.
func S3(cfg aws.Config) *s3.Client {
	local := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = local })
}

// Intake is the jobs API (pkg/intake). Settings: JOBS_TABLE,
// CANDIDATES_BUCKET, TENANT_CLAIM (default "tenant"), RESULT_URL_TTL
// (default 5m, 1s to 1h).
func Intake(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	table := env.String("JOBS_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	claim := env.StringOr("TENANT_CLAIM", intake.DefaultTenantClaim)
	ttl := env.Duration("RESULT_URL_TTL", intake.DefaultResultURLTTL, intake.MinResultURLTTL, intake.MaxResultURLTTL)
	if err := env.Err(); err != nil {
		return nil, err
	}
	presigner, err := intake.NewS3Presigner(s3.NewPresignClient(S3(cfg)), bucket)
	if err != nil {
		return nil, err
	}
	h, err := intake.New(intake.Config{
		Store:        jobs.NewDynamoStore(dynamodb.NewFromConfig(cfg), table),
		Presigner:    presigner,
		TenantClaim:  claim,
		ResultURLTTL: ttl,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}

// Relay publishes the Jobs table's stream (pkg/outbox). Settings:
// COMMANDS_QUEUE_URL, EVENTS_QUEUE_URL.
func Relay(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), error) {
	commands := env.String("COMMANDS_QUEUE_URL")
	evts := env.String("EVENTS_QUEUE_URL")
	if err := env.Err(); err != nil {
		return nil, err
	}
	for name, url := range map[string]string{"COMMANDS_QUEUE_URL": commands, "EVENTS_QUEUE_URL": evts} {
		if !strings.HasSuffix(url, ".fifo") {
			return nil, fmt.Errorf("lambdawire: %s=%q is not a FIFO queue: per-job order needs one", name, url)
		}
	}
	return outbox.NewRelay(sqs.NewFromConfig(cfg), commands, evts, log).Handle, nil
}

// Projector consumes the events queue into job views and tenant totals
// (pkg/projection), one lane per job (pkg/fifo). Settings: VIEWS_TABLE,
// TOTALS_TABLE, JOBS_TABLE (recovery reads it), EVENTS_DLQ_URL (optional:
// where a malformed event goes), RECOVER_AFTER_RECEIVES (default 3).
func Projector(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	views := env.String("VIEWS_TABLE")
	totals := env.String("TOTALS_TABLE")
	jobsTable := env.String("JOBS_TABLE")
	deadLetters := env.StringOr("EVENTS_DLQ_URL", "")
	recoverAfter := env.Int("RECOVER_AFTER_RECEIVES", projection.DefaultRecoverAfter, 1, projection.MaxRecoverAfter)
	if err := env.Err(); err != nil {
		return nil, err
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
		// Only a malformed body is permanent; without a DLQ it is retried
		// until the queue's redrive policy moves it.
		opts = append(opts, fifo.WithDeadLetterQueue(sqs.NewFromConfig(cfg), deadLetters))
	}
	return fifo.New(projector.Handle, opts...).Process, nil
}

// Worker consumes the commands queue: each job.run command is claimed, run
// by the articles export and accepted (pkg/worker), one lane per job
// (pkg/fifo). Settings: JOBS_TABLE, ARTICLES_TABLE, CANDIDATES_BUCKET,
// COMMANDS_DLQ_URL (where a malformed command goes), MAX_GENERATIONS
// (default 3, at most the commands queue's maxReceiveCount - 1).
func Worker(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	jobsTable := env.String("JOBS_TABLE")
	articlesTable := env.String("ARTICLES_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	dlqURL := env.String("COMMANDS_DLQ_URL")
	maxGenerations := env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4)
	if err := env.Err(); err != nil {
		return nil, err
	}
	ddb := dynamodb.NewFromConfig(cfg)
	w := worker.New(worker.Config{
		Jobs: jobs.NewDynamoStore(ddb, jobsTable,
			jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: int64(maxGenerations)})),
		Candidates: candidate.New(S3(cfg), bucket),
		Task:       articles.NewExport(ddb, articlesTable),
		Logger:     log,
	})
	return fifo.New(w.Handle,
		fifo.WithDeadLetterQueue(sqs.NewFromConfig(cfg), dlqURL),
		fifo.WithLogger(log),
	).Process, nil
}
