//go:build integration

package localesm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

type sqsHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

func TestSQSPartialFailureDeletesOnlyUnreportedMessages(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 1})
	ids := map[string]string{}
	for _, body := range []string{"ok-a", "fail-b", "ok-c"} {
		ids[body] = send(t, client, q.url, "group-"+body, body)
	}

	var log sqsLog
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		log.invoke(ev)
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			if strings.HasPrefix(m.Body, "fail") && m.Attributes["ApproximateReceiveCount"] == "1" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler),
		QueueURL: q.url, ReportBatchItemFailures: true, FunctionTimeout: time.Second, OnBatch: log.onBatch,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)

	eventually(t, 20*time.Second, "the failed message to be received again and the queue to empty", func() bool {
		return len(log.receives(ids["fail-b"])) >= 2 && queueEmpty(t, client, q.url)
	})
	stop()

	require.Equal(t, []string{"1"}, log.receives(ids["ok-a"]), "a message not reported is deleted after its first invocation")
	require.Equal(t, []string{"1"}, log.receives(ids["ok-c"]))
	require.Equal(t, []string{"1", "2"}, log.receives(ids["fail-b"]), "the reported message comes back after its visibility timeout")
	_, results := log.snapshot()
	for _, r := range results {
		for _, rec := range r.Records {
			if rec.MessageId == ids["fail-b"] && rec.Attributes["ApproximateReceiveCount"] == "1" {
				require.Equal(t, localesm.OutcomePartialFailure, r.Outcome)
				require.NotContains(t, r.Deleted, ids["fail-b"])
				require.Len(t, r.Deleted, len(r.Records)-1, "every other message of the batch is deleted")
			}
		}
	}
}

// TestSQSWholeBatchFailuresDeleteNothing: every way of failing a whole batch
// leaves all of its messages to come back, and none is deleted.
func TestSQSWholeBatchFailuresDeleteNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		report  bool
		outcome localesm.Outcome
		fail    sqsHandler // what the function does the first time it sees a message
	}{
		{"function error", true, localesm.OutcomeFunctionError, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("batch failed")
		}},
		{"function error without reporting", false, localesm.OutcomeFunctionError, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("batch failed")
		}},
		{"panic", true, localesm.OutcomeFunctionError, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			panic("handler panicked")
		}},
		{"timeout", true, localesm.OutcomeTimeout, func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
			<-ctx.Done()
			return events.SQSEventResponse{}, nil // too late: Lambda has already given up on it
		}},
		{"timeout without reporting", false, localesm.OutcomeTimeout, func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
			<-ctx.Done()
			return events.SQSEventResponse{}, nil
		}},
		{"unknown item identifier", true, localesm.OutcomeInvalidResponse, func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{
				{ItemIdentifier: ev.Records[0].MessageId}, {ItemIdentifier: "not-a-message-of-this-batch"},
			}}, nil
		}},
		{"empty item identifier", true, localesm.OutcomeInvalidResponse, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ""}}}, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := awstest.SQS(t)
			q := newQueue(t, client, queueSpec{fifo: true, visibility: 2})
			var sent []string
			for i := range 3 {
				sent = append(sent, send(t, client, q.url, fmt.Sprint("job-", i), fmt.Sprint("cmd-", i)))
			}
			var log sqsLog
			handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				log.invoke(ev)
				for _, m := range ev.Records {
					if m.Attributes["ApproximateReceiveCount"] == "1" {
						return tc.fail(ctx, ev)
					}
				}
				return events.SQSEventResponse{}, nil
			}
			m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler),
				QueueURL: q.url, ReportBatchItemFailures: tc.report, FunctionTimeout: time.Second, OnBatch: log.onBatch,
			})
			require.NoError(t, err)
			stop := start(t, m.Run)
			eventually(t, 20*time.Second, "every message to succeed on its second receive", func() bool {
				for _, id := range sent {
					if !slices.Contains(log.receives(id), "2") {
						return false
					}
				}
				return queueEmpty(t, client, q.url)
			})
			stop()

			_, results := log.snapshot()
			failed := 0
			for _, r := range results {
				if r.Outcome == localesm.OutcomeSuccess {
					require.Len(t, r.Deleted, len(r.Records))
					continue
				}
				failed++
				require.Equal(t, tc.outcome, r.Outcome, "error: %v", r.Err)
				require.Error(t, r.Err)
				require.Empty(t, r.Deleted, "a failed batch deletes nothing")
			}
			require.NotZero(t, failed)
			for _, id := range sent {
				require.Equal(t, []string{"1", "2"}, log.receives(id), "message %s", id)
			}
		})
	}
}

