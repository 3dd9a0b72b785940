package localesm

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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
