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
// (EPHEMERAL_STORAGE_MB, MAX_CANDIDATE_BYTES: see workerCandidates), and
// the commands topic's quarantine's (COMMANDS_TOPIC and the others of
// kafkaQuarantined; QUARANTINE_AFTER_ATTEMPTS at least MAX_GENERATIONS +
// 2, as on SQS: a takeover's failed claims are attempts the recovery
// policy decides on). A command that can never run (malformed, under
// another job's key, for no job of its tenant) is kafka.Permanent: its
// job's key is held and its records parked, in order, until an operator
// redrives them. A null-key record is not quarantined: it fails until the
// mapping's MaximumRetryAttempts gives it to its on-failure destination.
//
// At most ten lanes run at once (lanesPerBatch), whatever the mapping's
// BatchSize: the cold start's spool check makes room for ten candidates
// of MAX_CANDIDATE_BYTES, so that, as on SQS, no lane waits for room.
func WorkerKafka(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportKafka)
	s := readWorkerSettings(env)
	ddb := DynamoDB(cfg)
	consumer := kafkaQuarantined(env, cfg, ddb, log, "COMMANDS_TOPIC", s.maxGenerations+2)
	w, err := s.worker(env, cfg, ddb, log)
	if err != nil {
		return nil, err
	}
	return processKafka(env, workerProcessor(consumer), w.HandleRecord, log)
}

// workerProcessor is the Kafka processor's Config cfg for the worker: at
// most lanesPerBatch lanes at once.
func workerProcessor(cfg kafka.Config) kafka.Config {
	cfg.Concurrency = lanesPerBatch
	return cfg
}

// ProjectorKafka consumes the events topic into job views and tenant
// totals as Projector does (internal/app/projection's HandleRecord), one
// lane per partition and job (pkg/kafka). Settings: TRANSPORT "kafka"
// (see startup.CheckTransport), VIEWS_TABLE, TOTALS_TABLE and JOBS_TABLE (recovery
// reads it), and the events topic's quarantine's (EVENTS_TOPIC and the
// others of kafkaQuarantined; QUARANTINE_AFTER_ATTEMPTS at least 2). A
// version gap recovers from the job item at once: the processor gives a
// handler no attempt count (RecoverAfter does not apply, and the
// template's RECOVER_AFTER_ATTEMPTS is not read). An event that can never
// be projected (malformed, under another job's key) is kafka.Permanent:
// its job's key is held and its records parked, in order.
func ProjectorKafka(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportKafka)
	tables := readProjectorTables(env)
	ddb := DynamoDB(cfg)
	consumer := kafkaQuarantined(env, cfg, ddb, log, "EVENTS_TOPIC", kafka.MinQuarantineThreshold)
	projector, err := tables.projector(env, ddb, log, 0)
	if err != nil {
		return nil, err
	}
	return processKafka(env, consumer, projector.HandleRecord, log)
}
