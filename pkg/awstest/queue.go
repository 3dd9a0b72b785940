package awstest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// FIFOQueue creates a FIFO queue named Name(t, prefix)+".fifo" through
// client, deletes it when the test ends, and returns its URL.
func FIFOQueue(t testing.TB, client *sqs.Client, prefix string) string {
	t.Helper()
	name := Name(t, prefix) + ".fifo"
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name),
		Attributes: map[string]string{"FifoQueue": "true"}})
	if err != nil {
		t.Fatalf("awstest: create queue %s: %v", name, err)
	}
	t.Cleanup(func() {
		// t.Context() has ended by now.
		if _, err := client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
			t.Errorf("awstest: cleanup: delete queue %s: %v", name, err)
		}
	})
	return aws.ToString(out.QueueUrl)
}
