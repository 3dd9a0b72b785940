//go:build integration

package pgsource_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/sqsout"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// Through the real SQS transport on the local stack's queues: every
// message arrives, each job's in version order on its group, with its
// outbox id as its deduplication id.
func TestTheSQSSinkCarriesEachJobInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := awstest.SQS(t)
	urls := map[string]string{
		"commands": awstest.FIFOQueue(t, client, "pgsource-commands"),
		"events":   awstest.FIFOQueue(t, client, "pgsource-events"),
	}
	sink, err := sqsout.NewSink(sqsout.Config{Client: client, CommandsURL: urls["commands"], EventsURL: urls["events"]})
	require.NoError(t, err)
	ids := jobIDs("job", 12) // more than a SendMessageBatch's 10 per round
	for _, id := range ids {
		b.create(t, id, 3)
	}
	rep, err := b.relay(t, pgsource.Config{Sink: sink}).Drain(t.Context())
	require.NoError(t, err)
	require.Equal(t, 48, rep.Rows)
	require.Zero(t, b.rows(t))

	got := map[string][]string{}
	// The commands (each job's v0) first, then the events (v1 to v3).
	for _, q := range []struct {
		name string
		n    int
	}{{"commands", 12}, {"events", 36}} {
		n := q.n
		for received := 0; received < n; {
			out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls[q.name]), MaxNumberOfMessages: 10,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			require.NoError(t, err)
			require.NotEmpty(t, out.Messages, "%s: %d of %d received", q.name, received, n)
			for _, m := range out.Messages {
				group := m.Attributes["MessageGroupId"]
				got[group] = append(got[group], m.Attributes["MessageDeduplicationId"])
				_, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(urls[q.name]), ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
			}
			received += len(out.Messages)
		}
	}
	require.Equal(t, want(ids, 3), got)
}
