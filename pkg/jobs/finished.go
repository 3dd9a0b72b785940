package jobs

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// The finished index: template.yaml's JobsTable has a sparse global
// secondary index "finished" (hash key finished_shard, S; range key
// finished_key, S; keys only). The transition that makes a job final writes
// both attributes in its own conditional UpdateItem, and nothing writes
// them again (a final job never changes), so the index holds exactly the
// final jobs, by shard and by the time of their final transition, until
// TTL removes their items. The sweeper walks it with two cursors (each a
// FinishedKey or a FinishedBound), a first check and a later recheck, to
// check that the projector applied each final transition, without
// scanning the table; the recheck finds a job the index showed only after
// the first cursor had passed its key. (An item that became final before
// the index existed is not in it.)
const (
	// FinishedIndex is the name of the index.
	FinishedIndex = "finished"
)

// FinishedKey returns a final job's key in the finished index: the time of
// its final transition in epoch milliseconds, 13 digits, then "#" and the
// job id, e.g. "1793782800000#job-42". Keys sort by time and then by id,
// and each is unique, so a listing can resume strictly after any key. (13
// digits hold every millisecond from 1970 to 2286; an earlier time counts
// as 1970.)
func FinishedKey(jobID string, finishedAt time.Time) string {
	return FinishedBound(finishedAt) + "#" + jobID
}

// FinishedBound returns the key that sorts after the key of every final
// transition strictly before t and before the key of every one at t or
// later: the time alone, 13 digits. A cursor at FinishedBound(t) has passed
// every job that ended before t.
func FinishedBound(t time.Time) string {
	return fmt.Sprintf("%013d", max(t.UnixMilli(), 0))
}

// FinishedJob is one entry of the finished index.
type FinishedJob struct {
	ID  string
	Key string // FinishedKey of the job and its final transition's time
}

// FinishedLister lists final jobs by the time of their final transition:
// what the sweeper needs to check that each one's projection caught up.
// DynamoStore (through the finished index) and MemoryStore implement it,
// and jobstest.Run holds them to the same behaviour.
type FinishedLister interface {
	// Finished returns at most limit final jobs whose FinishedKey is
	// strictly after after ("" for the first) and whose final transition
	// (updated_at) was strictly before before, in key order: oldest first,
	// ties by id. Fewer than limit means there are no more before before.
	// On DynamoDB the index is eventually consistent: a job that ended a
	// moment ago may be missing, so a caller that moves a cursor past
	// before must keep before well behind now.
	Finished(ctx context.Context, after string, before time.Time, limit int) ([]FinishedJob, error)
}

var (
	_ FinishedLister = (*DynamoStore)(nil)
	_ FinishedLister = (*MemoryStore)(nil)
)

// finishedAfter keeps the entries after after, sorts them by key and cuts
// them to limit.
func finishedAfter(found []FinishedJob, after string, limit int) []FinishedJob {
	found = slices.DeleteFunc(found, func(f FinishedJob) bool { return f.Key <= after })
	slices.SortFunc(found, func(a, b FinishedJob) int { return cmp.Compare(a.Key, b.Key) })
	return found[:min(len(found), limit)]
}

// Finished implements FinishedLister: one Query of the finished index per
// shard and page, the shards at most maxInFlight at a time, each shard read in key order until it has given limit
// jobs or has no more before the bound; the shards' lists are merged and
// cut to limit. Every job a shard did not give sorts after the limit it
// gave, so the merged list is exactly the first limit of the whole index.
func (s *DynamoStore) Finished(ctx context.Context, after string, before time.Time, limit int) ([]FinishedJob, error) {
	if err := validateFinishedLimit(limit); err != nil {
		return nil, err
	}
	bound := FinishedBound(before)
	if after >= bound {
		return nil, nil // DynamoDB refuses a BETWEEN whose bounds are reversed
	}
	shards, err := fanOut(ctx, s.shards, func(ctx context.Context, shard int) ([]FinishedJob, error) {
		got, err := s.finishedShard(ctx, strconv.Itoa(shard), after, bound, limit)
		if err != nil {
			return nil, fmt.Errorf("jobs: finished: shard %d: %w", shard, err)
		}
		return got, nil
	})
	if err != nil {
		return nil, err
	}
	return finishedAfter(slices.Concat(shards...), after, limit), nil
}

func (s *DynamoStore) finishedShard(ctx context.Context, shard, after, bound string, limit int) ([]FinishedJob, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(FinishedIndex),
		ExpressionAttributeNames: map[string]string{"#s": attrFinishedShard, "#k": attrFinishedKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": str(shard), ":hi": str(bound),
		},
		ScanIndexForward: aws.Bool(true), // oldest first
	}
	if after == "" {
		in.KeyConditionExpression = aws.String("#s = :s AND #k < :hi")
	} else {
		// BETWEEN includes after itself, which the loop skips: one entry at
		// most, since keys are unique.
		in.KeyConditionExpression = aws.String("#s = :s AND #k BETWEEN :lo AND :hi")
		in.ExpressionAttributeValues[":lo"] = str(after)
	}
	var out []FinishedJob
	for len(out) < limit {
		in.Limit = aws.Int32(int32(min(limit-len(out), math.MaxInt32)))
		page, err := s.api.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			d := ddbitem.New(item)
			f := FinishedJob{ID: d.OptString(jobitem.AttrJobID), Key: d.OptString(attrFinishedKey)}
			if err := d.Err(); err != nil {
				return nil, fmt.Errorf("jobs: %w", err)
			}
			if f.Key > after {
				out = append(out, f)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	return out, nil
}

// Finished implements FinishedLister. The memory store has no index: it
// lists what the finished index holds, every final job.
func (s *MemoryStore) Finished(ctx context.Context, after string, before time.Time, limit int) ([]FinishedJob, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jobs: finished: %w", err)
	}
	if err := validateFinishedLimit(limit); err != nil {
		return nil, err
	}
	bound := FinishedBound(before)
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []FinishedJob
	for id, j := range s.jobs {
		if k := FinishedKey(id, j.UpdatedAt); j.Status.Final() && k < bound {
			found = append(found, FinishedJob{ID: id, Key: k})
		}
	}
	return finishedAfter(found, after, limit), nil
}

func validateFinishedLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("jobs: finished: %w: limit %d is not positive", ErrInvalid, limit)
	}
	return nil
}
