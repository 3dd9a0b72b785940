package lambdawire

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// OpenDB opens the function's PostgreSQL database from its settings
// (POSTGRES_* or, locally, FIFOWORKER_POSTGRES_DSN), or returns nil when
// one is wrong, env naming it: internal/lambdawire/pgopen.Open, which a
// PostgreSQL bootstrap passes to its builder here. This package imports
// no driver, so that no DynamoDB bootstrap links one.
type OpenDB func(env *startup.Env, cfg aws.Config) *sql.DB

// IntakePostgres is Intake with the jobs on PostgreSQL
// (template-postgres.yaml): settings CANDIDATES_BUCKET, TENANT_CLAIM,
// RESULT_URL_TTL as Intake's, the database's (OpenDB), STORE "postgres"
// (startup.CheckStore), and RELAY_FUNCTION_NAME, the relay each committed
// creation or cancellation nudges (relayNudger).
func IntakePostgres(open OpenDB) startup.Builder[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		s := readIntakeSettings(env)
		store, nudger := postgresWriterJobs(env, cfg, open, 0, log)
		h, err := s.intake(env, cfg, func() (jobs.Store, error) { return store, nil }, log)
		if err != nil {
			return nil, err
		}
		return flushing(h.Handle, nudger), nil
	}
}

// WorkerPostgres is Worker with the jobs and the commands queue's
// quarantine on PostgreSQL: settings as Worker's but JOBS_TABLE and
// QUARANTINE_TABLE, plus the database's (OpenDB), STORE "postgres" and
// RELAY_FUNCTION_NAME (relayNudger). The articles stay in DynamoDB's
// ARTICLES_TABLE: the one DynamoDB client a PostgreSQL bootstrap links.
func WorkerPostgres(open OpenDB) startup.Builder[events.SQSEvent, events.SQSEventResponse] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportSQS)
		s := readWorkerSettings(env)
		store, nudger := postgresWriterJobs(env, cfg, open, s.maxGenerations, log)
		consumer := quarantinedOn(env, cfg, postgresHolds(store.db), log, "COMMANDS_QUEUE_ARN", s.maxGenerations+2)
		w, err := s.workerOn(env, cfg, DynamoDB(cfg), func() (jobs.Store, error) { return store, nil }, log)
		if err != nil {
			return nil, err
		}
		h, err := consume(env, consumer, w.Handle, log)
		if err != nil {
			return nil, err
		}
		return flushing(h, nudger), nil
	}
}

// ProjectorPostgres is Projector with the views, the totals, the jobs it
// recovers from and the events queue's quarantine on PostgreSQL: settings
// RECOVER_AFTER_RECEIVES, EVENTS_QUEUE_ARN, QUARANTINE_BUCKET,
// QUARANTINE_AFTER_RECEIVES as Projector's, the database's (OpenDB), STORE
// "postgres". It writes no job, so it nudges nothing.
func ProjectorPostgres(open OpenDB) startup.Builder[events.SQSEvent, events.SQSEventResponse] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportSQS)
		recoverAfter := env.Int("RECOVER_AFTER_RECEIVES", projection.DefaultRecoverAfter, 1, projection.MaxRecoverAfter)
		db := open(env, cfg)
		consumer := quarantinedOn(env, cfg, postgresHolds(db), log, "EVENTS_QUEUE_ARN", recoverAfter+1)
		if err := env.Err(); err != nil {
			return nil, err
		}
		store, source, err := postgresProjection(db)
		if err != nil {
			return nil, err
		}
		projector, err := newProjector(env, store, source, log, recoverAfter)
		if err != nil {
			return nil, err
		}
		return consume(env, consumer, projector.Handle, log)
	}
}

