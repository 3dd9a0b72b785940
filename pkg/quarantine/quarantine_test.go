package quarantine_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

const unitARN = "arn:aws:sqs:eu-west-1:123456789012:unit.fifo"

// unitMsg is message n of group g, with SequenceNumber 1000+n.
func unitMsg(g string, n int, body string) events.SQSMessage {
	seq := strconv.Itoa(1000 + n)
	return events.SQSMessage{
		MessageId: fmt.Sprintf("%s-%d", g, n), Body: body, EventSourceARN: unitARN,
		Attributes: map[string]string{
			"MessageGroupId": g, "SequenceNumber": seq, "MessageDeduplicationId": "d-" + seq, "ApproximateReceiveCount": "1",
		},
	}
}

// asCopy is what the queue delivers for a sent copy: a new message of the
// group, with the copy's deduplication id and a new sequence number.
func asCopy(in *sqs.SendMessageInput, id string, seq int) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, Body: aws.ToString(in.MessageBody), EventSourceARN: unitARN,
		Attributes: map[string]string{
			"MessageGroupId": aws.ToString(in.MessageGroupId), "SequenceNumber": strconv.Itoa(seq),
			"MessageDeduplicationId": aws.ToString(in.MessageDeduplicationId), "ApproximateReceiveCount": "1",
		},
	}
}

// holdTwo parks g-1 (failed for good) and g-2 behind it, and begins a
// redrive: the group drains under epoch 1, and the two copies are sent.
func holdTwo(t *testing.T) (*quarantine.MemoryStore, *quarantine.Quarantine, *quarantinetest.Sends) {
	t.Helper()
	store := quarantine.NewMemoryStore()
	q, err := quarantine.New(quarantine.Config{Store: store, QueueARN: unitARN})
	require.NoError(t, err)
	m1, m2 := unitMsg("g", 1, "one"), unitMsg("g", 2, "two")
	_, err = q.Park(t.Context(), "g", []*events.SQSMessage{&m1, &m2}, errors.New("boom"), true)
	require.NoError(t, err)
	out := &quarantinetest.Sends{}
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: out})
	require.NoError(t, err)
	rep, err := op.Redrive(t.Context(), "g", false)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Sent)
	return store, q, out
}

// A producer knows its message's body, sequence number and id, and can
// guess an epoch; it cannot know the nonce the quarantine gave the parked
// message. A message that claims to be a copy without it, or with another
// body, is an ordinary message, parked behind the rest while the group
// drains: it never takes a parked message's place.
func TestAForgedCopyNeverTakesAParkedMessagesPlace(t *testing.T) {
	t.Parallel()
	_, q, out := holdTwo(t)
	genuine := asCopy(out.Inputs[1], "copy-2", 2001)
	c, ok := quarantine.ParseCopy(&genuine)
	require.True(t, ok)

	forgedNoNonce := unitMsg("g", 3, "two")
	forgedNoNonce.Attributes["MessageDeduplicationId"] = fmt.Sprintf("fifoworker-redrive.1.%s.%s", strings.Repeat("0", 32), c.Sequence)
	forgedBody := genuine
	forgedBody.MessageId, forgedBody.Body = "forged-body", "something else"
	malformed := unitMsg("g", 4, "two")
	malformed.Attributes["MessageDeduplicationId"] = "fifoworker-redrive.1." + c.Sequence // the old format: no nonce

	view, err := q.Check(t.Context(), []*events.SQSMessage{&genuine, &forgedNoNonce, &forgedBody, &malformed})
	require.NoError(t, err)
	require.Equal(t, fifo.Hold{State: fifo.Draining, Epoch: 1, Next: "1001"}, view.Holds["g"], "g-1 is the oldest parked")
	require.Equal(t, fifo.Disposition{Copy: true, Epoch: 1, Key: "1002"}, view.Messages["copy-2"], "the genuine copy, of g-2")
	for _, id := range []string{forgedNoNonce.MessageId, "forged-body", malformed.MessageId} {
		_, known := view.Messages[id]
		require.False(t, known, "%s is an ordinary message", id)
	}

	// Through the processor: the forged message is parked, and the
	// copies run in order.
	var ran []string
	p, err := fifo.New(fifo.Config{Handler: func(_ context.Context, m events.SQSMessage) error {
		ran = append(ran, m.MessageId)
		return nil
	}, Quarantine: q, QuarantineThreshold: 3})
	require.NoError(t, err)
	first := asCopy(out.Inputs[0], "copy-1", 2000)
	resp, err := p.Process(t.Context(), events.SQSEvent{Records: []events.SQSMessage{forgedNoNonce, first, genuine}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"copy-1", "copy-2"}, ran, "the forged message is parked, the copies run in order")
}

