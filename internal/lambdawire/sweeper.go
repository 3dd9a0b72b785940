package lambdawire

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/projection"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/sweeper"
)

// Bounds of the sweeper's settings. The lower ones are short enough for a
// demonstration (a grace of a second); none is needed for safety, which
// the deletion rules give (pkg/sweeper).
const (
	minSweepDuration = time.Second
	maxSweepGrace    = 365 * 24 * time.Hour
	maxStuckAfter    = 7 * 24 * time.Hour
	// The repair's delay is the one bound that matters beyond a demo: the
	// repair cursor passes every final job that ended before now minus the
	// delay, so the delay must be far beyond the finished index's
	// propagation (well under a second) and the functions' clock skew.
	minRepairAfter = time.Minute
	maxRepairAfter = 7 * 24 * time.Hour
)

// Sweeper deletes orphan candidates, nudges stuck jobs and repairs the
// projections of final jobs whose last event was lost (pkg/sweeper), once
// per scheduled invocation; its input is sweeper.Options (the schedule's
// constant {"dry_run": false}) and its result the sweeper.Report.
// Settings: JOBS_TABLE, CANDIDATES_BUCKET (the cursors are kept there, at
// sweeper.CursorKey and sweeper.RepairCursorKey), VIEWS_TABLE and
// TOTALS_TABLE (the projector's), MAX_GENERATIONS (default 3, 1 to 4, as
// the worker's), SWEEP_GRACE (default 1h), SWEEP_STUCK_AFTER (default
// 15m), SWEEP_REPAIR_AFTER (default 15m, 1m to 7d), SWEEP_MAX_ITEMS
// (default 1000, 1 to sweeper.MaxItemsLimit). With QUARANTINE_TABLE,
// COMMANDS_QUEUE_ARN and EVENTS_QUEUE_ARN, each run also reports how many
// groups of each queue are held (quarantine.MetricHeldGroups, 0 included),
// the gauge the held-groups alarms watch.
func Sweeper(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, sweeper.Options) (sweeper.Report, error), error) {
	table := env.String("JOBS_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	views := env.String("VIEWS_TABLE")
	totals := env.String("TOTALS_TABLE")
	maxGenerations := env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4)
	grace := env.Duration("SWEEP_GRACE", sweeper.DefaultGrace, minSweepDuration, maxSweepGrace)
	stuckAfter := env.Duration("SWEEP_STUCK_AFTER", sweeper.DefaultStuckAfter, minSweepDuration, maxStuckAfter)
	repairAfter := env.Duration("SWEEP_REPAIR_AFTER", sweeper.DefaultRepairAfter, minRepairAfter, maxRepairAfter)
	maxItems := env.Int("SWEEP_MAX_ITEMS", sweeper.DefaultMaxItems, 1, sweeper.MaxItemsLimit)
	held := heldGroups(env, cfg, log)
	if err := env.Err(); err != nil {
		return nil, err
	}
	s3c := S3(cfg)
	db := DynamoDB(cfg)
	s, err := sweeper.New(sweeper.Config{
		Jobs: jobs.NewDynamoStore(db, table,
			jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: int64(maxGenerations)})),
		Candidates:   candidate.New(s3c, bucket),
		Cursor:       sweeper.NewS3Cursor(s3c, bucket),
		Projection:   projection.NewDynamoStore(db, projection.Tables{Views: views, Totals: totals}),
		RepairCursor: sweeper.NewS3CursorAt(s3c, bucket, sweeper.RepairCursorKey),
		Grace:        grace,
		StuckAfter:   stuckAfter,
		RepairAfter:  repairAfter,
		MaxItems:     maxItems,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, o sweeper.Options) (sweeper.Report, error) {
		rep, err := s.Run(ctx, o)
		held(ctx)
		return rep, err
	}, nil
}

// heldGroups returns what reports, after each sweep, the number of held
// groups of the commands and events queues: nothing without
// QUARANTINE_TABLE. A failure to count is logged, not the sweep's.
func heldGroups(env *Env, cfg aws.Config, log *slog.Logger) func(context.Context) {
	table := env.StringOr("QUARANTINE_TABLE", "")
	if table == "" {
		return func(context.Context) {}
	}
	var queues []string
	for _, v := range []string{"COMMANDS_QUEUE_ARN", "EVENTS_QUEUE_ARN"} {
		arn := env.String(v)
		if name, err := quarantine.QueueName(arn); arn != "" && err == nil {
			queues = append(queues, name)
		}
	}
	store := quarantine.NewDynamoStore(DynamoDB(cfg), table)
	return func(ctx context.Context) {
		for _, q := range queues {
			holds, err := store.Holds(ctx, q)
			if err != nil {
				log.Error("sweeper: count the held groups", "queue", q, "error", err)
				continue
			}
			quarantine.LogHeldGroups(ctx, log, q, len(holds))
		}
	}
}
