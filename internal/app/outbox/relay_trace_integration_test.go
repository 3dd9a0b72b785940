//go:build integration

package outbox_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The local stack's SQS emulator takes the messages of a traced relay
// invocation, AWSTraceHeader and all, so the pipeline runs locally as it
// does on AWS, where the functions are traced. (fauxqs keeps no system
// attribute: a receive returns the messages without it.)
func TestTheLocalSQSTakesTheRelaysTracedMessages(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	urls := map[string]string{
		"commands": awstest.FIFOQueue(t, client, "trace-commands"),
		"events":   awstest.FIFOQueue(t, client, "trace-events"),
	}
	relay, err := sqsout.NewRelay(sqsout.Config{Client: client, CommandsURL: urls["commands"], EventsURL: urls["events"]})
	require.NoError(t, err)
	ctx := lambdaTrace(t.Context(), "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	resp, err := relay.Handle(ctx, events.DynamoDBEvent{Records: history("job-42", jobs.EventStarted)})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "every traced message was accepted")

	for q, want := range map[string]string{"commands": "job-42/v0", "events": "job-42/v1"} {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls[q]), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		require.NoError(t, err)
		require.Len(t, out.Messages, 1, q)
		require.Equal(t, want, out.Messages[0].Attributes["MessageDeduplicationId"], q)
	}
}