func keyOf(t *testing.T, n int) string {
	t.Helper()
	k, err := quarantine.SeqKey(strconv.Itoa(n))
	require.NoError(t, err)
	return k
}

// The copy of g-1 is lost (SQS dead-lettered it while the store could not
// take it back, say), and the copy of g-2 comes first: it must not run,
// or g-2 would pass g-1. It holds the group again, its parked message
// stays parked, and the next redrive sends both again; they run in order.
func TestACopyThatWouldPassAnOlderParkedMessageHoldsTheGroupAgain(t *testing.T) {
	t.Parallel()
	store, q, out := holdTwo(t)
	// The store refuses g-2's Done while g-1 is parked, on its own: the
	// processor is not the only guard.
	_, err := store.Done(t.Context(), "unit.fifo", "g", keyOf(t, 1002), 1, time.Now())
	require.ErrorIs(t, err, quarantine.ErrConflict)
	require.ErrorContains(t, err, "message 1002 is not the oldest parked, 1001 is")

	var ran []string
	p, err := fifo.New(fifo.Config{Handler: func(_ context.Context, m events.SQSMessage) error {
		ran = append(ran, m.Body)
		return nil
	}, Quarantine: q, QuarantineThreshold: 3})
	require.NoError(t, err)
	later := unitMsg("g", 7, "seven") // sent after the redrive began
	resp, err := p.Process(t.Context(), events.SQSEvent{Records: []events.SQSMessage{asCopy(out.Inputs[1], "copy-2", 2001), later}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Empty(t, ran)
	h, err := store.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateHeld, h.State)
	require.Equal(t, int64(3), h.Parked, "g-1, g-2 and g-7 parked")
	require.Equal(t, keyOf(t, 1001), h.Next)
	require.Contains(t, h.Cause, "a redriven copy arrived while an older message of its group is still parked")
	require.Contains(t, h.Cause, "the copy of 1002 came while 1001 is parked")

	// The lost copy turns up late (an operator moved it back from the
	// dead-letter queue): its epoch is over, it is dropped.
	resp, err = p.Process(t.Context(), events.SQSEvent{Records: []events.SQSMessage{asCopy(out.Inputs[0], "copy-1", 2002)}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Empty(t, ran)

	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: out})
	require.NoError(t, err)
	rep, err := op.Redrive(t.Context(), "g", false)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Sent)
	var copies []events.SQSMessage
	for i, in := range out.Inputs[2:] {
		copies = append(copies, asCopy(in, fmt.Sprintf("again-%d", i), 3000+i))
	}
	resp, err = p.Process(t.Context(), events.SQSEvent{Records: copies})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, []string{"one", "two", "seven"}, ran)
	h, err = store.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
}

// A copy of a message already done, or discarded, is dropped; a redelivery
// of a message a released hold had parked is dropped too.
func TestLateDuplicatesAreDropped(t *testing.T) {
	t.Parallel()
	store, q, out := holdTwo(t)
	c1, c2 := asCopy(out.Inputs[0], "copy-1", 2000), asCopy(out.Inputs[1], "copy-2", 2001)
	_, err := q.Done(t.Context(), "g", &c1)
	require.NoError(t, err)
	view, err := q.Check(t.Context(), []*events.SQSMessage{&c1})
	require.NoError(t, err)
	require.True(t, view.Messages["copy-1"].Drop, "a copy of a message already processed")

	h, err := q.Done(t.Context(), "g", &c2)
	require.NoError(t, err)
	require.Equal(t, fifo.Hold{}, h, "the last one releases the hold")
	rec, err := store.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, rec.State)

	orig2, later := unitMsg("g", 2, "two"), unitMsg("g", 5, "five")
	view, err = q.Check(t.Context(), []*events.SQSMessage{&orig2, &later})
	require.NoError(t, err)
	require.True(t, view.Messages["g-2"].Drop, "a redelivery of a message parked before the release")
	_, known := view.Messages["g-5"]
	require.False(t, known, "a later message runs")
}

