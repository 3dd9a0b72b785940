//go:build integration

package awstest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// A test's clients leave no keep-alive connection goroutines behind once the
// test is over, so goleak checks in integration tests stay meaningful.
func TestClientsCloseTheirIdleConnectionsAtCleanup(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("uses a client", func(t *testing.T) {
		_, err := awstest.SQS(t).ListQueues(context.Background(), &sqs.ListQueuesInput{})
		require.NoError(t, err)
	})
	require.NoError(t, goleak.Find(before))
}

// Table creates a table of the shape it is given, with TTL on the
// attribute named, and deletes it when the test ends.
func TestTableIsCreatedWithItsTTLAndDeletedAtCleanup(t *testing.T) {
	t.Parallel()
	client := awstest.DynamoDB(t)
	var name string
	t.Run("creates", func(t *testing.T) {
		in := &dynamodb.CreateTableInput{
			TableName:            aws.String(awstest.Name(t, "table")),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
		}
		name = awstest.Table(t, client, in, "gone_at")
		require.Equal(t, aws.ToString(in.TableName), name)
		desc, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		require.NoError(t, err)
		require.Equal(t, types.TableStatusActive, desc.Table.TableStatus)
		ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		require.NoError(t, err)
		require.Equal(t, "gone_at", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
		require.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	})
	_, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var gone *types.ResourceNotFoundException
	require.ErrorAs(t, err, &gone, "the table is deleted when its test ends")
}