func TestSQSWithoutReportBatchItemFailuresSuccessDeletesAll(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 1})
	var sent []string
	for i := range 3 {
		sent = append(sent, send(t, client, q.url, fmt.Sprint("job-", i), fmt.Sprint("cmd-", i)))
	}
	var log sqsLog
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		log.invoke(ev)
		// A partial batch response means nothing to a mapping that did not
		// ask for one: the batch succeeded.
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
		return resp, nil
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler), QueueURL: q.url, FunctionTimeout: time.Second, OnBatch: log.onBatch})
	require.NoError(t, err)
	stop := start(t, m.Run)
	eventually(t, 10*time.Second, "the queue to empty", func() bool { return queueEmpty(t, client, q.url) })
	time.Sleep(1500 * time.Millisecond) // more than the visibility timeout: nothing may come back
	stop()
	for _, id := range sent {
		require.Equal(t, []string{"1"}, log.receives(id))
	}
	_, results := log.snapshot()
	for _, r := range results {
		require.Equal(t, localesm.OutcomeSuccess, r.Outcome)
	}
}

func TestSQSRedriveToDeadLetterQueue(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 1, maxReceive: 2})
	poison := send(t, client, q.url, "job-poison", "poison")
	good := send(t, client, q.url, "job-good", "good")
	var log sqsLog
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		log.invoke(ev)
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			if m.Body == "poison" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler),
		QueueURL: q.url, ReportBatchItemFailures: true, FunctionTimeout: time.Second, OnBatch: log.onBatch,
	})
	require.NoError(t, err)
	start(t, m.Run)

	dead := receiveN(t, client, q.dlqURL, 1, 20*time.Second)
	require.Equal(t, "poison", aws.ToString(dead[0].Body))
	require.Equal(t, "job-poison", dead[0].Attributes["MessageGroupId"])
	eventually(t, 5*time.Second, "the source queue to empty", func() bool { return queueEmpty(t, client, q.url) })
	require.Equal(t, []string{"1", "2"}, log.receives(poison), "received maxReceiveCount times, then redriven by the queue")
	require.Equal(t, []string{"1"}, log.receives(good))
}

// groupTracker fails the test's invariant when two invocations hold one
// message group at once, and records in which order each group's messages
// were completed.
type groupTracker struct {
	mu         sync.Mutex
	active     map[string]int
	overlaps   []string
	maxRunning int
	running    int
	completed  map[string][]string
}

func (g *groupTracker) enter(ev events.SQSEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running++
	g.maxRunning = max(g.maxRunning, g.running)
	seen := map[string]bool{}
	for _, m := range ev.Records {
		group := m.Attributes["MessageGroupId"]
		if seen[group] {
			continue
		}
		seen[group] = true
		g.active[group]++
		if g.active[group] > 1 {
			g.overlaps = append(g.overlaps, fmt.Sprintf("group %s in two invocations (message %s)", group, m.MessageId))
		}
	}
}

func (g *groupTracker) leave(ev events.SQSEvent, done []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	seen := map[string]bool{}
	for _, m := range ev.Records {
		group := m.Attributes["MessageGroupId"]
		if !seen[group] {
			seen[group] = true
			g.active[group]--
		}
	}
	for _, body := range done {
		group, _, _ := strings.Cut(body, "/")
		g.completed[group] = append(g.completed[group], body)
	}
}

