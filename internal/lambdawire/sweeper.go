package lambdawire

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Bounds of the sweeper's settings. The lower ones are short enough for a
// demonstration (a grace of a second); none is needed for safety, which
// the deletion rules give (internal/app/sweeper).
const (
	minSweepDuration = time.Second
	maxSweepGrace    = 365 * 24 * time.Hour
	maxStuckAfter    = 7 * 24 * time.Hour
	// The repair's delays are the bounds that matter beyond a demo: each
	// of its cursors passes every final job that ended before now minus its
	// delay, so a job the finished index shows later than that (its
	// propagation is well under a second; add the functions' clock skew)
	// is passed. The recheck's delay is the bound that counts: a job the
	// first check passed unseen is found by the recheck.
	minRepairAfter  = time.Minute
	maxRepairAfter  = 7 * 24 * time.Hour
	minRecheckAfter = 10 * time.Minute
	maxRecheckAfter = 30 * 24 * time.Hour
	maxRepairBudget = 15 * time.Minute
)

// DefaultRepairBudget is SWEEP_REPAIR_BUDGET's default: the repair's time
// per run beyond its first listings. It shares the function's timeout
// (template.yaml: 120s) with the nudges and the candidates.
const DefaultRepairBudget = 45 * time.Second

// Sweeper deletes orphan candidates, nudges stuck jobs and repairs the
// projections of final jobs whose last event was lost (internal/app/sweeper), once
// per scheduled invocation; its input is sweeper.Options (the schedule's
// constant {"dry_run": false}) and its result the sweeper.Report.
// Settings: JOBS_TABLE, CANDIDATES_BUCKET (the cursors are kept there, at
// sweeper.CursorKey and sweeper.RepairCursorKey, and each run's report, at
// sweeper.LastRunKey, for the operator's console), VIEWS_TABLE and
// TOTALS_TABLE (the projector's), MAX_GENERATIONS (default 3, 1 to 4, as
// the worker's), SWEEP_GRACE (default 1h), SWEEP_STUCK_AFTER (default
// 15m), SWEEP_REPAIR_AFTER (default 15m, 1m to 7d), SWEEP_RECHECK_AFTER
// (default sweeper.DefaultRecheckAfter, 24h, or twice SWEEP_REPAIR_AFTER if
// longer; 10m to 30d, beyond SWEEP_REPAIR_AFTER; its cursor is at
// sweeper.RecheckCursorKey), SWEEP_REPAIR_BUDGET (default 45s, 0 to 15m:
// how long a run may go on checking final jobs past its first MaxItems),
// SWEEP_MAX_ITEMS (default 1000, 1 to sweeper.MaxItemsLimit). Each run
// logs the repair cursors' lags (sweeper.MetricRepairLag, the gauge the
// repair-lag alarm watches) with the dimension FunctionName, Lambda's
// AWS_LAMBDA_FUNCTION_NAME (no metrics without it), and how many of its
// gauges it could not measure (sweeper.MetricUnmeasured, 0 included). With
// QUARANTINE_TABLE and the commands' and events' sources (both then
// required: see sweeperQuarantine), a stuck job whose commands are held
// is not nudged, and each run reports how many groups (keys, on Kafka)
// of each source are held (quarantine.MetricHeldGroups, 0 included), the
// gauge the held-groups alarms watch. The sweeper is the same bootstrap
// on both transports: its repairs and nudges go through the Jobs table
// (a nudge's command reaches the worker through the relay, on either
// transport), and only the holds' names differ.
func Sweeper(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, sweeper.Options) (sweeper.Report, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	table := env.String("JOBS_TABLE")
	tables := projectorTables{views: env.String("VIEWS_TABLE"), totals: env.String("TOTALS_TABLE"), shards: readTotalsShards(env),
		countEvery: readCountEveryEvent(env)}
	shards := readLiveShards(env)
	s := readSweeperSettings(env)
	db := DynamoDB(cfg)
	holds, commands, evts := sweeperQuarantine(env, db)
	if err := env.Err(); err != nil {
		return nil, err
	}
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: db, Table: table, LiveShards: shards,
		Config: jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: int64(s.maxGenerations)}}})
	if err != nil {
		return nil, env.Refused(err, jobsSettings)
	}
	proj, err := tables.store(env, db, true)
	if err != nil {
		return nil, err
	}
	sw, err := s.sweeper(env, cfg, sweeperStores{jobs: store, projection: proj, holds: holds, commands: commands, events: evts}, log)
	if err != nil {
		return nil, err
	}
	return checkingLiveShards(store, sw.Run), nil
}

