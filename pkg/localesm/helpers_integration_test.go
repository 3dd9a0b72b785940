//go:build integration

package localesm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// queueSpec describes a test queue. Visibility timeouts are short so that
// failed messages come back within a test.
type queueSpec struct {
	fifo       bool
	visibility int // seconds
	maxReceive int // with a DLQ when > 0
}

type testQueue struct {
	url, arn, dlqURL string
}

func createQueue(t *testing.T, client *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	require.NoError(t, err, "create queue %s", name)
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	a, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	return url, a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
}

func newQueue(t *testing.T, client *sqs.Client, spec queueSpec) testQueue {
	t.Helper()
	name := awstest.Name(t, "esm")
	suffix := ""
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(spec.visibility)}
	if spec.fifo {
		suffix = ".fifo"
		attrs["FifoQueue"] = "true"
	}
	var q testQueue
	if spec.maxReceive > 0 {
		dlqAttrs := map[string]string{}
		if spec.fifo {
			dlqAttrs["FifoQueue"] = "true"
		}
		var dlqARN string
		q.dlqURL, dlqARN = createQueue(t, client, name+"-dlq"+suffix, dlqAttrs)
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, spec.maxReceive)
	}
	q.url, q.arn = createQueue(t, client, name+suffix, attrs)
	return q
}

func uniqueID(t *testing.T) string {
	t.Helper()
	var b [8]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// send sends one message to a FIFO queue and returns its id.
func send(t *testing.T, client *sqs.Client, url, group, body string) string {
	t.Helper()
	out, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(body),
		MessageGroupId:         aws.String(group),
		MessageDeduplicationId: aws.String(uniqueID(t)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"sent_by": {DataType: aws.String("String"), StringValue: aws.String(t.Name())},
		},
	})
	require.NoError(t, err)
	return aws.ToString(out.MessageId)
}

// queueEmpty reports whether the queue holds no message, visible or not.
func queueEmpty(t *testing.T, client *sqs.Client, url string) bool {
	t.Helper()
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	require.NoError(t, err)
	return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
}

// receiveN receives from url until n messages have arrived or the time is up.
func receiveN(t *testing.T, client *sqs.Client, url string, n int, within time.Duration) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	deadline := time.Now().Add(within)
	for len(got) < n && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		got = append(got, out.Messages...)
	}
	require.Len(t, got, n, "messages received from %s", url)
	return got
}

// eventually polls cond until it holds, failing the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start runs a mapping until the test ends (or stop is called) and checks
// that Run then returns nil.
func start(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err, "Run")
			case <-time.After(15 * time.Second):
				t.Error("Run did not return within 15s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// sqsLog records what the function received and what the mapping decided.
type sqsLog struct {
	mu      sync.Mutex
	invoked [][]events.SQSMessage
	results []localesm.SQSBatchResult
}

func (l *sqsLog) invoke(ev events.SQSEvent) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.invoked = append(l.invoked, ev.Records)
	return len(l.invoked)
}

func (l *sqsLog) onBatch(r localesm.SQSBatchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, r)
}

// receives returns the receive counts with which the function got id.
func (l *sqsLog) receives(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var counts []string
	for _, batch := range l.invoked {
		for _, m := range batch {
			if m.MessageId == id {
				counts = append(counts, m.Attributes["ApproximateReceiveCount"])
			}
		}
	}
	return counts
}

func (l *sqsLog) snapshot() ([][]events.SQSMessage, []localesm.SQSBatchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]events.SQSMessage(nil), l.invoked...), append([]localesm.SQSBatchResult(nil), l.results...)
}

// newStreamTable creates a table with a NEW_AND_OLD_IMAGES stream, like the
// Jobs table, and returns its name and stream ARN.
func newStreamTable(t *testing.T, client *dynamodb.Client) (table, streamARN string) {
	t.Helper()
	table = awstest.Name(t, "esm")
	out, err := client.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("job_id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("job_id"), KeyType: ddbtypes.KeyTypeHash}},
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table, aws.ToString(out.TableDescription.LatestStreamArn)
}

func putJob(t *testing.T, client *dynamodb.Client, table, id string) {
	t.Helper()
	_, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			"job_id":     &ddbtypes.AttributeValueMemberS{Value: id},
			"status":     &ddbtypes.AttributeValueMemberS{Value: "pending"},
			"generation": &ddbtypes.AttributeValueMemberN{Value: "0"},
		},
	})
	require.NoError(t, err)
}

// streamLog records the stream batches the function received.
type streamLog struct {
	mu      sync.Mutex
	invoked [][]events.DynamoDBEventRecord
	results []localesm.StreamBatchResult
}

func (l *streamLog) invoke(ev events.DynamoDBEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.invoked = append(l.invoked, ev.Records)
}

func (l *streamLog) onBatch(r localesm.StreamBatchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, r)
}

func (l *streamLog) snapshot() ([][]events.DynamoDBEventRecord, []localesm.StreamBatchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]events.DynamoDBEventRecord(nil), l.invoked...), append([]localesm.StreamBatchResult(nil), l.results...)
}

func jobIDs(records []events.DynamoDBEventRecord) []string {
	ids := make([]string, len(records))
	for i, r := range records {
		ids[i] = r.Change.Keys["job_id"].String()
	}
	return ids
}
