package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// commands builds a batch as Lambda delivers it from commands.fifo: each
// record is "message id/group id".
func commands(pairs ...[2]string) events.SQSEvent {
	var ev events.SQSEvent
	for _, p := range pairs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      p[0],
			Body:           `{"type":"job.run","command_id":"` + p[0] + `","job_id":"` + p[1] + `"}`,
			Attributes:     map[string]string{"MessageGroupId": p[1], "ApproximateReceiveCount": "1"},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:commands.fifo",
		})
	}
	return ev
}

// One lane per job: job-42's second command is not started after its first
// fails, while job-43 and job-44 run to completion at the same time.
func Example() {
	p, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "cmd-42" {
			return errors.New("task failed")
		}
		return nil
	}})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}
	resp, err := p.Process(context.Background(), commands(
		[2]string{"cmd-42", "job-42"},
		[2]string{"cmd-43", "job-43"},
		[2]string{"cmd-42b", "job-42"},
		[2]string{"cmd-44", "job-44"},
	))
	if err != nil {
		fmt.Println("batch refused:", err)
		return
	}
	for _, f := range resp.BatchItemFailures {
		fmt.Println("retry", f.ItemIdentifier)
	}
	// Output:
	// retry cmd-42
	// retry cmd-42b
}

// The mode AWS documents for FIFO queues: after the first failure nothing
// else starts, and every message not completed is received again. With one
// lane at a time the result does not depend on timing.
func Example_stopOnFirstFailure() {
	p, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "cmd-43" {
			return errors.New("task failed")
		}
		return nil
	}, StopOnFirstFailure: true, Concurrency: 1})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}
	resp, err := p.Process(context.Background(), commands(
		[2]string{"cmd-42", "job-42"},
		[2]string{"cmd-43", "job-43"},
		[2]string{"cmd-44", "job-44"},
	))
	if err != nil {
		fmt.Println("batch refused:", err)
		return
	}
	for _, f := range resp.BatchItemFailures {
		fmt.Println("retry", f.ItemIdentifier)
	}
	// Output:
	// retry cmd-43
	// retry cmd-44
}

// A malformed command can never succeed: with a dead-letter queue it is moved
// there and acknowledged, and the commands behind it in its group go on.
func ExamplePermanent() {
	dlq := &fakeDLQ{} // an *sqs.Client in a function
	p, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "cmd-42" {
			return fifo.Permanent(errors.New("malformed body"))
		}
		return nil
	}, DeadLetter: &fifo.DeadLetterQueue{Client: dlq, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/commands-dlq.fifo"}})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}
	resp, _ := p.Process(context.Background(), commands(
		[2]string{"cmd-42", "job-42"},
		[2]string{"cmd-42b", "job-42"},
	))
	fmt.Println("failures:", len(resp.BatchItemFailures))
	for _, in := range dlq.Sent() {
		fmt.Println("dead-lettered", *in.MessageDeduplicationId, "in group", *in.MessageGroupId)
	}
	// Output:
	// failures: 0
	// dead-lettered cmd-42 in group job-42
}

// A command that can never succeed holds its job's group: it and the
// commands behind it are parked, in order, and acknowledged, while the
// other jobs go on. An operator fixes the cause and redrives them. (The
// quarantine here is the tests' fake; pkg/quarantine keeps the holds in
// DynamoDB.)
func Example_quarantine() {
	q := &fakeQuarantine{}
	p, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
		if msg.MessageId == "cmd-42" {
			return fifo.Permanent(errors.New("malformed body"))
		}
		return nil
	}, Quarantine: q, QuarantineThreshold: 3})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}
	resp, err := p.Process(context.Background(), commands(
		[2]string{"cmd-42", "job-42"},
		[2]string{"cmd-43", "job-43"},
		[2]string{"cmd-42b", "job-42"},
	))
	if err != nil {
		fmt.Println("batch refused:", err)
		return
	}
	fmt.Println("failures:", len(resp.BatchItemFailures))
	for _, c := range q.Snapshot() {
		if c.Method == "park" {
			fmt.Printf("parked in %s: %s (hold: %v, cause: %v)\n", c.Key, strings.Join(c.Items, ", "), c.Hold, c.Cause)
		}
	}
	// Output:
	// failures: 0
	// parked in job-42: cmd-42, cmd-42b (hold: true, cause: permanent: malformed body)
}

// New refuses a Config that cannot work, naming the field, instead of
// building a Processor that would fail at its first batch.
func ExampleNew() {
	_, err := fifo.New(fifo.Config{
		Handler:         func(context.Context, events.SQSMessage) error { return nil },
		DeadlineMargin:  500 * time.Millisecond,
		ResponseReserve: time.Second,
	})
	fmt.Println(errors.Is(err, fifo.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// fifo: invalid configuration: ResponseReserve 1s exceeds the DeadlineMargin 500ms: a message could start with an expired context
}
