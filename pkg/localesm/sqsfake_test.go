package localesm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

const testQueueURL = "http://sqs.local/000000000000/q.fifo"

// fakeQueue is an SQS FIFO queue in memory, as much of one as a mapping
// sees: a group's messages are received in order, several in one receive
// if they are visible, and the group is locked while one of its messages
// is in flight; a received message is hidden for the visibility timeout
// and then received again with a new receipt handle; a long poll returns
// as soon as a message can be received (a delete that unlocks a group
// wakes it). Time is the clock of the test's synctest bubble, or the wall
// clock outside one.
type fakeQueue struct {
	visibility time.Duration
	// deleteLatency is how long the answer to a DeleteMessageBatch takes to
	// arrive after its deletes have been applied.
	deleteLatency time.Duration
	// beforeDelete, when set, is called at the start of every
	// DeleteMessageBatch, before its deletes are applied.
	beforeDelete func()

	mu          sync.Mutex
	msgs        []*fakeMessage          // in the order sent
	handles     map[string]*fakeMessage // every receipt handle issued
	changed     chan struct{}           // closed and replaced when a message may have become receivable
	deletions   []string                // ids of the messages deleted, in order
	maxInFlight int                     // the most messages in flight at once
}

type fakeMessage struct {
	id, group   string
	receives    int
	handle      string    // the receipt handle of the latest receive
	hiddenUntil time.Time // in flight until then, once received
	deleted     bool
}

func newFakeQueue(visibility time.Duration) *fakeQueue {
	return &fakeQueue{visibility: visibility, handles: map[string]*fakeMessage{}, changed: make(chan struct{})}
}

var _ SQSAPI = (*fakeQueue)(nil)

// send appends a message to the queue; its body is "body-" + id.
func (q *fakeQueue) send(id, group string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, &fakeMessage{id: id, group: group})
	q.notify()
}

// expire makes a message's visibility timeout run out now, as it does when
// an invocation outlasts it.
func (q *fakeQueue) expire(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.id == id {
			m.hiddenUntil = time.Now()
		}
	}
	q.notify()
}

// deleted returns the ids of the messages deleted, in the order deleted.
func (q *fakeQueue) deleted() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.deletions...)
}

func (q *fakeQueue) inFlightMax() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.maxInFlight
}

// notify wakes the long polls. q.mu is held.
func (q *fakeQueue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (m *fakeMessage) inFlight(now time.Time) bool {
	return !m.deleted && m.receives > 0 && now.Before(m.hiddenUntil)
}

func (q *fakeQueue) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		string(sqstypes.QueueAttributeNameQueueArn):          testQueueARN,
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(q.visibility / time.Second)),
	}}, nil
}

