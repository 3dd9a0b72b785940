package sim

import (
	"cmp"
	"context"
	"crypto/md5" //nolint:gosec // SQS's MD5OfBody
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// DedupWindow is SQS FIFO's deduplication interval: a message sent with
// the deduplication id of one accepted less than this long ago is accepted
// and dropped.
const DedupWindow = 5 * time.Minute

// Fate is where a message of a queue is.
type Fate int

// The fates of a message.
const (
	Queued       Fate = iota // visible, or in flight
	Deleted                  // acknowledged: a consumer deleted it
	DeadLettered             // moved to the dead-letter queue by the redrive policy
)

func (f Fate) String() string {
	switch f {
	case Queued:
		return "queued"
	case Deleted:
		return "deleted"
	case DeadLettered:
		return "dead-lettered"
	}
	return "fate(" + strconv.Itoa(int(f)) + ")"
}

// Msg is a message a queue accepted.
type Msg struct {
	ID, Group, Body, DedupID string
	Seq                      uint64
	Attrs                    map[string]events.SQSMessageAttribute
	SentAt                   time.Time
	Receives                 int
	FirstReceive             time.Time
	InvisibleUntil           time.Time // in flight until then
	Receipt                  string    // the receipt handle of the last receive
	Fate                     Fate
	// Copy is set for a redriven copy: the sequence number of the parked
	// message it stands for.
	Copy     bool
	CopyOf   uint64
	Original uint64 // Seq, or CopyOf for a copy: the message's place in its group
}

// Queue is an SQS FIFO queue with a redrive policy, in simulated time:
//
//   - A send with the deduplication id of a message accepted less than
//     DedupWindow ago is accepted and dropped; otherwise the message gets
//     the next sequence number.
//   - A receive returns, as Lambda's FIFO poller does, up to a batch of
//     messages in sequence order from groups that have no message in
//     flight (the group lock), each group's messages in order and
//     together; a received message is in flight for the visibility
//     timeout and its receive count grows.
//   - A message received MaxReceive times is moved to the dead-letter queue
//     on the next receive that would return it.
//   - A batch's answer deletes the acknowledged messages by their receipt
//     handles (a handle of an earlier receive deletes nothing); a failed or
//     unanswered message stays in flight until its visibility timeout ends
//     (Lambda does not make it visible earlier).
type Queue struct {
	Name       string
	ARN, URL   string
	Visibility time.Duration
	MaxReceive int

	now  func() time.Time
	msgs []*Msg // queued: visible or in flight, in sequence order
	all  []*Msg // every message accepted, in sequence order
	byID map[string]*Msg
	dlq  []*Msg
	// dlqCopies: the sequence numbers of the messages a copy of which
	// was dead-lettered.
	dlqCopies map[uint64]bool
	dedup     map[string]dedupEntry
	seq       uint64
	receipts  int
}

type dedupEntry struct {
	at time.Time
	id string
}

// firstSeq is the first sequence number: SQS's are 20 digits and more.
const firstSeq = 18_000_000_000_000_000_000

// ErrInvalidConfig is wrapped by the error of a constructor of this
// package (NewQueue, Run's world) for a configuration that cannot work;
// the message names the field.
var ErrInvalidConfig = errors.New("sim: invalid configuration")

// QueueConfig configures a Queue. Name, Visibility and MaxReceive are
// required.
type QueueConfig struct {
	// Name is the queue's, a FIFO queue's: it ends in ".fifo".
	Name string
	// Visibility is the queue's visibility timeout, positive.
	Visibility time.Duration
	// MaxReceive is the redrive policy's maxReceiveCount, at least 1.
	MaxReceive int
	// Now is the queue's clock (nil: time.Now); the world gives it its
	// simulated clock's.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c QueueConfig) Validate() error {
	switch base, fifo := strings.CutSuffix(c.Name, ".fifo"); {
	case !fifo || base == "":
		return fmt.Errorf("%w: Name %q is not a FIFO queue's", ErrInvalidConfig, c.Name)
	case c.Visibility <= 0:
		return fmt.Errorf("%w: Visibility %v is not positive", ErrInvalidConfig, c.Visibility)
	case c.MaxReceive < 1:
		return fmt.Errorf("%w: MaxReceive %d is below 1", ErrInvalidConfig, c.MaxReceive)
	}
	return nil
}

// NewQueue returns an empty queue, or an error wrapping ErrInvalidConfig.
func NewQueue(cfg QueueConfig) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	name := cfg.Name
	return &Queue{
		Name: name, ARN: "arn:aws:sqs:eu-west-1:123456789012:" + name, URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/" + name,
		Visibility: cfg.Visibility, MaxReceive: cfg.MaxReceive, now: cfg.Now,
		byID: map[string]*Msg{}, dedup: map[string]dedupEntry{}, seq: firstSeq, dlqCopies: map[uint64]bool{},
	}, nil
}

