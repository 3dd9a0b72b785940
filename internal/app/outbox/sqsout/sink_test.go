package sqsout_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// answerSQS answers every SendMessageBatch with out.
type answerSQS struct{ out *sqs.SendMessageBatchOutput }

func (a answerSQS) SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return a.out, nil
}

// A message SQS lists neither as successful nor as failed was not
// published as far as the relay can tell: its job stops there, and the
// batch is retried from its record. So is one SQS lists as both.
func TestAMessageSQSListsNoResultForIsNotPublished(t *testing.T) {
	t.Parallel()
	a := outboxtest.History("job-42", jobs.EventStarted)
	for name, out := range map[string]*sqs.SendMessageBatchOutput{
		"no result":                   {},
		"another entry's result only": {Successful: []types.SendMessageBatchResultEntry{{Id: aws.String("1")}}},
		"an id that is no number":     {Successful: []types.SendMessageBatchResultEntry{{Id: aws.String("zero")}}},
		"successful and failed": {
			Successful: []types.SendMessageBatchResultEntry{{Id: aws.String("0")}},
			Failed:     []types.BatchResultErrorEntry{{Id: aws.String("0"), Code: aws.String("InternalError")}},
		},
	} {
		relay, err := sqsout.NewRelay(sqsout.Config{Client: answerSQS{out}, CommandsURL: commandsURL, EventsURL: eventsURL})
		require.NoError(t, err)
		resp, err := relay.Handle(t.Context(), events.DynamoDBEvent{Records: a})
		require.NoError(t, err, name)
		require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures, name)
	}
}
