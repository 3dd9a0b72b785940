package quarantine

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table returns the shape of a quarantine table named name, as CreateTable
// takes it: what the DynamoStore relies on and nothing else. Its key is
// KeyHold (S, hash) and KeySort (S, range); its sparse index HeldIndex
// (AttrHeldQueue S, AttrHeldAt N) projects keys only; it has no stream and
// is billed per request. Time to live on AttrExpiresAt is set apart
// (UpdateTimeToLive), as DynamoDB asks. Durability settings (point-in-time
// recovery, encryption, deletion protection) are a deployment's choice,
// not part of the shape.
//
// template.yaml's QuarantineTable declares the same shape (a template test
// holds the two equal), and the DynamoStore's integration tests create
// their tables from it.
func Table(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(KeyHold), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(KeySort), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrHeldQueue), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrHeldAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(KeyHold), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(KeySort), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(HeldIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrHeldQueue), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrHeldAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	}
}