// Send offers a message. It returns the message id, and whether the queue
// took it as a new message (false: a duplicate within the window).
func (q *Queue) Send(group, body, dedupID string, attrs map[string]events.SQSMessageAttribute) (string, bool) {
	now := q.now()
	if e, ok := q.dedup[dedupID]; ok && now.Sub(e.at) < DedupWindow {
		return e.id, false
	}
	q.seq++
	m := &Msg{
		ID: q.Name[:1] + strconv.Itoa(len(q.all)+1), Group: group, Body: body, DedupID: dedupID,
		Seq: q.seq, Original: q.seq, Attrs: attrs, SentAt: now,
	}
	if c, ok := quarantine.ParseCopy(&events.SQSMessage{Attributes: map[string]string{"MessageDeduplicationId": dedupID}}); ok {
		if n, err := strconv.ParseUint(quarantine.SeqNumber(c.Sequence), 10, 64); err == nil {
			m.Copy, m.CopyOf, m.Original = true, n, n
			// A copy parked as an ordinary message (one that matched no
			// parked message) stands for what it was a copy of.
			if i, ok := slices.BinarySearchFunc(q.all, n, func(x *Msg, n uint64) int { return cmp.Compare(x.Seq, n) }); ok {
				m.Original = q.all[i].Original
			}
		}
	}
	q.dedup[dedupID] = dedupEntry{at: now, id: m.ID}
	q.msgs = append(q.msgs, m)
	q.all = append(q.all, m)
	q.byID[m.ID] = m
	return m.ID, true
}

