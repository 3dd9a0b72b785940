//go:build integration

package localesm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// TestSQSContractOnTheEmulator: the SQS emulator keeps the contract the fake
// is held to (TestSQSContractOnTheFake), so the fake is faithful where the
// mapping's tests lean on it.
func TestSQSContractOnTheEmulator(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	runSQSContract(t, sqsContract{
		run:   func(t *testing.T, f func(t *testing.T)) { f(t) },
		slack: time.Second,
		newQueue: func(t *testing.T, visibility time.Duration) contractQueue {
			out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{
				QueueName: aws.String(awstest.Name(t, "contract") + ".fifo"),
				Attributes: map[string]string{
					"FifoQueue":         "true",
					"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
				},
			})
			require.NoError(t, err)
			url := aws.ToString(out.QueueUrl)
			t.Cleanup(func() {
				_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			})
			return contractQueue{api: client, url: url, send: func(t *testing.T, key, group string) {
				t.Helper()
				var dedup [8]byte
				_, err := rand.Read(dedup[:])
				require.NoError(t, err)
				_, err = client.SendMessage(t.Context(), &sqs.SendMessageInput{
					QueueUrl: aws.String(url), MessageBody: aws.String("body-" + key),
					MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(hex.EncodeToString(dedup[:])),
				})
				require.NoError(t, err)
			}}
		},
	})
}
