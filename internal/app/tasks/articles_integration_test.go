//go:build integration

package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// dynamoBackend creates an Articles table shaped like template.yaml's
// (tenant hash key, article_id range key), unique to the test.
func dynamoBackend(t *testing.T) backend {
	t.Helper()
	awstest.DynamoDB(t) // fails the test unless an endpoint is configured
	client := dynamodb.NewFromConfig(awstest.Config(t), func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true // DynamoDB Local sends no CRC32 on errors
	})
	table := awstest.Name(t, "articles")
	ctx := t.Context()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(tasks.AttrTenant), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(tasks.AttrArticleID), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(tasks.AttrTenant), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(tasks.AttrArticleID), KeyType: types.KeyTypeRange},
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		require.NoError(t, err)
	})
	require.NoError(t, dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second))
	return backend{api: client, table: table, put: func(t *testing.T, items ...map[string]types.AttributeValue) {
		t.Helper()
		for _, it := range items {
			_, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
			require.NoError(t, err)
		}
	}}
}

// The suite the fake passes, on DynamoDB Local.
func TestExportOnDynamoDBLocal(t *testing.T) {
	t.Parallel()
	runSuite(t, dynamoBackend)
}
