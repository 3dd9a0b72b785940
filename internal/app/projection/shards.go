package projection

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrShardsChanged: a DynamoStore's Shards is not the count the Totals
// table was first written with. A job's cursor lives in the shard its id
// hashes to among that many, so with another count the events of jobs in
// flight would find no cursor, or another job's shard, and count again
// what was counted; the store refuses to write instead (CheckShards).
var ErrShardsChanged = errors.New("projection: the totals' shard count changed")

// The item that records the shard count: under a partition key no tenant's
// shard can have (a tenant's ends in "#<digits>" with more than one
// shard; with one it is the tenant, but no tenant's item has this sort
// key).
const (
	shardsPartition = "#config"
	shardsKey       = "totals-shards"
	attrShards      = "shards"
)

// CheckShards records the store's shard count in the Totals table if none
// is recorded yet, and returns ErrShardsChanged, naming both counts, if
// another is: one conditional PutItem, and a GetItem when it is refused.
// The projector's and the sweeper's wiring call it before they write.
//
// A table written before the count was recorded (before this check
// existed) was written with one shard: deploy it with Shards 1, or start
// from an empty table.
func (s *DynamoStore) CheckShards(ctx context.Context) error {
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.tables.Totals),
		Item: map[string]types.AttributeValue{
			attrTenant: str(shardsPartition), attrKey: str(shardsKey), attrShards: num(int64(s.shards)),
		},
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": attrShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": num(int64(s.shards))},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ccf):
		return fmt.Errorf("projection: record the totals' shards: %w", err)
	}
	recorded, ok, err := RecordedShards(ctx, s.api, s.tables.Totals)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("projection: record the totals' shards: refused, yet no count is recorded")
	}
	return fmt.Errorf("%w: Shards is %d, but the Totals table %s was written with %d (a job's cursor lives in its shard; set %d)",
		ErrShardsChanged, s.shards, s.tables.Totals, recorded, recorded)
}

// RecordedShards returns the shard count recorded in the Totals table
// (one strongly consistent GetItem), and false when none is. A program
// that only reads the totals opens its store with that count.
func RecordedShards(ctx context.Context, api DynamoDBAPI, table string) (int, bool, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            totalsKey(shardsPartition, shardsKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, false, fmt.Errorf("projection: read the totals' shards: %w", err)
	}
	v, ok := out.Item[attrShards].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0, false, fmt.Errorf("projection: read the totals' shards: recorded %q: %w", v.Value, err)
	}
	return n, true, nil
}
