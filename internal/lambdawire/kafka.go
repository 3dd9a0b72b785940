package lambdawire

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// WorkerKafka consumes the commands topic: each record is a job.run
// command keyed by its job's id, claimed, run and accepted as Worker does
// (internal/app/worker's HandleRecord), one lane per partition and job
// (pkg/kafka). Settings: TRANSPORT "kafka" (see startup.CheckTransport), and the
// worker's own, as Worker reads them: JOBS_TABLE, ARTICLES_TABLE,
// CANDIDATES_BUCKET, MAX_GENERATIONS (default 3, 1 to 4), the spool's
// (EPHEMERAL_STORAGE_MB, MAX_CANDIDATE_BYTES: see workerCandidates). No
// queue or topic is named: the event source mapping names the topic.
//
// The quarantine is not built for Kafka yet: this consumer runs without
// one. A command that can never run (malformed, under another job's key
// or a null key, for no job of its tenant) is marked kafka.Permanent, and
// with no dead-letter store that is an ordinary failure: the record is
// reported, and it and every later offset of its partition come back
// until the mapping's MaximumRetryAttempts gives it to its on-failure
// destination. The template's QUARANTINE_* and COMMANDS_TOPIC settings
// are for that later step and are not read.
//
// At most ten lanes run at once (lanesPerBatch), whatever the mapping's
// BatchSize: the cold start's spool check makes room for ten candidates
// of MAX_CANDIDATE_BYTES, so that, as on SQS, no lane waits for room.
func WorkerKafka(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
	startup.CheckTransport(env, startup.TransportKafka)
	w, err := readWorkerSettings(env).worker(env, cfg, DynamoDB(cfg), log)
	if err != nil {
		return nil, err
	}
	p, err := kafka.New(workerProcessor(w.HandleRecord, log))
	if err != nil {
		return nil, err // its Config holds no setting of the environment
	}
	return p.Process, nil
}

// workerProcessor is the Kafka processor's Config for the worker's
// handler h: at most lanesPerBatch lanes at once.
func workerProcessor(h kafka.Handler, log *slog.Logger) kafka.Config {
	return kafka.Config{Handler: h, Concurrency: lanesPerBatch, Logger: log}
}

// ProjectorKafka consumes the events topic into job views and tenant
// totals as Projector does (internal/app/projection's HandleRecord), one
// lane per partition and job (pkg/kafka). Settings: TRANSPORT "kafka"
// (see startup.CheckTransport), VIEWS_TABLE, TOTALS_TABLE and JOBS_TABLE (recovery
// reads it). A record has no receive count, so a version gap recovers
// from the job item at once (RecoverAfter does not apply, and the
// template's RECOVER_AFTER_ATTEMPTS is not read).
//
// The quarantine is not built for Kafka yet: this consumer runs without
// one. An event that can never be projected (malformed, under another
// job's key or a null key) is marked kafka.Permanent, which with no
// dead-letter store is an ordinary failure: the record holds its
// partition until the mapping's MaximumRetryAttempts gives it to its
// on-failure destination. The template's QUARANTINE_* and EVENTS_TOPIC
// settings are for that later step and are not read.
func ProjectorKafka(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
	startup.CheckTransport(env, startup.TransportKafka)
	projector, err := readProjectorTables(env).projector(env, DynamoDB(cfg), log, 0)
	if err != nil {
		return nil, err
	}
	p, err := kafka.New(kafka.Config{Handler: projector.HandleRecord, Logger: log})
	if err != nil {
		return nil, err // its Config holds no setting of the environment
	}
	return p.Process, nil
}
