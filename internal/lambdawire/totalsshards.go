package lambdawire

import (
	"context"
	"sync"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// readTotalsShards reads TOTALS_SHARDS, the partition-key values each
// tenant's totals are spread over in the Totals table (template.yaml's
// TotalsShards): default projection.DefaultShards (32), 1 to
// projection.MaxShards. The projector and the sweeper read it on DynamoDB.
func readTotalsShards(env *startup.Env) int {
	return env.Int("TOTALS_SHARDS", projection.DefaultShards, 1, projection.MaxShards)
}

// readCountEveryEvent reads TOTALS_COUNT_EVERY_EVENT: 1 has the projection
// write every event to the totals, those that add nothing included, as the
// design before sharding did (projection.DynamoConfig.CountEveryEvent);
// 0, the default, skips them. Not in the templates: it exists to measure
// the two designs side by side with the same binaries (docs/BENCHMARKS.md,
// "Sharded totals").
func readCountEveryEvent(env *startup.Env) bool {
	return env.Int("TOTALS_COUNT_EVERY_EVENT", 0, 0, 1) == 1
}

// shardsChecker is the part of projection.DynamoStore checkedShards
// calls.
type shardsChecker interface {
	projection.Store
	CheckShards(ctx context.Context) error
	VerifyShards(ctx context.Context) error
}

// checkedShards is a store that, before its first write, checks the shard
// count against the one the Totals table records (the projector's
// CheckShards, which records it if none is; with verifyOnly, the sweeper's
// VerifyShards, which only reads it: the projector's first write records
// it before any final job's projection can need a repair, except a job
// whose only final event was lost before the projector ever wrote, which
// the next run repairs): a deploy that changed TOTALS_SHARDS
// would find jobs' cursors in other shards and count again what was
// counted, so each write fails instead, naming both counts, until the
// setting is put back (the function's errors alarm tells; the events
// wait in their queue). Once it has passed, a process does not check
// again: the setting is its environment's, which only a new process can
// change.
type checkedShards struct {
	shardsChecker
	verifyOnly bool
	mu         sync.Mutex
	ok         bool
}

func (c *checkedShards) check(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok {
		return nil
	}
	check := c.CheckShards
	if c.verifyOnly {
		check = c.VerifyShards
	}
	if err := check(ctx); err != nil {
		return err
	}
	c.ok = true
	return nil
}

// Apply implements projection.Store, after the check.
func (c *checkedShards) Apply(ctx context.Context, v projection.View, delta int64) (projection.Result, error) {
	if err := c.check(ctx); err != nil {
		return projection.Result{}, err
	}
	return c.shardsChecker.Apply(ctx, v, delta)
}

// Recover implements projection.Store, after the check.
func (c *checkedShards) Recover(ctx context.Context, snap projection.View) (projection.Recovery, error) {
	if err := c.check(ctx); err != nil {
		return projection.Recovery{}, err
	}
	return c.shardsChecker.Recover(ctx, snap)
}
