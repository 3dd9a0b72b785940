package lambdawire

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Intake is the jobs API (internal/app/intake), checking each spec with the
// check of the task it names, from the tasks the worker runs
// (internal/app/tasks.NewChecker: the checks alone, so intake needs none of
// the tasks' resources). Settings: JOBS_TABLE, CANDIDATES_BUCKET,
// TENANT_CLAIM (default "tenant"), RESULT_URL_TTL (default 5m, 1s to 1h).
func Intake(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	table := env.String("JOBS_TABLE")
	shards := readLiveShards(env)
	s := readIntakeSettings(env)
	h, err := s.intake(env, cfg, func() (jobs.Store, error) {
		return jobs.NewDynamoStore(jobs.DynamoConfig{Client: DynamoDB(cfg), Table: table, LiveShards: shards})
	}, log)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}

// intakeSettings are intake's settings beside its store's, on either store.
type intakeSettings struct {
	bucket, claim, function string
	ttl                     time.Duration
}

// readIntakeSettings reads CANDIDATES_BUCKET, TENANT_CLAIM (default
// "tenant"), RESULT_URL_TTL (default 5m, 1s to 1h) and
// AWS_LAMBDA_FUNCTION_NAME (the job metrics' dimension; none without it).
func readIntakeSettings(env *startup.Env) intakeSettings {
	return intakeSettings{
		bucket:   env.String("CANDIDATES_BUCKET"),
		function: env.StringOr("AWS_LAMBDA_FUNCTION_NAME", ""),
		claim:    env.StringOr("TENANT_CLAIM", intake.DefaultTenantClaim),
		ttl:      env.Duration("RESULT_URL_TTL", intake.DefaultResultURLTTL, intake.MinResultURLTTL, intake.MaxResultURLTTL),
	}
}

// intake returns the jobs API of s on the job store openJobs opens, or
// every problem env has found, those its caller read first included.
func (s intakeSettings) intake(env *startup.Env, cfg aws.Config, openJobs func() (jobs.Store, error), log *slog.Logger) (*intake.Handler, error) {
	if err := env.Err(); err != nil {
		return nil, err
	}
	checks, err := tasks.NewChecker()
	if err != nil {
		return nil, err
	}
	presigner, err := ResultPresigner(cfg, s.bucket)
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Bucket": "CANDIDATES_BUCKET"})
	}
	store, err := openJobs()
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Table": "JOBS_TABLE"})
	}
	h, err := intake.New(intake.Config{
		Store:        store,
		Presigner:    presigner,
		TenantClaim:  s.claim,
		ResultURLTTL: s.ttl,
		// The named task's own check: a spec no task can run is refused
		// here, not failed later as unknown_task or task_failed.
		ValidateSpec: checks.ValidateSpec,
		Logger:       log,
		FunctionName: s.function,
	})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"TenantClaim": "TENANT_CLAIM", "ResultURLTTL": "RESULT_URL_TTL"})
	}
	return h, nil
}

// Relay publishes the Jobs table's stream (internal/app/outbox) to SQS
// (internal/app/outbox/sqsout). Settings:
// COMMANDS_QUEUE_URL, EVENTS_QUEUE_URL, each a FIFO queue's (the relay's
// own check: per-job order needs one), and TRANSPORT unset or "sqs" (see
// startup.CheckTransport).
func Relay(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportSQS)
	commands := env.String("COMMANDS_QUEUE_URL")
	evts := env.String("EVENTS_QUEUE_URL")
	if err := env.Err(); err != nil {
		return nil, err
	}
	relay, err := sqsout.NewRelay(sqsout.Config{Client: sqs.NewFromConfig(cfg), CommandsURL: commands, EventsURL: evts, Logger: log})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"CommandsURL": "COMMANDS_QUEUE_URL", "EventsURL": "EVENTS_QUEUE_URL"})
	}
	return relay.Handle, nil
}

