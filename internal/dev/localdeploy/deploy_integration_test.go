//go:build integration

package localdeploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// Deploys the repository's template.yaml on the stack under a fresh stack
// name, twice, and checks that what exists has the template's properties.
func TestDeployRepositoryTemplateTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tpl, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	sqsc, ddb, s3c := awstest.SQS(t), awstest.DynamoDB(t), awstest.S3(t)
	clients := localdeploy.Clients{SQS: sqsc, DynamoDB: ddb, S3: s3c}
	stack := awstest.Name(t, "dep")

	first, err := localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", clients)
	require.NoError(t, err)
	second, err := localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", clients)
	require.NoError(t, err, "deploying twice is harmless")
	require.Equal(t, first.Outputs, second.Outputs)
	require.Contains(t, first.Skipped, "CandidatesBucketPolicy (AWS::S3::BucketPolicy): not emulated locally")

	// Queues: FIFO, with their FIFO dead-letter queue and the template's timeouts.
	attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(first.Outputs["CommandsQueueUrl"]),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	require.Equal(t, "true", attrs.Attributes["FifoQueue"])
	require.Equal(t, "360", attrs.Attributes["VisibilityTimeout"])
	require.Equal(t, "false", attrs.Attributes["ContentBasedDeduplication"])
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive))
	require.Equal(t, first.Attributes["CommandsDLQ"]["Arn"], redrive.DeadLetterTargetArn)
	require.Equal(t, "8", fmt.Sprint(redrive.MaxReceiveCount), "template.yaml's, as a number or a string, as SQS allows")
	require.Contains(t, first.Outputs["CommandsDLQUrl"], stack+"-commands-dlq.fifo")

	// Table: key, stream, TTL.
	desc, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(first.Outputs["JobsTableName"])})
	require.NoError(t, err)
	require.Equal(t, "job_id", aws.ToString(desc.Table.KeySchema[0].AttributeName))
	require.True(t, aws.ToBool(desc.Table.StreamSpecification.StreamEnabled))
	require.Equal(t, ddbtypes.StreamViewTypeNewAndOldImages, desc.Table.StreamSpecification.StreamViewType)
	require.Equal(t, aws.ToString(desc.Table.LatestStreamArn), first.Outputs["JobsTableStreamArn"])
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(first.Outputs["JobsTableName"])})
	require.NoError(t, err)
	require.Equal(t, "expires_at", aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	// Bucket exists.
	bucket := aws.String(first.Outputs["CandidatesBucketName"])
	_, err = s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket})
	require.NoError(t, err)

	// Teardown removes all of it, a non-empty bucket included, and a second
	// teardown finds nothing to do.
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("candidates/x"), Body: strings.NewReader("x")})
	require.NoError(t, err)
	require.NoError(t, testenv.Teardown(ctx, second, clients))
	_, err = s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket})
	require.Error(t, err)
	_, err = ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(first.Outputs["JobsTableName"])})
	var noTable *ddbtypes.ResourceNotFoundException
	require.ErrorAs(t, err, &noTable)
	_, err = sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(first.Outputs["CommandsQueueUrl"])})
	require.Error(t, err)
	require.NoError(t, testenv.Teardown(ctx, second, clients))
}

// A table that exists with another key schema is an error, not a silent reuse.
func TestDeployRefusesATableWithAnotherKeySchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	stack := awstest.Name(t, "keys")
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(stack + "-JobsTable")})
	})
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(stack + "-JobsTable"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	require.NoError(t, err)
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  JobsTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: job_id, AttributeType: S}]
      KeySchema: [{AttributeName: job_id, KeyType: HASH}]
`))
	require.NoError(t, err)
	_, err = localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", localdeploy.Clients{DynamoDB: ddb})
	require.ErrorContains(t, err, "exists with another key schema")

	// Same key, but no stream: the relay would read nothing.
	noStream := awstest.Name(t, "nostream")
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(noStream + "-JobsTable")})
	})
	_, err = ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(noStream + "-JobsTable"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("job_id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("job_id"), KeyType: ddbtypes.KeyTypeHash}},
	})
	require.NoError(t, err)
	withStream, err := samtemplate.Load("../../../template.yaml")
	require.NoError(t, err)
	jobsOnly, err := testenv.Only(withStream, "JobsTable")
	require.NoError(t, err)
	_, err = localdeploy.Deploy(ctx, jobsOnly, noStream, "eu-west-1", localdeploy.Clients{DynamoDB: ddb})
	require.ErrorContains(t, err, "another stream (it has none, the template says NEW_AND_OLD_IMAGES)")
}

// Secondary indexes and TTL declared in a template are created as declared.
func TestDeployCreatesIndexesAndTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := awstest.DynamoDB(t)
	tpl, err := samtemplate.Parse([]byte(`
Resources:
  Views:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-views"
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - {AttributeName: job_id, AttributeType: S}
        - {AttributeName: tenant, AttributeType: S}
        - {AttributeName: updated_at, AttributeType: N}
      KeySchema: [{AttributeName: job_id, KeyType: HASH}]
      GlobalSecondaryIndexes:
        - IndexName: by-tenant
          KeySchema: [{AttributeName: tenant, KeyType: HASH}, {AttributeName: updated_at, KeyType: RANGE}]
          Projection: {ProjectionType: INCLUDE, NonKeyAttributes: [status]}
      TimeToLiveSpecification: {AttributeName: gone_at, Enabled: true}
`))
	require.NoError(t, err)
	stack := awstest.Name(t, "gsi")
	res, err := localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", localdeploy.Clients{DynamoDB: ddb})
	require.NoError(t, err)
	t.Cleanup(func() { _ = testenv.Teardown(context.Background(), res, localdeploy.Clients{DynamoDB: ddb}) })
	require.Equal(t, stack+"-views", res.Resources["Views"])
	desc, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(stack + "-views")})
	require.NoError(t, err)
	require.Len(t, desc.Table.GlobalSecondaryIndexes, 1)
	gsi := desc.Table.GlobalSecondaryIndexes[0]
	require.Equal(t, "by-tenant", aws.ToString(gsi.IndexName))
	require.Len(t, gsi.KeySchema, 2)
	require.Equal(t, ddbtypes.ProjectionTypeInclude, gsi.Projection.ProjectionType)
	require.Equal(t, []string{"status"}, gsi.Projection.NonKeyAttributes)
	ttl, err := ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(stack + "-views")})
	require.NoError(t, err)
	require.Equal(t, "gone_at", aws.ToString(ttl.TimeToLiveDescription.AttributeName))
}
