package lambdawire

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/sweeper"
)

// Bounds of the sweeper's settings. The lower ones are short enough for a
// demonstration (a grace of a second); none is needed for safety, which
// the deletion rules give (pkg/sweeper).
const (
	minSweepDuration = time.Second
	maxSweepGrace    = 365 * 24 * time.Hour
	maxStuckAfter    = 7 * 24 * time.Hour
)

// Sweeper deletes orphan candidates and nudges stuck jobs (pkg/sweeper),
// once per scheduled invocation; its input is sweeper.Options (the
// schedule's constant {"dry_run": false}) and its result the
// sweeper.Report. Settings: JOBS_TABLE, CANDIDATES_BUCKET (the cursor is
// kept there, at sweeper.CursorKey), MAX_GENERATIONS (default 3, 1 to 4,
// as the worker's), SWEEP_GRACE (default 1h), SWEEP_STUCK_AFTER (default
// 15m), SWEEP_MAX_ITEMS (default 1000, 1 to sweeper.MaxItemsLimit).
func Sweeper(env *Env, cfg aws.Config, log *slog.Logger) (func(context.Context, sweeper.Options) (sweeper.Report, error), error) {
	table := env.String("JOBS_TABLE")
	bucket := env.String("CANDIDATES_BUCKET")
	maxGenerations := env.Int("MAX_GENERATIONS", jobs.DefaultMaxGenerations, 1, 4)
	grace := env.Duration("SWEEP_GRACE", sweeper.DefaultGrace, minSweepDuration, maxSweepGrace)
	stuckAfter := env.Duration("SWEEP_STUCK_AFTER", sweeper.DefaultStuckAfter, minSweepDuration, maxStuckAfter)
	maxItems := env.Int("SWEEP_MAX_ITEMS", sweeper.DefaultMaxItems, 1, sweeper.MaxItemsLimit)
	if err := env.Err(); err != nil {
		return nil, err
	}
	s3c := S3(cfg)
	s, err := sweeper.New(sweeper.Config{
		Jobs: jobs.NewDynamoStore(dynamodb.NewFromConfig(cfg), table,
			jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: int64(maxGenerations)})),
		Candidates: candidate.New(s3c, bucket),
		Cursor:     sweeper.NewS3Cursor(s3c, bucket),
		Grace:      grace,
		StuckAfter: stuckAfter,
		MaxItems:   maxItems,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	return s.Run, nil
}