// Projector consumes the events queue into job views and tenant totals
// (internal/app/projection), one lane per job (pkg/fifo), under the events queue's
// quarantine. Settings: VIEWS_TABLE, TOTALS_TABLE, JOBS_TABLE (recovery
// reads it), RECOVER_AFTER_RECEIVES (default 3), the quarantine's (see
// quarantined), and TRANSPORT unset or "sqs" (see startup.CheckTransport).
func Projector(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportSQS)
	tables := readProjectorTables(env)
	recoverAfter := env.Int("RECOVER_AFTER_RECEIVES", projection.DefaultRecoverAfter, 1, projection.MaxRecoverAfter)
	db := DynamoDB(cfg)
	consumer := quarantined(env, cfg, db, log, "EVENTS_QUEUE_ARN", recoverAfter+1)
	projector, err := tables.projector(env, db, log, recoverAfter)
	if err != nil {
		return nil, err
	}
	// A malformed event, or one recovery cannot settle, holds its job's
	// group: the job's later events wait, parked in order, for an operator.
	return consume(env, consumer, projector.Handle, log)
}

// projectorTables are the projector's tables, on either transport.
type projectorTables struct {
	views, totals, jobs string
	shards              int
	countEvery          bool
}

// readProjectorTables reads VIEWS_TABLE, TOTALS_TABLE, TOTALS_SHARDS,
// TOTALS_COUNT_EVERY_EVENT and JOBS_TABLE.
func readProjectorTables(env *startup.Env) projectorTables {
	return projectorTables{views: env.String("VIEWS_TABLE"), totals: env.String("TOTALS_TABLE"), jobs: env.String("JOBS_TABLE"),
		shards: readTotalsShards(env), countEvery: readCountEveryEvent(env)}
}

// store is the projection's DynamoStore on t, checked against the shard
// count its Totals table records before its first write (checkedShards;
// verifyOnly: without recording it).
func (t projectorTables) store(env *startup.Env, db *dynamodb.Client, verifyOnly bool) (*checkedShards, error) {
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: db, Tables: projection.Tables{Views: t.views, Totals: t.totals},
		Shards: t.shards, CountEveryEvent: t.countEvery})
	if err != nil {
		return nil, env.Refused(err, projectionTables)
	}
	return &checkedShards{shardsChecker: store, verifyOnly: verifyOnly}, nil
}

// projector returns the projector on t, recovering at recoverAfter
// receives (0: the default), or every problem env has found, those its
// caller read first included.
func (t projectorTables) projector(env *startup.Env, db *dynamodb.Client, log *slog.Logger, recoverAfter int) (*projection.Projector, error) {
	if err := env.Err(); err != nil {
		return nil, err
	}
	store, err := t.store(env, db, false)
	if err != nil {
		return nil, err
	}
	source, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: db, Table: t.jobs})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Table": "JOBS_TABLE"})
	}
	return newProjector(env, store, source, log, recoverAfter)
}

// newProjector returns the projector on store, recovering from source at
// recoverAfter receives (0: the default), its job metrics under
// AWS_LAMBDA_FUNCTION_NAME (none without it).
func newProjector(env *startup.Env, store projection.Store, source projection.JobSource, log *slog.Logger, recoverAfter int) (*projection.Projector, error) {
	projector, err := projection.NewProjector(projection.ProjectorConfig{Store: store, Source: source, Logger: log, RecoverAfter: recoverAfter,
		FunctionName: env.StringOr("AWS_LAMBDA_FUNCTION_NAME", "")})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"RecoverAfter": "RECOVER_AFTER_RECEIVES"})
	}
	return projector, nil
}

