//go:build integration

package awstest_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// FIFOQueue creates a FIFO queue of the test's own and, when the test
// ends, deletes it.
func TestFIFOQueueIsCreatedAndDeletedAtCleanup(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	var url string
	t.Run("creates", func(t *testing.T) {
		url = awstest.FIFOQueue(t, client, "queue")
		require.True(t, strings.HasSuffix(url, ".fifo"), url)
		require.Contains(t, url, "/queue-", url)
		out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue}})
		require.NoError(t, err)
		require.Equal(t, "true", out.Attributes[string(types.QueueAttributeNameFifoQueue)])
	})
	_, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue}})
	require.ErrorAs(t, err, new(*types.QueueDoesNotExist), "the queue is deleted when its test ends")
}
