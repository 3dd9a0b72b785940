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