// SweeperPostgres is Sweeper with the jobs, the projections and the
// quarantine's holds on PostgreSQL: settings as Sweeper's but JOBS_TABLE,
// VIEWS_TABLE, TOTALS_TABLE and QUARANTINE_TABLE (the holds are always
// there, so COMMANDS_QUEUE_ARN and EVENTS_QUEUE_ARN are required), plus the
// database's (OpenDB), STORE "postgres" and RELAY_FUNCTION_NAME: its
// nudges of stuck jobs are job writes, which nudge the relay. PostgreSQL
// has no TTL, so each run also deletes the expired jobs, intents and
// quarantine tombstones DynamoDB's TTL would (sweeper.Config.Purgers), at
// most SWEEP_PURGE_LIMIT rows (default sweeper.DefaultPurgeLimit, 1 to
// sweeper.MaxItemsLimit). The projection's views and totals have no TTL
// on DynamoDB either, so nothing of theirs is purged.
func SweeperPostgres(open OpenDB) startup.Builder[sweeper.Options, sweeper.Report] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, sweeper.Options) (sweeper.Report, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		s := readSweeperSettings(env)
		store, nudger := postgresWriterJobs(env, cfg, open, s.maxGenerations, log)
		held, commands, evts := sweeperQuarantineOn(env, postgresHolds(store.db))
		purgeLimit := env.Int("SWEEP_PURGE_LIMIT", sweeper.DefaultPurgeLimit, 1, sweeper.MaxItemsLimit)
		if err := env.Err(); err != nil {
			return nil, err
		}
		proj, err := projection.NewPostgresStore(projection.PostgresConfig{DB: store.db})
		if err != nil {
			return nil, err // its Config holds no setting of its own
		}
		purgers, err := postgresPurgers(store.db)
		if err != nil {
			return nil, err // their Configs hold no setting of their own
		}
		sw, err := s.sweeper(env, cfg, sweeperStores{jobs: store, projection: proj, holds: held, commands: commands,
			events: evts, purgers: purgers, purgeLimit: purgeLimit}, log)
		if err != nil {
			return nil, err
		}
		return flushing(sw.Run, nudger), nil
	}
}

// postgresPurgers are the stores in db whose expired rows the sweeper
// deletes: the jobs' (final jobs and intents) and the quarantine's
// (tombstones).
func postgresPurgers(db *sql.DB) ([]sweeper.Purger, error) {
	js, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db})
	if err != nil {
		return nil, err
	}
	qs, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	if err != nil {
		return nil, err
	}
	return []sweeper.Purger{js, qs}, nil
}

// postgresHolds opens the quarantine's holds in db; nil without a pool
// (a problem env names already).
func postgresHolds(db *sql.DB) holdsOpener {
	if db == nil {
		return nil
	}
	return func(env *startup.Env) quarantine.Store {
		store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
		if err != nil {
			env.Problem("POSTGRES_HOST", err) // only a nil pool, which env has named already
			return nil
		}
		return store
	}
}

// postgresProjection is the projector's store and the job store it
// recovers from, both in db.
func postgresProjection(db *sql.DB) (*projection.PostgresStore, *jobs.PostgresStore, error) {
	store, err := projection.NewPostgresStore(projection.PostgresConfig{DB: db})
	if err != nil {
		return nil, nil, err
	}
	source, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db})
	if err != nil {
		return nil, nil, err
	}
	return store, source, nil
}

// WorkerKafkaPostgres is WorkerKafka with the jobs and the commands
// topic's quarantine on PostgreSQL (template-kafka-postgres.yaml):
// settings as WorkerKafka's but JOBS_TABLE and QUARANTINE_TABLE, plus the
// database's (OpenDB), STORE "postgres" and RELAY_FUNCTION_NAME
// (relayNudger).
func WorkerKafkaPostgres(open OpenDB) startup.Builder[events.KafkaEvent, kafka.EventResponse] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportKafka)
		s := readWorkerSettings(env)
		store, nudger := postgresWriterJobs(env, cfg, open, s.maxGenerations, log)
		consumer := kafkaQuarantinedOn(env, cfg, postgresHolds(store.db), log, "COMMANDS_TOPIC", s.maxGenerations+2)
		w, err := s.workerOn(env, cfg, DynamoDB(cfg), func() (jobs.Store, error) { return store, nil }, log)
		if err != nil {
			return nil, err
		}
		h, err := processKafka(env, workerProcessor(consumer), w.HandleRecord, log)
		if err != nil {
			return nil, err
		}
		return flushing(h, nudger), nil
	}
}

// ProjectorKafkaPostgres is ProjectorKafka with the views, the totals,
// the jobs it recovers from and the events topic's quarantine on
// PostgreSQL: settings as ProjectorKafka's but the tables, plus the
// database's (OpenDB) and STORE "postgres".
func ProjectorKafkaPostgres(open OpenDB) startup.Builder[events.KafkaEvent, kafka.EventResponse] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportKafka)
		db := open(env, cfg)
		consumer := kafkaQuarantinedOn(env, cfg, postgresHolds(db), log, "EVENTS_TOPIC", kafka.MinQuarantineThreshold)
		if err := env.Err(); err != nil {
			return nil, err
		}
		store, source, err := postgresProjection(db)
		if err != nil {
			return nil, err
		}
		projector, err := newProjector(env, store, source, log, 0)
		if err != nil {
			return nil, err
		}
		return processKafka(env, consumer, projector.HandleRecord, log)
	}
}