// SendMessage is the redrive's sender (quarantine.Sender).
func (q *Queue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var attrs map[string]events.SQSMessageAttribute
	if len(in.MessageAttributes) > 0 {
		attrs = map[string]events.SQSMessageAttribute{}
		for k, v := range in.MessageAttributes {
			attrs[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	id, _ := q.Send(aws.ToString(in.MessageGroupId), aws.ToString(in.MessageBody), aws.ToString(in.MessageDeduplicationId), attrs)
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

var _ quarantine.Sender = (*Queue)(nil)

// inFlight reports whether m is received and not yet visible again.
func (m *Msg) inFlight(now time.Time) bool { return m.Receives > 0 && now.Before(m.InvisibleUntil) }

// Receive returns a batch of at most max messages as Lambda's poller gets
// them. rng decides which groups the batch leaves out, as SQS does not
// promise every group in every batch.
func (q *Queue) Receive(rng *rand.Rand, max int) []events.SQSMessage {
	now := q.now()
	locked := map[string]bool{}
	for _, m := range q.msgs {
		if m.inFlight(now) {
			locked[m.Group] = true
		}
	}
	var out []events.SQSMessage
	skipped := map[string]bool{}
	taken := map[string]bool{}
	for i := 0; i < len(q.msgs) && len(out) < max; i++ {
		m := q.msgs[i]
		if locked[m.Group] || skipped[m.Group] {
			continue
		}
		if !taken[m.Group] && rng.IntN(5) == 0 {
			skipped[m.Group] = true
			continue
		}
		if m.Receives >= q.MaxReceive {
			m.Fate = DeadLettered
			q.dlq = append(q.dlq, m)
			if m.Copy {
				q.dlqCopies[m.Original] = true
			}
			q.msgs = slices.Delete(q.msgs, i, i+1)
			i--
			continue
		}
		m.Receives++
		if m.Receives == 1 {
			m.FirstReceive = now
		}
		m.InvisibleUntil = now.Add(q.Visibility)
		q.receipts++
		m.Receipt = "rh-" + m.ID + "-" + strconv.Itoa(q.receipts)
		taken[m.Group] = true
		out = append(out, q.event(m))
	}
	return out
}

func (q *Queue) event(m *Msg) events.SQSMessage {
	sum := md5.Sum([]byte(m.Body)) //nolint:gosec // SQS's MD5OfBody
	return events.SQSMessage{
		MessageId:     m.ID,
		ReceiptHandle: m.Receipt,
		Body:          m.Body,
		Md5OfBody:     hex.EncodeToString(sum[:]),
		Attributes: map[string]string{
			"MessageGroupId":                   m.Group,
			"MessageDeduplicationId":           m.DedupID,
			"SequenceNumber":                   strconv.FormatUint(m.Seq, 10),
			"ApproximateReceiveCount":          strconv.Itoa(m.Receives),
			"SentTimestamp":                    strconv.FormatInt(m.SentAt.UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.FirstReceive.UnixMilli(), 10),
			"SenderId":                         "AROAEXAMPLE:sim",
		},
		MessageAttributes: m.Attrs,
		EventSource:       "aws:sqs",
		EventSourceARN:    q.ARN,
		AWSRegion:         "eu-west-1",
	}
}

// Settle applies a batch's answer: with answered, every message not in
// failed whose receipt handle is still current is deleted. Without an
// answer (a crash, a timeout) nothing is.
func (q *Queue) Settle(batch []events.SQSMessage, failed map[string]bool, answered bool) {
	if !answered {
		return
	}
	for _, rec := range batch {
		m := q.byID[rec.MessageId]
		if m == nil || failed[rec.MessageId] || m.Fate != Queued || m.Receipt != rec.ReceiptHandle {
			continue
		}
		m.Fate = Deleted
		q.msgs = slices.DeleteFunc(q.msgs, func(x *Msg) bool { return x == m })
	}
}

// Len is how many messages are queued, visible or in flight.
func (q *Queue) Len() int { return len(q.msgs) }

// Receivable is how many queued messages a receive could return now: not
// in flight, of a group with nothing in flight.
func (q *Queue) Receivable() int {
	now, n := q.now(), 0
	locked := map[string]bool{}
	for _, m := range q.msgs {
		if m.inFlight(now) {
			locked[m.Group] = true
		}
	}
	for _, m := range q.msgs {
		if !locked[m.Group] {
			n++
		}
	}
	return n
}

// NextVisible is when the first message in flight becomes visible again.
func (q *Queue) NextVisible() (time.Time, bool) {
	now := q.now()
	var next time.Time
	for _, m := range q.msgs {
		if m.inFlight(now) && (next.IsZero() || m.InvisibleUntil.Before(next)) {
			next = m.InvisibleUntil
		}
	}
	return next, !next.IsZero()
}

// All returns every message the queue accepted, in sequence order.
func (q *Queue) All() []*Msg { return q.all }

// DeadLetteredCopies counts the messages a redriven copy of which was
// dead-lettered.
func (q *Queue) DeadLetteredCopies() int { return len(q.dlqCopies) }

// DLQ returns the dead-lettered messages, in the order they were moved.
func (q *Queue) DLQ() []*Msg { return q.dlq }

// ByID returns the message with the id, or nil.
func (q *Queue) ByID(id string) *Msg { return q.byID[id] }