// sweeperReadSettings are the sweeper's settings beside its stores', on
// either store.
type sweeperReadSettings struct {
	bucket, function                             string
	maxGenerations, maxItems                     int
	grace, stuckAfter, repairAfter, recheckAfter time.Duration
	repairBudget                                 time.Duration
}

// readSweeperSettings reads CANDIDATES_BUCKET, MAX_GENERATIONS, the SWEEP_
// settings and AWS_LAMBDA_FUNCTION_NAME (see Sweeper).
func readSweeperSettings(env *startup.Env) sweeperReadSettings {
	s := sweeperReadSettings{
		bucket:         env.String("CANDIDATES_BUCKET"),
		maxGenerations: env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4),
		grace:          env.Duration("SWEEP_GRACE", sweeper.DefaultGrace, minSweepDuration, maxSweepGrace),
		stuckAfter:     env.Duration("SWEEP_STUCK_AFTER", sweeper.DefaultStuckAfter, minSweepDuration, maxStuckAfter),
		repairAfter:    env.Duration("SWEEP_REPAIR_AFTER", sweeper.DefaultRepairAfter, minRepairAfter, maxRepairAfter),
		recheckAfter:   env.Duration("SWEEP_RECHECK_AFTER", 0, minRecheckAfter, maxRecheckAfter),
	}
	if s.recheckAfter != 0 && s.recheckAfter <= s.repairAfter {
		env.Problem("SWEEP_RECHECK_AFTER", fmt.Errorf("%v is not beyond SWEEP_REPAIR_AFTER %v", s.recheckAfter, s.repairAfter))
	}
	s.repairBudget = env.Duration("SWEEP_REPAIR_BUDGET", DefaultRepairBudget, 0, maxRepairBudget)
	s.maxItems = env.Int("SWEEP_MAX_ITEMS", sweeper.DefaultMaxItems, 1, sweeper.MaxItemsLimit)
	s.function = env.StringOr("AWS_LAMBDA_FUNCTION_NAME", "")
	return s
}

// sweeperStores are the sweeper's stores, on either store, and the names
// the commands and the events are held under (sweeperQuarantineOn).
type sweeperStores struct {
	jobs             sweeper.Jobs
	projection       sweeper.Projection
	holds            sweeper.Quarantine
	commands, events string
	// purgers are the stores without a TTL, purgeLimit the rows a run
	// purges (SweeperPostgres).
	purgers    []sweeper.Purger
	purgeLimit int
}

// sweeper returns the sweeper of s on st, its candidates and cursors in
// s.bucket, or every problem env has found.
func (s sweeperReadSettings) sweeper(env *startup.Env, cfg aws.Config, st sweeperStores, log *slog.Logger) (*sweeper.Sweeper, error) {
	settings := sweeperSettings(startup.Transport(env))
	s3c := S3(cfg)
	candidates, err := candidate.New(candidate.Config{Client: s3c, Bucket: s.bucket})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Bucket": "CANDIDATES_BUCKET"})
	}
	cursors, err := sweeperCursors(s3c, s.bucket)
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Bucket": "CANDIDATES_BUCKET"})
	}
	lastRun, err := sweeper.NewS3LastRun(sweeper.S3LastRunConfig{Client: s3c, Bucket: s.bucket})
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"Bucket": "CANDIDATES_BUCKET"})
	}
	sw, err := sweeper.New(sweeper.Config{
		Jobs:          st.jobs,
		Candidates:    candidates,
		Cursor:        cursors[0],
		Projection:    st.projection,
		RepairCursor:  cursors[1],
		RecheckCursor: cursors[2],
		Grace:         s.grace,
		StuckAfter:    s.stuckAfter,
		RepairAfter:   s.repairAfter,
		RecheckAfter:  s.recheckAfter,
		RepairBudget:  s.repairBudget,
		MaxItems:      s.maxItems,
		Purgers:       st.purgers,
		PurgeLimit:    st.purgeLimit,
		Quarantine:    st.holds,
		CommandsQueue: st.commands,
		EventsQueue:   st.events,
		FunctionName:  s.function,
		LastRun:       lastRun,
		Logger:        log,
	})
	if err != nil {
		return nil, env.Refused(err, settings)
	}
	return sw, nil
}