// Worker consumes the commands queue: each job.run command is claimed, run
// by the task its job's spec names (internal/app/tasks' registry: the
// articles export by default) and accepted (internal/app/worker), one lane per job
// (pkg/fifo), under the commands queue's quarantine. Settings: JOBS_TABLE,
// ARTICLES_TABLE, CANDIDATES_BUCKET, MAX_GENERATIONS (default 3, at most
// the commands queue's maxReceiveCount - 1), the spool's
// (EPHEMERAL_STORAGE_MB, MAX_CANDIDATE_BYTES: see workerCandidates), the
// quarantine's (see quarantined), and TRANSPORT unset or "sqs" (see
// startup.CheckTransport).
func Worker(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportSQS)
	s := readWorkerSettings(env)
	// A command's receives up to MaxGenerations + 1 are takeovers the
	// recovery policy decides on; the quarantine must not take them.
	ddb := DynamoDB(cfg)
	consumer := quarantined(env, cfg, ddb, log, "COMMANDS_QUEUE_ARN", s.maxGenerations+2)
	w, err := s.worker(env, cfg, ddb, log)
	if err != nil {
		return nil, err
	}
	return consume(env, consumer, w.Handle, log)
}

// workerSettings are the worker's own settings, on either transport and
// either store.
type workerSettings struct {
	articlesTable, bucket string
	maxGenerations        int
}

// readWorkerSettings reads ARTICLES_TABLE, CANDIDATES_BUCKET and
// MAX_GENERATIONS (default 3, 1 to 4).
func readWorkerSettings(env *startup.Env) workerSettings {
	return workerSettings{
		articlesTable:  env.String("ARTICLES_TABLE"),
		bucket:         env.String("CANDIDATES_BUCKET"),
		maxGenerations: env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4),
	}
}

// worker reads JOBS_TABLE and the spool's settings (see
// workerCandidates) and returns the worker of s on that table, or every
// problem env has found, those its caller read first included.
func (s workerSettings) worker(env *startup.Env, cfg aws.Config, ddb *dynamodb.Client, log *slog.Logger) (*worker.Worker, error) {
	table := env.String("JOBS_TABLE")
	shards := readLiveShards(env)
	return s.workerOn(env, cfg, ddb, func() (jobs.Store, error) {
		return jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: table, LiveShards: shards,
			Config: jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: int64(s.maxGenerations)}}})
	}, log)
}

// workerOn is worker with the job store openJobs opens (with
// s.maxGenerations), the articles read from ARTICLES_TABLE through ddb.
func (s workerSettings) workerOn(env *startup.Env, cfg aws.Config, ddb *dynamodb.Client, openJobs func() (jobs.Store, error), log *slog.Logger) (*worker.Worker, error) {
	candidates := workerCandidates(env, S3(cfg), s.bucket, log)
	if err := env.Err(); err != nil {
		return nil, err
	}
	store, err := openJobs()
	if err != nil {
		return nil, env.Refused(err, jobsSettings)
	}
	registry, err := tasks.NewRegistry(tasks.Config{Articles: ddb, ArticlesTable: s.articlesTable})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"ArticlesTable": "ARTICLES_TABLE"})
	}
	w, err := worker.New(worker.Config{
		Jobs:       store,
		Candidates: candidates,
		Tasks:      registry,
		Logger:     log,
		// The job metrics' dimension (the latency of each job it
		// completes); none without it.
		FunctionName: env.StringOr("AWS_LAMBDA_FUNCTION_NAME", ""),
	})
	if err != nil {
		return nil, err // its Config holds no setting of its own
	}
	return w, nil
}

// The variables behind the settings of more than one function's stores.
var (
	jobsSettings     = startup.Fields{"Table": "JOBS_TABLE", "MaxGenerations": "MAX_GENERATIONS", "LiveShards": "LIVE_SHARDS"}
	projectionTables = startup.Fields{"Views": "VIEWS_TABLE", "Totals": "TOTALS_TABLE", "Shards": "TOTALS_SHARDS"}
)

// consume returns the Process of a processor of cfg (a consumer's
// quarantine, from quarantined) calling h and logging to log.
func consume(env *startup.Env, cfg fifo.Config, h fifo.Handler, log *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	cfg.Handler, cfg.Logger = h, log
	p, err := fifo.New(cfg)
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"QuarantineThreshold": "QUARANTINE_AFTER_RECEIVES"})
	}
	return p.Process, nil
}

