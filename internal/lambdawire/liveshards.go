package lambdawire

import (
	"context"
	"fmt"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// readLiveShards reads LIVE_SHARDS, the shards of the Jobs table's live
// and finished indexes (template.yaml's LiveShards): default jobs.LiveShards
// (16), jobs.MinLiveShards to jobs.MaxLiveShards. Every function that
// writes jobs or walks the indexes on DynamoDB reads it.
func readLiveShards(env *startup.Env) int {
	return env.Int("LIVE_SHARDS", jobs.LiveShards, jobs.MinLiveShards, jobs.MaxLiveShards)
}

// liveShardsChecker is the part of jobs.DynamoStore checkingLiveShards
// calls.
type liveShardsChecker interface {
	CheckLiveShards(ctx context.Context) error
}

// checkingLiveShards is run that first checks that LIVE_SHARDS is not below
// the shard count jobs were written with (one GetItem a run): a deploy
// that lowered it would have the sweeper miss the jobs of the shards above
// it, so each run fails instead, naming both counts, until the setting is
// raised back (the sweeper's errors alarm tells). Checked every run rather
// than once at start, so a count a writer raised later is seen too.
func checkingLiveShards(store liveShardsChecker, run func(context.Context, sweeper.Options) (sweeper.Report, error)) func(context.Context, sweeper.Options) (sweeper.Report, error) {
	return func(ctx context.Context, opts sweeper.Options) (sweeper.Report, error) {
		if err := store.CheckLiveShards(ctx); err != nil {
			return sweeper.Report{}, fmt.Errorf("sweeper: LIVE_SHARDS: %w", err)
		}
		return run(ctx, opts)
	}
}