func TestSQSNeverTwoBatchesOfOneGroupAtOnce(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 1})
	const groups, perGroup, concurrency = 6, 4, 3
	want := map[string][]string{}
	for i := range perGroup {
		for g := range groups {
			group := fmt.Sprint("job-", g)
			body := fmt.Sprintf("%s/%d", group, i)
			send(t, client, q.url, group, body)
			want[group] = append(want[group], body)
		}
	}

	tracker := &groupTracker{active: map[string]int{}, completed: map[string][]string{}}
	handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		tracker.enter(ev)
		time.Sleep(30 * time.Millisecond) // long enough for invocations to overlap
		// Fail message 1 of every even group on its first receive; like a
		// FIFO consumer, fail every later message of a failed group too.
		var resp events.SQSEventResponse
		var done []string
		failed := map[string]bool{}
		for _, m := range ev.Records {
			group := m.Attributes["MessageGroupId"]
			first := m.Attributes["ApproximateReceiveCount"] == "1"
			if failed[group] || (first && strings.HasSuffix(m.Body, "/1") && (group == "job-0" || group == "job-2" || group == "job-4")) {
				failed[group] = true
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				continue
			}
			done = append(done, m.Body)
		}
		tracker.leave(ev, done)
		return resp, nil
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler),
		QueueURL: q.url, ReportBatchItemFailures: true, MaximumConcurrency: concurrency, FunctionTimeout: time.Second,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)
	eventually(t, 30*time.Second, "every message to complete", func() bool { return queueEmpty(t, client, q.url) })
	stop()

	tracker.mu.Lock()
	defer tracker.mu.Unlock()
	require.Empty(t, tracker.overlaps)
	require.LessOrEqual(t, tracker.maxRunning, concurrency)
	for group, bodies := range want {
		require.Equal(t, bodies, tracker.completed[group], "group %s completed out of order or more than once", group)
	}
}

// TestSQSWithholdsAGroupStillInFlight takes the queue's group lock away from
// an invocation that still runs (as an expired visibility timeout would)
// and checks that the mapping itself keeps the group out of other
// invocations.
func TestSQSWithholdsAGroupStillInFlight(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 2})
	id := send(t, client, q.url, "job-42", "cmd-42")

	withheld := make(chan struct{})
	var closeOnce sync.Once
	var firstWithheld localesm.WithheldMessage // written before withheld is closed
	var log sqsLog
	onBatch := func(r localesm.SQSBatchResult) {
		log.onBatch(r)
		for _, w := range r.Withheld {
			if w.MessageID == id {
				closeOnce.Do(func() { firstWithheld = w; close(withheld) })
			}
		}
	}
	var mu sync.Mutex
	active, overlaps := 0, 0
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		active++
		if active > 1 {
			overlaps++
		}
		mu.Unlock()
		defer func() { mu.Lock(); active--; mu.Unlock() }()
		if log.invoke(ev) == 1 {
			// Lose the queue's lease while still running, then wait until
			// the mapping has received the message again.
			_, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(ev.Records[0].ReceiptHandle), VisibilityTimeout: 0,
			})
			if err != nil {
				return events.SQSEventResponse{}, err
			}
			select {
			case <-withheld:
			case <-ctx.Done():
			}
		}
		return events.SQSEventResponse{}, nil
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler),
		QueueURL: q.url, ReportBatchItemFailures: true, MaximumConcurrency: 2, FunctionTimeout: 2 * time.Second, OnBatch: onBatch,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)
	select {
	case <-withheld:
	case <-time.After(10 * time.Second):
		t.Fatal("the message was never received while its group was in flight")
	}
	require.Equal(t, localesm.WithheldMessage{MessageID: id, GroupID: "job-42", ReceiveCount: 2}, firstWithheld,
		"the withheld receive used up a receive")
	eventually(t, 20*time.Second, "the message to be processed and deleted", func() bool { return queueEmpty(t, client, q.url) })
	stop()

	mu.Lock()
	require.Zero(t, overlaps, "two invocations held group job-42 at once")
	mu.Unlock()
	counts := log.receives(id)
	require.Equal(t, "1", counts[0])
	for _, c := range counts[1:] {
		require.NotEqual(t, "2", c, "the withheld receive (the second) was invoked")
	}
	// The withheld receive replaced the first invocation's receipt handle:
	// its delete succeeded without deleting, and only the invocation that
	// held the latest handle reports the message deleted.
	_, results := log.snapshot()
	var reported []string
	for _, r := range results {
		for _, rec := range r.Records {
			if rec.Attributes["ApproximateReceiveCount"] == "1" {
				require.Empty(t, r.Deleted, "deleted with a receipt handle a later receive replaced")
			}
		}
		reported = append(reported, r.Deleted...)
	}
	require.Equal(t, []string{id}, reported, "reported deleted once, by the invocation that deleted it")
}

