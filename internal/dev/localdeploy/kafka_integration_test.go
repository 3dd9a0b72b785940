//go:build integration

package localdeploy_test

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// Deploys the repository's template-kafka.yaml on the stack, its topics
// on the stack's broker, twice: the tables and buckets as template.yaml's
// are, the topics the mappings read, and the brokers the relay's
// environment and the MSK mappings' cluster name are the local broker.
func TestDeployKafkaTemplateTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	brokers := os.Getenv(localstack.KafkaBootstrapVar)
	require.NotEmpty(t, brokers, "the stack's broker (%s, which `fifoworker local run` sets)", localstack.KafkaBootstrapVar)
	tpl, err := samtemplate.Load("../../../template-kafka.yaml")
	require.NoError(t, err)
	stack := awstest.Name(t, "kdep")
	for param, topic := range map[string]string{"CommandsTopicName": stack + "-commands", "EventsTopicName": stack + "-events"} {
		p := tpl.Parameters[param]
		p.Default = topic // another stack's tests share the broker
		tpl.Parameters[param] = p
	}
	clients := localdeploy.Clients{SQS: awstest.SQS(t), DynamoDB: awstest.DynamoDB(t), S3: awstest.S3(t), KafkaBootstrapServers: brokers}
	first, err := localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), first, clients)) })
	second, err := localdeploy.Deploy(ctx, tpl, stack, "eu-west-1", clients)
	require.NoError(t, err, "deploying twice is harmless")
	require.Equal(t, first.Outputs, second.Outputs)

	require.Equal(t, stack+"-commands", first.Outputs["CommandsTopic"])
	require.Equal(t, stack+"-events", first.Outputs["EventsTopic"])
	require.ElementsMatch(t, []string{stack + "-commands", stack + "-events"}, first.Topics)
	_, err = clients.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(first.Outputs["JobsTableName"])})
	require.NoError(t, err)
	_, err = awstest.S3(t).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(first.Outputs["KafkaFailuresBucketName"])})
	require.NoError(t, err)

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), first.Topics...) })
	topics, err := adm.ListTopics(ctx, first.Topics...)
	require.NoError(t, err)
	for _, topic := range first.Topics {
		require.NoError(t, topics[topic].Err, topic)
		require.Len(t, topics[topic].Partitions, 6, topic)
	}

	relayEnv, err := localdeploy.Resolve(tpl, first, stack, "eu-west-1", tpl.Resources["RelayFunction"].Properties["Environment"])
	require.NoError(t, err)
	vars := relayEnv.(map[string]any)["Variables"].(map[string]any)
	require.Equal(t, brokers, vars["KAFKA_BOOTSTRAP_SERVERS"])
	require.Equal(t, stack+"-commands", vars["COMMANDS_TOPIC"])
	arn, err := localdeploy.Resolve(tpl, first, stack, "eu-west-1", tpl.Resources["WorkerCommandsMapping"].Properties["EventSourceArn"])
	require.NoError(t, err)
	cluster, err := first.KafkaCluster(arn.(string))
	require.NoError(t, err)
	require.Equal(t, []string{brokers}, cluster)
}
