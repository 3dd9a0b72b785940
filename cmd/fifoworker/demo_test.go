package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The demo runs on SQS (template.yaml) or Kafka (template-kafka.yaml);
// another transport is a usage error naming the flag, before any stack
// starts.
func TestDemoTakesSQSOrKafka(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "sqs", "kafka"} {
		require.NoError(t, (&demoOptions{Transport: ok}).Validate(), ok)
	}
	require.Equal(t, "template-kafka.yaml", demoTemplates["kafka"])
	require.Equal(t, "template.yaml", demoTemplates[""])
	for _, bad := range []string{"kinesis", "Kafka", "sqs,kafka"} {
		err := (&demoOptions{Transport: bad}).Validate()
		require.ErrorContains(t, err, "--transport", bad)
	}
}

// The demo's store is DynamoDB's (template.yaml, template-kafka.yaml) or
// PostgreSQL's (template-postgres.yaml on SQS); another store is a usage
// error naming the flag.
func TestDemoTakesDynamoDBOrPostgres(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "dynamodb", "postgres"} {
		require.NoError(t, (&demoOptions{Store: ok}).Validate(), ok)
	}
	require.Equal(t, "template-postgres.yaml", demoStores["postgres"][""])
	require.Equal(t, "template-postgres.yaml", demoStores["postgres"]["sqs"])
	require.Equal(t, "template-kafka.yaml", demoStores["dynamodb"]["kafka"])
	require.Equal(t, "template.yaml", demoStores[""][""])
	for _, bad := range []string{"aurora", "Postgres", "dynamodb,postgres"} {
		err := (&demoOptions{Store: bad}).Validate()
		require.ErrorContains(t, err, "--store", bad)
	}
}
