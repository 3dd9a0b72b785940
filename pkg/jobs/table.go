package jobs

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// AttrExpiresAt (N, Unix seconds) is the Jobs table's time-to-live
// attribute: a final job's item and its intent marker expire at it, and
// DynamoDB's TTL deletes them. Turn TTL on for it when creating the table.
const AttrExpiresAt = jobitem.AttrExpiresAt

// Table returns the shape of a Jobs table named name, as CreateTable takes
// it: what the DynamoStore relies on and nothing else. Its key is job_id
// (S); its stream carries new and old images (the transactional outbox is
// read from it); its two sparse indexes, LiveIndex and FinishedIndex,
// project keys only; it is billed per request. Time to live on
// AttrExpiresAt is set apart (UpdateTimeToLive), as DynamoDB asks.
// Durability settings (point-in-time recovery, encryption, deletion
// protection) are a deployment's choice, not part of the shape.
//
// template.yaml's JobsTable declares the same shape (a template test holds
// the two equal), and the DynamoStore's integration tests create their
// tables from it.
func Table(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(jobitem.AttrJobID), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrLiveShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(jobitem.AttrUpdatedAt), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(attrFinishedShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrFinishedKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(jobitem.AttrJobID), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			keysOnlyIndex(LiveIndex, attrLiveShard, jobitem.AttrUpdatedAt),
			keysOnlyIndex(FinishedIndex, attrFinishedShard, attrFinishedKey),
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
}

func keysOnlyIndex(name, hash, sort string) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sort), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}