// quarantined returns the processor's Config that puts a consumer under its
// queue's quarantine (pkg/quarantine), its holds in DynamoDB's
// QUARANTINE_TABLE: see quarantinedOn.
func quarantined(env *startup.Env, cfg aws.Config, db *dynamodb.Client, log *slog.Logger, arnVar string, least int) fifo.Config {
	table := env.String("QUARANTINE_TABLE")
	if table == "" {
		quarantinedOn(env, cfg, nil, log, arnVar, least) // its settings named too
		return fifo.Config{}
	}
	return quarantinedOn(env, cfg, dynamoHolds(db, table), log, arnVar, least)
}

// quarantinedOn returns the processor's Config that puts a consumer under
// its queue's quarantine (pkg/quarantine), for consume to complete: its
// holds from holds (nil: none, a problem env names already), the queue's
// ARN in arnVar, QUARANTINE_BUCKET (large bodies, under quarantine/) and
// QUARANTINE_AFTER_RECEIVES, the receive count at which a message is parked
// before it runs: at least least, and below the queue's maxReceiveCount
// (the template test checks both). Parked and dropped messages are counted
// in EMF records of the function's log.
func quarantinedOn(env *startup.Env, cfg aws.Config, holds holdsOpener, log *slog.Logger, arnVar string, least int) fifo.Config {
	queueARN := env.String(arnVar)
	bucket := env.String("QUARANTINE_BUCKET")
	after := env.Int("QUARANTINE_AFTER_RECEIVES", least, least, 1000)
	queue, err := quarantine.QueueName(queueARN)
	if queueARN != "" && (err != nil || !strings.HasPrefix(queueARN, "arn:")) {
		env.Problem(arnVar, fmt.Errorf("%q is not a queue ARN", queueARN))
		return fifo.Config{}
	}
	if holds == nil || queueARN == "" || bucket == "" {
		return fifo.Config{} // env.Err reports it
	}
	q := newQuarantine(env, holds, S3(cfg), arnVar, queueARN, bucket)
	if q == nil {
		return fifo.Config{}
	}
	return fifo.Config{Quarantine: q, QuarantineThreshold: after, Metrics: quarantine.LoggedBatchMetrics(log, queue)}
}

// holdsOpener opens the quarantine's holds store, or returns nil when it
// refuses its settings (env names them): DynamoDB's (dynamoHolds) or
// PostgreSQL's (postgresHolds). A builder passes the one of its store, so
// the bootstrap links no other.
type holdsOpener func(env *startup.Env) quarantine.Store

// dynamoHolds opens the holds in DynamoDB's table, read from
// QUARANTINE_TABLE.
func dynamoHolds(db *dynamodb.Client, table string) holdsOpener {
	return func(env *startup.Env) quarantine.Store {
		store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: db, Table: table})
		if err != nil {
			env.Refuse(err, startup.Fields{"Table": "QUARANTINE_TABLE"})
			return nil
		}
		return store
	}
}

// newQuarantine is the quarantine of the queue queueARN (read from
// arnVar), its holds from holds and its large bodies in bucket; nil when
// env has a problem it reports, each under its own variable.
func newQuarantine(env *startup.Env, holds holdsOpener, s3c *s3.Client, arnVar, queueARN, bucket string) *quarantine.Quarantine {
	store := holds(env)
	if store == nil {
		return nil
	}
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: s3c, Bucket: bucket})
	if err != nil {
		env.Refuse(err, startup.Fields{"Bucket": "QUARANTINE_BUCKET"})
		return nil
	}
	q, err := quarantine.New(quarantine.Config{Store: store, QueueARN: queueARN, Bodies: bodies})
	if err != nil {
		env.Refuse(err, startup.Fields{"QueueARN": arnVar})
		return nil
	}
	return q
}