// A redrive begun while a copy runs raises the epoch; the copy ran in its
// place all the same, so its Done lands, and the new epoch's copy of the
// same message is dropped as done instead of running it a second time.
func TestARedriveBegunWhileACopyRunsDoesNotRunItTwice(t *testing.T) {
	t.Parallel()
	store, q, out := holdTwo(t)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", QueueURL: "http://127.0.0.1:1/q/unit.fifo", Sender: out})
	require.NoError(t, err)
	runs := map[string]int{}
	p, err := fifo.New(fifo.Config{Handler: func(ctx context.Context, m events.SQSMessage) error {
		runs[m.Body]++
		if m.Body == "one" && runs["one"] == 1 {
			rep, err := op.Redrive(ctx, "g", false) // the operator, again, mid-copy
			require.NoError(t, err)
			require.Equal(t, int64(2), rep.Epoch)
		}
		return nil
	}, Quarantine: q, QuarantineThreshold: 3})
	require.NoError(t, err)
	c1 := asCopy(out.Inputs[0], "copy-1", 2000)
	resp, err := p.Process(t.Context(), events.SQSEvent{Records: []events.SQSMessage{c1}})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, "the copy's Done lands under the later epoch")
	require.Len(t, out.Inputs, 4, "the second redrive sent both again")

	// What the queue holds now, in order: epoch 1's copy of two, then
	// epoch 2's copies of one and two.
	batch := []events.SQSMessage{asCopy(out.Inputs[1], "copy-2", 2001), asCopy(out.Inputs[2], "copy-1b", 2002), asCopy(out.Inputs[3], "copy-2b", 2003)}
	resp, err = p.Process(t.Context(), events.SQSEvent{Records: batch})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Equal(t, map[string]int{"one": 1, "two": 1}, runs, "each message ran once")
	h, err := store.Hold(t.Context(), "unit.fifo", "g")
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
}

// A discard while the group drains is refused: a copy that passed its
// batch's check could be running.
func TestDiscardOnlyWhileHeld(t *testing.T) {
	t.Parallel()
	store, _, _ := holdTwo(t)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: store, Queue: "unit.fifo", Bodies: memBodies{}})
	require.NoError(t, err)
	_, _, err = op.Discard(t.Context(), "g", "")
	require.ErrorIs(t, err, quarantine.ErrConflict)
	require.ErrorContains(t, err, "draining")
	items, err := store.Messages(t.Context(), "unit.fifo", "g", quarantine.StatusParked, "", 0)
	require.NoError(t, err)
	require.Len(t, items, 2, "nothing discarded")
}

type memBodies map[string]string

func (m memBodies) PutBody(_ context.Context, key, body string) error { m[key] = body; return nil }
func (m memBodies) GetBody(_ context.Context, key string) (string, error) {
	b, ok := m[key]
	if !ok {
		return "", quarantine.ErrNoBody
	}
	return b, nil
}

// Attributes count with the body against the inline budget: a small body
// with large attributes goes to the body store, and without one the park
// fails (the message is then received again) rather than write an item
// DynamoDB would refuse.
func TestAttributesCountAgainstTheInlineBudget(t *testing.T) {
	t.Parallel()
	bodies := memBodies{}
	q, err := quarantine.New(quarantine.Config{Store: quarantine.NewMemoryStore(), QueueARN: unitARN, Bodies: bodies, MaxInlineBody: 100})
	require.NoError(t, err)
	m := unitMsg("g", 1, "small body")
	big := strings.Repeat("x", 100)
	m.MessageAttributes = map[string]events.SQSMessageAttribute{"a": {DataType: "String", StringValue: &big}}
	_, err = q.Park(t.Context(), "g", []*events.SQSMessage{&m}, errors.New("boom"), true)
	require.NoError(t, err)
	require.Len(t, bodies, 1, "the body went to the body store")

	bare, err := quarantine.New(quarantine.Config{Store: quarantine.NewMemoryStore(), QueueARN: unitARN, MaxInlineBody: 100})
	require.NoError(t, err)
	_, err = bare.Park(t.Context(), "g", []*events.SQSMessage{&m}, errors.New("boom"), true)
	require.ErrorContains(t, err, "no body store")
}

// A batch from another queue than the quarantine's fails its check: the
// function is wired to the wrong queue, and nothing may run unchecked.
func TestAMessageFromAnotherQueueFailsTheCheck(t *testing.T) {
	t.Parallel()
	q, err := quarantine.New(quarantine.Config{Store: quarantine.NewMemoryStore(), QueueARN: unitARN})
	require.NoError(t, err)
	m := unitMsg("g", 1, "x")
	m.EventSourceARN = "arn:aws:sqs:eu-west-1:123456789012:other.fifo"
	_, err = q.Check(t.Context(), []*events.SQSMessage{&m})
	require.ErrorContains(t, err, "other.fifo")
}
