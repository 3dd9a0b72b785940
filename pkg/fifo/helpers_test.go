package fifo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/pkg/lanes/lanestest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testQueueARN = "arn:aws:sqs:eu-west-1:123456789012:commands.fifo"

// spec is a compact batch description: "a1 a2 b1 -x" makes messages a1 and
// a2 of group a, b1 of group b, and x without a group (standard queue).
func batchOf(t testing.TB, ids ...string) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for _, id := range ids {
		attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}
		if id[0] != '-' {
			attrs["MessageGroupId"] = id[:1]
		} else {
			id = id[1:]
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      id,
			ReceiptHandle:  "rh-" + id,
			Body:           fmt.Sprintf(`{"id":%q}`, id),
			Attributes:     attrs,
			EventSource:    "aws:sqs",
			EventSourceARN: testQueueARN,
			AWSRegion:      "eu-west-1",
		})
	}
	return ev
}

func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// recorder notes the order in which handlers start.
type recorder = lanestest.Recorder

// logBuffer is a JSON slog handler into a buffer, safe for concurrent use.
type logBuffer = lanestest.LogBuffer

// fakeDLQ records SendMessage calls; err, if set, is returned instead, and
// panics, if set, is panicked with.
type fakeDLQ struct {
	mu     sync.Mutex
	sent   []*sqs.SendMessageInput
	err    error
	panics any
}

func (f *fakeDLQ) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics != nil {
		panic(f.panics)
	}
	if f.err != nil {
		return nil, f.err
	}
	f.sent = append(f.sent, in)
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeDLQ) Sent() []*sqs.SendMessageInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), f.sent...)
}
