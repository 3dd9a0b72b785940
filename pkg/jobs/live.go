package jobs

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
)

// The live index: template.yaml's JobsTable has a sparse global secondary
// index "live" (hash key live_shard, S; range key updated_at, N; keys
// only). Every item of a job that is not final carries live_shard, written
// at creation and by every transition that leaves the job live; the
// transition that makes a job final removes it. So the index holds exactly
// the live jobs, by shard and time of their last transition, and the
// sweeper finds the ones stuck for longest without scanning the table.
// (A live transition keeps the live_shard the job was created with, and
// sets it when the item has none, so an item written before the index
// existed joins it at its next transition; one that never transitions
// again needs live_shard set once by hand.)
const (
	// LiveIndex is the name of the index.
	LiveIndex = "live"
	// LiveShards is how many values live_shard takes by default, "0" to
	// "15", and the fewest a DynamoStore may walk (MinLiveShards). Every
	// transition of a live job writes the index (updated_at is its range
	// key), so with one hash key value every job's writes would meet on one
	// index partition, which takes about 1,000 writes a second; sixteen
	// spread them, and a listing queries each shard.
	LiveShards = 16
	// MinLiveShards is the least DynamoConfig.LiveShards: sixteen is the
	// count every table was written with before the count was a setting,
	// and no record says so, so fewer would hide the live jobs such a table
	// holds in the shards above the count.
	MinLiveShards = LiveShards
	// MaxLiveShards is the most: each shard is one Query per listing page
	// (the sweeper's run walks them all), and 256 shards take 256,000 index
	// writes a second, 64,000 jobs a second at 4 index writes per job: ten
	// times the Jobs table's default on-demand maximum (40,000 write units,
	// about 6,600 jobs a second), so the table binds long before the index.
	MaxLiveShards = 256
)

// The shard count may only grow. A job's item carries the live_shard (and,
// once final, the finished_shard) its writer computed with the writer's
// count, so a walk over fewer shards would miss it. A DynamoStore whose
// count is above LiveShards records it in the Jobs table (the item
// liveShardsKey, attribute liveShardsAttr; it only grows) before its first
// write (a Create or a transition); CheckLiveShards, which a program that walks (the sweeper, the
// listings) calls at start, refuses a count below the recorded one with
// ErrLiveShardsShrunk. A table with no record was written with 16.

// LiveShard returns the live_shard of a job under the default count,
// LiveShards: LiveShardOf(jobID, LiveShards).
func LiveShard(jobID string) string { return LiveShardOf(jobID, LiveShards) }

// LiveShardOf returns the live_shard of a job under a count of shards: the
// 32-bit FNV-1a hash of its id modulo shards, in decimal. The hash is fixed
// by its definition, not by the process (unlike hash/maphash), so every
// writer, in every version of the code, puts a job in the same shard for
// the same count: at 16, today's items keep theirs. Changing the count
// changes the shards of the jobs created after it only: a live transition
// keeps the job's live_shard (the final one writes finished_shard under its
// writer's count, which the walk over the recorded count also reads).
func LiveShardOf(jobID string, shards int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(jobID)) // a hash.Hash never fails to write
	return strconv.FormatUint(uint64(h.Sum32())%uint64(shards), 10)
}

// Lister lists live jobs by the time of their last transition: what the
// sweeper needs to find jobs that are stuck. DynamoStore (through the live
// index) and MemoryStore implement it, and jobstest.Run holds them to the
// same behaviour.
type Lister interface {
	// Live returns the ids of at most limit jobs that are not final and
	// whose last transition (updated_at) was strictly before updatedBefore,
	// oldest first (ties by id). On DynamoDB the index is eventually
	// consistent: a job may be listed just after it moved on, or missed
	// just after it got stuck, so a caller reads each job before acting
	// and finds the rest on a later call.
	Live(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error)
}

// BatchGetter reads many jobs at once: the sweeper reads every job whose
// candidates or whose listing it examines, once per run. DynamoStore and
// MemoryStore implement it, and jobstest.Run holds them to the same
// behaviour.
type BatchGetter interface {
	// GetMany reads the jobs of ids, strongly consistent, each once however
	// often ids names it. A job that does not exist is absent from the map.
	// An invalid id is ErrInvalid, and nothing is read. An item that does
	// not decode as a job is absent too, and named by the
	// *UndecodableError GetMany then returns together with the map of
	// every other job; any other error comes with no map.
	GetMany(ctx context.Context, ids []string) (map[string]Job, error)
}

// LivePosition is a place in the live listing: a job's last transition
// (epoch milliseconds) and its id. The zero value is before every job.
type LivePosition struct {
	UpdatedAt int64 // epoch ms
	ID        string
}

// LivePager is Lister resumable at a position: what a listing for people
// needs to go on where its last page ended. DynamoStore and MemoryStore
// implement it, and jobstest.Run holds them to the same behaviour.
type LivePager interface {
	// LiveAfter is Live strictly after the position after (by last
	// transition, then id), with each job's position. The listing is
	// exact at the page's edge: of the jobs that share a millisecond,
	// none is left out before one that sorts after it is given.
	LiveAfter(ctx context.Context, after LivePosition, updatedBefore time.Time, limit int) ([]LivePosition, error)
}

var (
	_ LivePager   = (*DynamoStore)(nil)
	_ LivePager   = (*MemoryStore)(nil)
	_ Lister      = (*DynamoStore)(nil)
	_ Lister      = (*MemoryStore)(nil)
	_ BatchGetter = (*DynamoStore)(nil)
	_ BatchGetter = (*MemoryStore)(nil)
)

// uniqueIDs validates ids and returns each once, in first-seen order.
func uniqueIDs(ids []string) ([]string, error) {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return nil, fmt.Errorf("jobs: get many: %w", err)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

func (p LivePosition) compare(q LivePosition) int {
	return cmp.Or(cmp.Compare(p.UpdatedAt, q.UpdatedAt), cmp.Compare(p.ID, q.ID))
}

// oldest returns the first limit jobs strictly after after, oldest first,
// ties by id.
func oldest(found []LivePosition, after LivePosition, limit int) []LivePosition {
	found = slices.DeleteFunc(found, func(p LivePosition) bool { return p.compare(after) <= 0 })
	slices.SortFunc(found, LivePosition.compare)
	return found[:min(len(found), limit)]
}

// liveIDs is the ids of Live's answer.
func liveIDs(found []LivePosition, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(found))
	for _, p := range found {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

func validateLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("jobs: live: %w: limit %d is not positive", ErrInvalid, limit)
	}
	return nil
}