// sweeperSettings are the variables behind sweeper.Config's settings,
// the holds' sources' those of transport's template.
func sweeperSettings(transport string) startup.Fields {
	fields := startup.Fields{
		"Grace": "SWEEP_GRACE", "StuckAfter": "SWEEP_STUCK_AFTER", "RepairAfter": "SWEEP_REPAIR_AFTER",
		"RecheckAfter": "SWEEP_RECHECK_AFTER", "RepairBudget": "SWEEP_REPAIR_BUDGET", "MaxItems": "SWEEP_MAX_ITEMS",
		"Quarantine": "QUARANTINE_TABLE", "FunctionName": "AWS_LAMBDA_FUNCTION_NAME",
	}
	sources := sweeperSources[transport]
	fields["CommandsQueue"], fields["EventsQueue"] = sources[0], sources[1]
	return fields
}

// sweeperSources are the variables naming the commands' and the events'
// sources, by transport: SQS's queues' ARNs, Kafka's topics.
var sweeperSources = map[string][2]string{
	startup.TransportSQS:   {"COMMANDS_QUEUE_ARN", "EVENTS_QUEUE_ARN"},
	startup.TransportKafka: {"COMMANDS_TOPIC", "EVENTS_TOPIC"},
}

// sweeperQuarantine returns the quarantine's store and the names the
// commands and the events are held under, which the sweeper reads the
// holds by: with TRANSPORT unset or "sqs" (template.yaml), the queues'
// names, from COMMANDS_QUEUE_ARN and EVENTS_QUEUE_ARN (a queue's
// quarantine holds its groups under its name, pkg/quarantine's
// QueueName); with "kafka" (template-kafka.yaml), the topics themselves,
// COMMANDS_TOPIC and EVENTS_TOPIC (a topic's quarantine holds its keys,
// here the job ids, under the topic: pkg/quarantine's KafkaQuarantine).
// No store without QUARANTINE_TABLE; then no source is required.
func sweeperQuarantine(env *startup.Env, db *dynamodb.Client) (sweeper.Quarantine, string, string) {
	if table := env.StringOr("QUARANTINE_TABLE", ""); table != "" {
		return sweeperQuarantineOn(env, dynamoHolds(db, table))
	}
	startup.Transport(env) // named if wrong
	return nil, "", ""
}

// sweeperQuarantineOn returns the holds store holds opens (none when nil)
// and the names the commands and the events are held under, as
// sweeperQuarantine says.
func sweeperQuarantineOn(env *startup.Env, holds holdsOpener) (sweeper.Quarantine, string, string) {
	transport := startup.Transport(env)
	if holds == nil || transport == "" {
		return nil, "", ""
	}
	if transport == startup.TransportSQS && env.StringOr("TRANSPORT", "") == "" && env.StringOr("COMMANDS_QUEUE_ARN", "") == "" &&
		env.StringOr("COMMANDS_TOPIC", "") != "" {
		env.String("TRANSPORT") // named beside the queues: template-kafka.yaml's sweeper without its TRANSPORT
	}
	var names [2]string
	for i, v := range sweeperSources[transport] {
		name := env.String(v)
		if name == "" || transport == startup.TransportKafka {
			names[i] = name
			continue
		}
		name, err := quarantine.QueueName(name)
		if err != nil {
			env.Problem(v, err)
			continue
		}
		names[i] = name
	}
	store := holds(env)
	if store == nil {
		return nil, "", ""
	}
	return store, names[0], names[1]
}

// sweeperCursors are the sweep's, the repair's and the recheck's cursors,
// in that order, in bucket.
func sweeperCursors(client sweeper.CursorAPI, bucket string) ([3]*sweeper.S3Cursor, error) {
	var cursors [3]*sweeper.S3Cursor
	for i, key := range []string{sweeper.CursorKey, sweeper.RepairCursorKey, sweeper.RecheckCursorKey} {
		c, err := sweeper.NewS3Cursor(sweeper.S3CursorConfig{Client: client, Bucket: bucket, Key: key})
		if err != nil {
			return cursors, err
		}
		cursors[i] = c
	}
	return cursors, nil
}
