package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// ErrLiveShardsShrunk reports a DynamoStore whose LiveShards is below the count jobs
// were written with (recorded in the Jobs table), so its walks would miss
// the live and finished jobs of the shards above it. See CheckLiveShards.
var ErrLiveShardsShrunk = errors.New("live shards below the recorded count")

const (
	// liveShardsKey is the Jobs table item that records the largest shard
	// count a store wrote with. No job id holds '#' (nor does an intent
	// marker's key start so), so it is no job and no marker.
	liveShardsKey = "config#live-shards"
	// liveShardsAttr is its attribute: the count, a number.
	liveShardsAttr = "live_shards"
)

// liveShardsRecord makes sure, once per store, that the table records a
// count at least the store's before the store writes a job with it (a
// Create, or a transition, which writes the job's shard again).
type liveShardsRecord struct {
	mu       sync.Mutex
	recorded bool
}

// recordLiveShards records s's count when it is above LiveShards (a table
// without a record was written with 16), at most once per store: one
// conditional UpdateItem that raises the record and never lowers it. Its
// error leaves the record to the next write, which writes no job before.
func (s *DynamoStore) recordLiveShards(ctx context.Context) error {
	if s.shards <= LiveShards {
		return nil
	}
	s.record.mu.Lock()
	defer s.record.mu.Unlock()
	if s.record.recorded {
		return nil
	}
	n := &types.AttributeValueMemberN{Value: strconv.Itoa(s.shards)}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       map[string]types.AttributeValue{jobitem.AttrJobID: str(liveShardsKey)},
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
		UpdateExpression:          aws.String("SET #n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": liveShardsAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": n},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) { // refused: the record is already at least n
		return fmt.Errorf("jobs: record live shards %d: %w", s.shards, err)
	}
	s.record.recorded = true
	return nil
}

// CheckLiveShards reads the recorded shard count (RecordedLiveShards) and
// returns ErrLiveShardsShrunk, naming both counts, when the store's
// LiveShards is below it: its Live, LiveAfter and Finished would then miss
// jobs. A program that walks calls it (the sweeper's wiring does, each
// run).
func (s *DynamoStore) CheckLiveShards(ctx context.Context) error {
	recorded, err := RecordedLiveShards(ctx, s.api, s.table)
	if err != nil {
		return err
	}
	if s.shards < recorded {
		return fmt.Errorf("jobs: %w: LiveShards %d, but jobs were written with %d (a job keeps its shard; set at least %d)",
			ErrLiveShardsShrunk, s.shards, recorded, recorded)
	}
	return nil
}

// RecordedLiveShards returns the largest shard count jobs were written
// with in table (one strongly consistent GetItem): the record a store above
// LiveShards keeps, or LiveShards for a table without one. A program that
// only reads (fifoworker jobs) opens its store with that many.
func RecordedLiveShards(ctx context.Context, api DynamoDBAPI, table string) (int, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(table),
		Key:                      map[string]types.AttributeValue{jobitem.AttrJobID: str(liveShardsKey)},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#n"),
		ExpressionAttributeNames: map[string]string{"#n": liveShardsAttr},
	})
	if err != nil {
		return 0, fmt.Errorf("jobs: read live shards: %w", err)
	}
	v, ok := out.Item[liveShardsAttr].(*types.AttributeValueMemberN)
	if !ok {
		return LiveShards, nil
	}
	recorded, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, fmt.Errorf("jobs: read live shards: recorded %q: %w", v.Value, err)
	}
	return recorded, nil
}
