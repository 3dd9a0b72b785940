// Package pgrelay wires the relay of the PostgreSQL job store's outbox
// (internal/app/outbox/pgsource) to the SQS queues, which
// functions/relay's main_postgres.go runs. It is a package of its own, as
// internal/lambdawire/kafkarelay is, and builds on the start-up code alone:
// internal/lambdawire reaches every function's application and the
// DynamoDB and S3 clients, whose package initialisation the relay, which
// calls neither, would link beside the driver.
package pgrelay

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// Relay publishes the job_outbox table (internal/app/outbox/pgsource) to
// the commands and events FIFO queues (internal/app/outbox/sqsout's sink),
// for each writer's nudge and for the schedule that backs them up.
// Settings: COMMANDS_QUEUE_URL, EVENTS_QUEUE_URL, the database's (open:
// internal/lambdawire/pgopen.Open), STORE "postgres" and TRANSPORT unset or
// "sqs", and AWS_LAMBDA_FUNCTION_NAME, the dimension of each Drain's
// metrics (pgsource.MetricsNamespace; none without it). Its bootstrap
// links no DynamoDB client: pgsource reads the rows
// with pkg/jobs/jobitem.
func Relay(open func(*startup.Env, aws.Config) *sql.DB) startup.Builder[json.RawMessage, pgsource.Report] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, json.RawMessage) (pgsource.Report, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportSQS)
		commands := env.String("COMMANDS_QUEUE_URL")
		evts := env.String("EVENTS_QUEUE_URL")
		db := open(env, cfg)
		if err := env.Err(); err != nil {
			return nil, err
		}
		sink, err := sqsout.NewSink(sqsout.Config{Client: sqs.NewFromConfig(cfg), CommandsURL: commands, EventsURL: evts, Logger: log})
		if err != nil {
			return nil, env.Refused(err, startup.Fields{"CommandsURL": "COMMANDS_QUEUE_URL", "EventsURL": "EVENTS_QUEUE_URL"})
		}
		relay, err := pgsource.New(pgsource.Config{DB: db, Sink: sink, Logger: log, FunctionName: env.StringOr("AWS_LAMBDA_FUNCTION_NAME", "")})
		if err != nil {
			return nil, err // its Config holds no setting of its own
		}
		return relay.Handle, nil
	}
}
