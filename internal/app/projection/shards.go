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

// ErrShardsUnrecorded: VerifyShards found no shard count recorded in the
// Totals table: the projector records it before its first write.
var ErrShardsUnrecorded = errors.New("projection: no shard count recorded for the totals")

// CheckShards is the check of a program that writes the totals first (the
// projector): it records the store's shard count in the Totals table if
// none is recorded yet, and returns ErrShardsChanged, naming both counts,
// if another is. A consistent GetItem of the record; when there is none,
// a Scan of one item (a table that holds items but no record was written
// before the count was recorded, with one shard: it is refused unless the
// store has one shard, rather than read as empty shards) and a conditional
// PutItem, which a concurrent recorder can refuse (then the record is read
// again).
func (s *DynamoStore) CheckShards(ctx context.Context) error {
	recorded, ok, err := RecordedShards(ctx, s.api, s.tables.Totals)
	switch {
	case err != nil:
		return err
	case ok:
		return s.compareShards(recorded)
	}
	if s.shards != 1 {
		out, err := s.api.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.tables.Totals), Limit: aws.Int32(2), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("projection: look for totals written before the shard count was recorded: %w", err)
		}
		for _, item := range out.Items {
			if k, isS := item[attrTenant].(*types.AttributeValueMemberS); !isS || k.Value != shardsPartition {
				return fmt.Errorf("%w: Shards is %d, but the Totals table %s holds totals written before the count was recorded, with one shard (set 1, or start from an empty table)",
					ErrShardsChanged, s.shards, s.tables.Totals)
			}
		}
	}
	_, err = s.api.PutItem(ctx, &dynamodb.PutItemInput{
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
	return s.VerifyShards(ctx)
}

// VerifyShards is the check of a program that writes the totals only after
// the projector has (the sweeper's repairs): it reads the record (one
// consistent GetItem) and returns ErrShardsChanged when it names another
// count than the store's, ErrShardsUnrecorded when there is none.
func (s *DynamoStore) VerifyShards(ctx context.Context) error {
	recorded, ok, err := RecordedShards(ctx, s.api, s.tables.Totals)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: Totals table %s (the projector records it before its first write)", ErrShardsUnrecorded, s.tables.Totals)
	}
	return s.compareShards(recorded)
}

func (s *DynamoStore) compareShards(recorded int) error {
	if recorded == s.shards {
		return nil
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

// CursorKey is the key of the job's cursor item in the Totals table, in the
// job's shard: for tools and tests that read or write the item itself.
func (s *DynamoStore) CursorKey(tenant, jobID string) map[string]types.AttributeValue {
	return s.cursorKey(tenant, jobID)
}

// TotalKey is the key of the total item of the tenant's shard that holds
// the job: for tools and tests, as CursorKey.
func (s *DynamoStore) TotalKey(tenant, jobID string) map[string]types.AttributeValue {
	return totalsKey(s.partition(tenant, jobID), keyTotal)
}