func TestSQSEventRecordsAsLambdaBuildsThem(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 3})
	id := send(t, client, q.url, "job-42", `{"type":"job.run","command_id":"cmd-42"}`)
	got := make(chan events.SQSMessage, 1)
	type invocationContext struct {
		lc       *lambdacontext.LambdaContext
		deadline time.Duration
	}
	gotCtx := make(chan invocationContext, 1)
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		select {
		case got <- ev.Records[0]:
			gotCtx <- invocationContext{lc: lc, deadline: time.Until(deadline)}
		default:
		}
		return events.SQSEventResponse{}, nil
	}
	const arn = "arn:aws:lambda:eu-west-1:000000000000:function:worker"
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler), QueueURL: q.url, FunctionTimeout: 3 * time.Second, FunctionARN: arn})
	require.NoError(t, err)
	start(t, m.Run)
	var rec events.SQSMessage
	select {
	case rec = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no invocation")
	}
	ic := <-gotCtx

	require.Equal(t, id, rec.MessageId)
	require.NotEmpty(t, rec.ReceiptHandle)
	require.Equal(t, `{"type":"job.run","command_id":"cmd-42"}`, rec.Body)
	require.Equal(t, "aws:sqs", rec.EventSource)
	require.Equal(t, q.arn, rec.EventSourceARN)
	require.Equal(t, strings.Split(q.arn, ":")[3], rec.AWSRegion)
	require.Regexp(t, `^[0-9a-f]{32}$`, rec.Md5OfBody)
	require.Regexp(t, `^[0-9a-f]{32}$`, rec.Md5OfMessageAttributes)
	for _, attr := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp", "MessageGroupId", "SequenceNumber", "MessageDeduplicationId"} {
		require.NotEmpty(t, rec.Attributes[attr], "attribute %s", attr)
	}
	require.Equal(t, "job-42", rec.Attributes["MessageGroupId"])
	sentBy := rec.MessageAttributes["sent_by"]
	require.Equal(t, "String", sentBy.DataType)
	require.Equal(t, t.Name(), aws.ToString(sentBy.StringValue))
	require.NotNil(t, sentBy.StringListValues, "Lambda sends empty lists, not null")

	require.NotNil(t, ic.lc)
	require.Regexp(t, `^[0-9a-f-]{36}$`, ic.lc.AwsRequestID)
	require.Equal(t, arn, ic.lc.InvokedFunctionArn)
	require.Greater(t, ic.deadline, time.Duration(0))
	require.LessOrEqual(t, ic.deadline, 3*time.Second)
}

func TestSQSMappingRefusesAShortVisibilityTimeout(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 1})
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}), QueueURL: q.url, FunctionTimeout: 5 * time.Second})
	require.NoError(t, err)
	err = m.Run(t.Context())
	require.ErrorContains(t, err, "visibility timeout")
}

func TestSQSMappingStopsWithInvocationsInFlight(t *testing.T) {
	t.Parallel()
	client := awstest.SQS(t)
	q := newQueue(t, client, queueSpec{fifo: true, visibility: 10})
	for i := range 3 {
		send(t, client, q.url, fmt.Sprint("job-", i), "cmd")
	}
	entered := make(chan struct{}, 3)
	var mu sync.Mutex
	returned := 0
	handler := func(ctx context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
		entered <- struct{}{}
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // finishing up after the cancel
		mu.Lock()
		returned++
		mu.Unlock()
		return events.SQSEventResponse{}, ctx.Err()
	}
	m, err := localesm.NewSQSMapping(localesm.SQSConfig{Client: client, Invoker: localesm.Func(handler), QueueURL: q.url, FunctionTimeout: 10 * time.Second, BatchSize: 1})
	require.NoError(t, err)
	stop := start(t, m.Run)
	for range 3 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("invocations did not start")
		}
	}
	stop() // cancels and waits for Run
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 3, returned, "Run returned before every invocation it started")
}