func (q *fakeQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	deadline := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		q.mu.Lock()
		now := time.Now()
		msgs := q.receive(now, int(in.MaxNumberOfMessages))
		wake, changed := deadline, q.changed
		for _, m := range q.msgs {
			if m.inFlight(now) && m.hiddenUntil.Before(wake) {
				wake = m.hiddenUntil
			}
		}
		q.mu.Unlock()
		if len(msgs) > 0 || !now.Before(deadline) {
			return &sqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		timer := time.NewTimer(wake.Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// receive takes up to limit visible messages of unlocked groups, in order.
// q.mu is held.
func (q *fakeQueue) receive(now time.Time, limit int) []sqstypes.Message {
	locked := map[string]bool{}
	for _, m := range q.msgs {
		if m.group != "" && m.inFlight(now) {
			locked[m.group] = true
		}
	}
	var out []sqstypes.Message
	for _, m := range q.msgs {
		if len(out) == limit {
			break
		}
		if m.deleted || m.inFlight(now) || locked[m.group] {
			continue
		}
		m.receives++
		m.handle = fmt.Sprintf("%s/receive-%d", m.id, m.receives)
		m.hiddenUntil = now.Add(q.visibility)
		q.handles[m.handle] = m
		out = append(out, sqstypes.Message{
			MessageId:     aws.String(m.id),
			ReceiptHandle: aws.String(m.handle),
			Body:          aws.String("body-" + m.id),
			Attributes: map[string]string{
				groupAttribute:        m.group,
				receiveCountAttribute: strconv.Itoa(m.receives),
			},
		})
	}
	inFlight := 0
	for _, m := range q.msgs {
		if m.inFlight(now) {
			inFlight++
		}
	}
	q.maxInFlight = max(q.maxInFlight, inFlight)
	return out
}

// DeleteMessageBatch applies the deletes, then answers after
// deleteLatency. Only the receipt handle of a message's latest receive
// deletes it; an older one succeeds without deleting, as AWS documents
// ("the request will still succeed, but the message might not be
// deleted") and as fauxqs does. A handle the queue never issued fails its
// entry, as ReceiptHandleIsInvalid.
func (q *fakeQueue) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if q.beforeDelete != nil {
		q.beforeDelete()
	}
	out := &sqs.DeleteMessageBatchOutput{}
	q.mu.Lock()
	for _, e := range in.Entries {
		m, ok := q.handles[aws.ToString(e.ReceiptHandle)]
		if !ok {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"), SenderFault: true})
			continue
		}
		if !m.deleted && m.handle == aws.ToString(e.ReceiptHandle) {
			m.deleted = true
			q.deletions = append(q.deletions, m.id)
		}
		out.Successful = append(out.Successful, sqstypes.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	q.notify()
	q.mu.Unlock()
	if q.deleteLatency > 0 {
		timer := time.NewTimer(q.deleteLatency)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// The SQS contract: what the mappings rely on from a FIFO queue, checked on
// the fake here and on the local stack's SQS emulator (fauxqs) by
// TestSQSContractOnTheEmulator, so that a mapping test that passes on the
// fake passes for a reason SQS gives too.

// contractVisibility is the visibility timeout of a contract test's queue:
// whole seconds, as SQS takes it, and long enough that a check made right
// after a receive comes well inside it on the emulator.
const contractVisibility = 2 * time.Second

// contractQueue is one FIFO queue under the contract.
type contractQueue struct {
	api SQSAPI
	url string
	// send sends a message with body "body-"+key to group: the emulator
	// chooses message ids, so the contract names messages by body.
	send func(t *testing.T, key, group string)
}

// sqsContract says how to run the contract on one implementation.
type sqsContract struct {
	// run runs one case: in a synctest bubble for the fake, whose clock is
	// the bubble's; as it is on the emulator.
	run func(t *testing.T, f func(t *testing.T))
	// newQueue makes an empty FIFO queue with the given visibility timeout.
	newQueue func(t *testing.T, visibility time.Duration) contractQueue
	// slack is how long after its visibility timeout a message may take
	// to be receivable again: none on the fake, whose clock is exact.
	slack time.Duration
}

func (q contractQueue) receive(t *testing.T, limit, wait int32) []sqstypes.Message {
	t.Helper()
	out, err := q.api.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.url), MaxNumberOfMessages: limit, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Messages
}

// delete deletes with the receipt handles and returns the batch's answer.
func (q contractQueue) delete(t *testing.T, handles ...string) *sqs.DeleteMessageBatchOutput {
	t.Helper()
	entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(handles))
	for i, h := range handles {
		entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
	}
	out, err := q.api.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	require.NoError(t, err)
	return out
}

func contractBodies(msgs []sqstypes.Message) []string {
	bodies := []string{}
	for _, m := range msgs {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

// one requires exactly one message with body, received for the count-th
// time, and returns it.
func one(t *testing.T, msgs []sqstypes.Message, body string, count int) sqstypes.Message {
	t.Helper()
	require.Equal(t, []string{body}, contractBodies(msgs))
	require.Equal(t, strconv.Itoa(count), msgs[0].Attributes[receiveCountAttribute], "receive count of %s", body)
	return msgs[0]
}

func runSQSContract(t *testing.T, c sqsContract) {
	t.Helper()
	cases := []struct {
		name string
		test func(t *testing.T, c sqsContract)
	}{
		{"a group's messages are received in order", contractGroupOrder},
		{"a group in flight gives no message", contractGroupLock},
		{"a long poll returns once a delete unlocks the group", contractLongPollWakes},
		{"a message comes back after its visibility timeout", contractVisibilityReturn},
		{"a delete with a stale receipt handle succeeds and leaves the message", contractStaleReceipt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, func(t *testing.T) { tc.test(t, c) })
		})
	}
}

// contractGroupOrder: whatever the receives return, a group's messages come
// in the order sent, each once.
func contractGroupOrder(t *testing.T, c sqsContract) {
	q := c.newQueue(t, contractVisibility)
	for _, m := range [][2]string{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"a3", "a"}, {"b2", "b"}} {
		q.send(t, m[0], m[1])
	}
	var got []string
	for range 10 {
		msgs := q.receive(t, 10, 1)
		if len(msgs) == 0 {
			continue
		}
		handles := make([]string, len(msgs))
		for i, m := range msgs {
			got = append(got, aws.ToString(m.Body))
			handles[i] = aws.ToString(m.ReceiptHandle)
		}
		require.Empty(t, q.delete(t, handles...).Failed)
		if len(got) == 5 {
			break
		}
	}
	var a, b []string
	for _, body := range got {
		if strings.HasPrefix(body, "body-a") {
			a = append(a, body)
		} else {
			b = append(b, body)
		}
	}
	require.Equal(t, []string{"body-a1", "body-a2", "body-a3"}, a)
	require.Equal(t, []string{"body-b1", "body-b2"}, b)
}

// contractGroupLock: while a message of a group is in flight, no receive
// returns another message of that group; the next one comes once the
// message in flight is deleted.
func contractGroupLock(t *testing.T, c sqsContract) {
	q := c.newQueue(t, contractVisibility)
	q.send(t, "a1", "a")
	q.send(t, "a2", "a")
	a1 := one(t, q.receive(t, 1, 1), "body-a1", 1)
	require.Empty(t, contractBodies(q.receive(t, 10, 1)), "a group in flight gave a message")
	require.Empty(t, q.delete(t, aws.ToString(a1.ReceiptHandle)).Failed)
	one(t, q.receive(t, 10, 1), "body-a2", 1)
}

// contractLongPollWakes: a long poll waiting for a locked group returns the
// group's next message as soon as the message in flight is deleted, not at
// the end of its wait.
func contractLongPollWakes(t *testing.T, c sqsContract) {
	q := c.newQueue(t, contractVisibility*10)
	q.send(t, "a1", "a")
	q.send(t, "a2", "a")
	a1 := one(t, q.receive(t, 1, 1), "body-a1", 1)
	const wait = 10 // seconds
	polled := make(chan []sqstypes.Message, 1)
	start := time.Now()
	go func() {
		out, err := q.api.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			out = &sqs.ReceiveMessageOutput{}
		}
		polled <- out.Messages
	}()
	time.Sleep(time.Second) // the poll is waiting
	require.Empty(t, q.delete(t, aws.ToString(a1.ReceiptHandle)).Failed)
	one(t, <-polled, "body-a2", 1)
	require.Less(t, time.Since(start), wait*time.Second/2, "the long poll ran out instead of returning when the group unlocked")
}

// contractVisibilityReturn: a message received and not deleted is hidden
// for the visibility timeout, then received again with a new receipt handle
// and a higher receive count.
func contractVisibilityReturn(t *testing.T, c sqsContract) {
	q := c.newQueue(t, contractVisibility)
	q.send(t, "a1", "a")
	first := one(t, q.receive(t, 10, 1), "body-a1", 1)
	require.Empty(t, contractBodies(q.receive(t, 10, 0)), "a message in flight was received")
	time.Sleep(contractVisibility + c.slack)
	again := one(t, q.receive(t, 10, 1), "body-a1", 2)
	require.NotEqual(t, aws.ToString(first.ReceiptHandle), aws.ToString(again.ReceiptHandle))
	require.Equal(t, aws.ToString(first.MessageId), aws.ToString(again.MessageId))
}

// contractStaleReceipt: a delete with the receipt handle of an earlier
// receive is answered with success but leaves the message (AWS: "the
// request will still succeed, but the message might not be deleted"); the
// latest receipt handle deletes it.
func contractStaleReceipt(t *testing.T, c sqsContract) {
	q := c.newQueue(t, contractVisibility)
	q.send(t, "a1", "a")
	first := one(t, q.receive(t, 10, 1), "body-a1", 1)
	time.Sleep(contractVisibility + c.slack)
	one(t, q.receive(t, 10, 1), "body-a1", 2)

	out := q.delete(t, aws.ToString(first.ReceiptHandle))
	require.Empty(t, out.Failed, "a stale receipt handle fails its entry")
	require.Len(t, out.Successful, 1)

	time.Sleep(contractVisibility + c.slack)
	latest := one(t, q.receive(t, 10, 1), "body-a1", 3) // still there
	require.Empty(t, q.delete(t, aws.ToString(latest.ReceiptHandle)).Failed)
	time.Sleep(contractVisibility + c.slack)
	require.Empty(t, contractBodies(q.receive(t, 10, 1)), "deleted with its latest receipt handle, yet received")
}

// TestSQSContractOnTheFake: the fake keeps the contract the emulator keeps.
func TestSQSContractOnTheFake(t *testing.T) {
	t.Parallel()
	runSQSContract(t, sqsContract{
		run: func(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) },
		newQueue: func(_ *testing.T, visibility time.Duration) contractQueue {
			q := newFakeQueue(visibility)
			return contractQueue{api: q, url: testQueueURL, send: func(_ *testing.T, key, group string) { q.send(key, group) }}
		},
	})
}
