//go:build integration

package quarantine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// orderLog records, per group, the bodies the handler processed.
type orderLog struct {
	mu     sync.Mutex
	done   map[string][]string
	poison map[string]bool // bodies that fail permanently until fixed
	// attrs records a processed body's message attribute "n", to show a
	// copy carries its original's attributes.
	attrs  map[string]string
	dedups map[string]string // by message id
}

func (l *orderLog) handle(_ context.Context, msg events.SQSMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dedups[msg.MessageId] = msg.Attributes["MessageDeduplicationId"]
	if l.poison[msg.Body] {
		return fifo.Permanent(fmt.Errorf("cannot process %s yet", msg.Body))
	}
	g := msg.Attributes["MessageGroupId"]
	l.done[g] = append(l.done[g], msg.Body)
	if a, ok := msg.MessageAttributes["n"]; ok && a.StringValue != nil {
		l.attrs[msg.Body] = *a.StringValue
	}
	return nil
}

// dedup is the deduplication id of a message the handler saw.
func (l *orderLog) dedup(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dedups[id]
}

func (l *orderLog) processed(g string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.done[g]...)
}

// TestQuarantineOnTheLocalStack runs the whole path on the emulators: a
// FIFO queue with a redrive policy, a Lambda event source mapping, the fifo
// processor with the quarantine on the template's table, and a redrive by
// the operator. A poison message holds its group while another group runs
// on; the messages behind it, and one sent while the group drains, are
// parked; once fixed, a redrive replays them in their original order, with
// their attributes, and releases the group; nothing reaches the DLQ. It also
// counts the quarantine's DynamoDB requests per batch.
func TestQuarantineOnTheLocalStack(t *testing.T) {
	t.Parallel()
	b := setupDynamo(t)
	client := awstest.SQS(t)
	name := awstest.Name(t, "qtn")
	dlq, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq.fifo"), Attributes: map[string]string{"FifoQueue": "true"}})
	require.NoError(t, err)
	dlqURL := aws.ToString(dlq.QueueUrl)
	dlqAttrs, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	src, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name + ".fifo"), Attributes: map[string]string{
		"FifoQueue": "true", "VisibilityTimeout": "5",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, dlqAttrs.Attributes["QueueArn"]),
	}})
	require.NoError(t, err)
	url := aws.ToString(src.QueueUrl)
	t.Cleanup(func() {
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)})
	})
	attrs, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	arn := attrs.Attributes["QueueArn"]
	queue, err := quarantine.QueueName(arn)
	require.NoError(t, err)

	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: b.client, Table: b.table})
	require.NoError(t, err)
	// The processor's store has a client of its own, so that its requests
	// are counted apart from the test's.
	counter := &awstest.Requests{}
	procDB := awstest.DynamoDB(t, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Count(""))
		o.DisableValidateResponseChecksum = true
	})
	log := &orderLog{done: map[string][]string{}, poison: map[string]bool{"a-2": true}, attrs: map[string]string{}, dedups: map[string]string{}}
	var perBatch []map[string]int
	var released []bool // by batch: it released group a's hold
	var outcomes []batchOutcomes
	var batchMu sync.Mutex
	procStore, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: procDB, Table: b.table})
	require.NoError(t, err)
	q, err := quarantine.New(quarantine.Config{Store: procStore, QueueARN: arn})
	require.NoError(t, err)
	proc, err := fifo.New(fifo.Config{Handler: log.handle, Quarantine: q, QuarantineThreshold: 3,
		Metrics: func(m fifo.BatchMetrics) {
			// Parks are counted per lane: a lane's park is one call, and
			// each of this test's batches parks at most one lane's.
			var o batchOutcomes
			for _, mm := range m.Messages {
				switch {
				case mm.Outcome == fifo.Parked:
					o.parkedLanes = 1
				case mm.Outcome == fifo.Succeeded && mm.ReceiveCount > 0 && strings.HasPrefix(log.dedup(mm.MessageID), "fifoworker-redrive."):
					o.copiesDone++
				}
			}
			outcomes = append(outcomes, o)
		}})
	require.NoError(t, err)
	mapping, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		// One batch at a time, so that each batch's requests are its own.
		batchMu.Lock()
		defer batchMu.Unlock()
		counter.Take()
		before, _ := store.Hold(ctx, queue, "a") // the test's own client: not counted
		resp, err := proc.Process(ctx, ev)
		perBatch = append(perBatch, counter.Take())
		after, _ := store.Hold(ctx, queue, "a")
		released = append(released, before.State != quarantine.StateReleased && after.State == quarantine.StateReleased)
		return resp, err
	}), QueueURL: url, ReportBatchItemFailures: true, FunctionTimeout: 3 * time.Second, PollWait: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mapping.Run(ctx) }()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)

	sendAll := func(bodies ...string) {
		t.Helper()
		for _, body := range bodies {
			g, n, _ := strings.Cut(body, "-")
			_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{
				QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String(g),
				MessageDeduplicationId: aws.String("d-" + body),
				MessageAttributes:      map[string]sqstypes.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(n)}},
			})
			require.NoError(t, err)
		}
	}
	sendAll("a-1", "a-2", "a-3", "b-1", "a-4", "b-2")
	waitFor(t, "group a held with a-2, a-3 and a-4 parked, and group b processed", func() bool {
		h, err := store.Hold(t.Context(), queue, "a")
		return err == nil && h.State == quarantine.StateHeld && h.Parked == 3 && len(log.processed("b")) == 2
	})
	require.Equal(t, []string{"a-1"}, log.processed("a"), "nothing of group a runs after its poison message")
	require.Equal(t, []string{"b-1", "b-2"}, log.processed("b"), "another group is not held up")
	sendAll("a-5")
	waitFor(t, "a-5 parked behind the others", func() bool {
		h, err := store.Hold(t.Context(), queue, "a")
		return err == nil && h.Parked == 4
	})
	reader, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: queue})
	require.NoError(t, err)
	_, items, err := reader.Show(t.Context(), "a", quarantine.StatusParked, 0)
	require.NoError(t, err)
	var bodies []string
	for _, p := range items {
		bodies = append(bodies, p.Body)
	}
	require.Equal(t, []string{"a-2", "a-3", "a-4", "a-5"}, bodies, "parked in their original order")
	require.Contains(t, items[0].Cause, "cannot process a-2 yet")

	// The fix, then the redrive; a-6 arrives while the group drains.
	log.mu.Lock()
	log.poison["a-2"] = false
	log.mu.Unlock()
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: queue, QueueURL: url, Sender: client, Poll: 100 * time.Millisecond,
		Progress: func(p quarantine.RedriveProgress) {
			if p.Sent == 1 {
				sendAll("a-6")
			}
		}})
	require.NoError(t, err)
	rctx, rcancel := context.WithTimeout(t.Context(), time.Minute)
	defer rcancel()
	rep, err := op.Redrive(rctx, "a", true)
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, rep.State, "%+v", rep)
	require.Equal(t, []string{"a-1", "a-2", "a-3", "a-4", "a-5", "a-6"}, log.processed("a"), "the redrive replays in the original order, and the message sent meanwhile runs after them")
	log.mu.Lock()
	require.Equal(t, "2", log.attrs["a-2"], "a copy carries its original's message attributes")
	log.mu.Unlock()

	// After the release the group runs freely again.
	sendAll("a-7")
	waitFor(t, "a-7 processed", func() bool { return len(log.processed("a")) == 7 })
	stop()

	left, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	require.NoError(t, err)
	require.Equal(t, "0", left.Attributes["ApproximateNumberOfMessages"], "the quarantine kept everything out of the DLQ")

	// Requests per batch: a batch of free groups reads the holds once; a
	// batch that parks adds one park (a read and a transaction); a copy
	// that runs adds its done (a read and a transaction, and unless it
	// was the last one parked and released the hold, a query for the
	// oldest message parked after it, the hold's next).
	batchMu.Lock()
	defer batchMu.Unlock()
	require.Len(t, outcomes, len(perBatch))
	var sawPark, sawDone bool
	for i, n := range perBatch {
		o := outcomes[i]
		sawPark = sawPark || o.parkedLanes > 0
		sawDone = sawDone || o.copiesDone > 0
		want := map[string]int{"BatchGetItem": 1 + o.parkedLanes} // the holds, then each park's read
		if o.copiesDone > 0 {
			want["GetItem"] = o.copiesDone // each done's read
		}
		if q := o.copiesDone - btoi(released[i]); q > 0 {
			want["Query"] = q // each done's next, but the releasing one's
		}
		if o.parkedLanes+o.copiesDone > 0 {
			want["TransactWriteItems"] = o.parkedLanes + o.copiesDone // each park's and done's write
		}
		require.Equal(t, want, n, "batch %d: %+v", i, o)
	}
	require.True(t, sawPark && sawDone, "the batches parked and ran copies: %+v", outcomes)
	t.Logf("quarantine requests per batch (%d batches): %v", len(perBatch), perBatch)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// batchOutcomes is what a batch did that costs the quarantine requests.
type batchOutcomes struct {
	parkedLanes int // lanes parked (one park each)
	copiesDone  int // redriven copies that ran (one done each)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting: %s", what)
		time.Sleep(50 * time.Millisecond)
	}
}
