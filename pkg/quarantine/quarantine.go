package quarantine

import (
	"cmp"
	"context"
	"crypto/md5" //nolint:gosec // MD5 is what SQS uses for MD5OfBody; it identifies, it does not protect
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// Quarantine is the fifo.Quarantine of one queue, on a Store. Give it to
// that queue's processor as fifo.Config's Quarantine.
type Quarantine struct {
	store     Store
	queueARN  string
	queue     string
	bodies    BodyStore
	maxInline int
	now       func() time.Time
}

var _ fifo.Quarantine = (*Quarantine)(nil)

// DefaultMaxInlineBody is the largest body kept in the store's item; a
// larger one is kept in the BodyStore. DynamoDB's items hold 400 KB, and a
// lane of ten parked messages is one transaction of at most 4 MB.
const DefaultMaxInlineBody = 64 << 10

// ErrInvalidConfig is wrapped by the error a constructor returns for a
// configuration that cannot work; the message names the field.
var ErrInvalidConfig = errors.New("quarantine: invalid configuration")

// Config configures a Quarantine.
type Config struct {
	// Store keeps the holds and the parked messages. Required.
	Store Store
	// QueueARN is the ARN of the queue the quarantine serves: its messages'
	// EventSourceARN. Required; it must end in the queue's name.
	QueueARN string
	// Bodies keeps the bodies larger than MaxInlineBody. Default (nil):
	// none; parking a larger body then fails, and its message is received
	// again until SQS's dead-letter queue takes it.
	Bodies BodyStore
	// MaxInlineBody is the largest body, in bytes, kept in the store's
	// item. Default (zero): DefaultMaxInlineBody; a negative one is invalid.
	MaxInlineBody int
	// Now is the clock the records' times are read from. Default (nil):
	// time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrInvalidConfig)
	case c.MaxInlineBody < 0:
		return fmt.Errorf("%w: MaxInlineBody %d is negative", ErrInvalidConfig, c.MaxInlineBody)
	}
	if _, err := QueueName(c.QueueARN); err != nil {
		return fmt.Errorf("%w: QueueARN %q names no queue", ErrInvalidConfig, c.QueueARN)
	}
	return nil
}

// New returns the quarantine of the queue cfg.QueueARN, or an error
// wrapping ErrInvalidConfig.
func New(cfg Config) (*Quarantine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name, _ := QueueName(cfg.QueueARN) // Validate checked it
	q := &Quarantine{store: cfg.Store, queueARN: cfg.QueueARN, queue: name, bodies: cfg.Bodies,
		maxInline: cmp.Or(cfg.MaxInlineBody, DefaultMaxInlineBody), now: cfg.Now}
	if q.now == nil {
		q.now = time.Now
	}
	return q, nil
}

// QueueName returns the queue name at the end of a queue's ARN or URL.
func QueueName(arnOrURL string) (string, error) {
	i := strings.LastIndexAny(arnOrURL, ":/")
	name := arnOrURL[i+1:]
	if name == "" || i < 0 {
		return "", fmt.Errorf("quarantine: %q is not a queue ARN or URL", arnOrURL)
	}
	return name, nil
}

// Check implements fifo.Quarantine.
func (q *Quarantine) Check(ctx context.Context, msgs []*events.SQSMessage) (fifo.QuarantineView, error) {
	var groups []string
	seen := map[string]bool{}
	copies := map[string]ItemKey{} // by message id
	var keys []ItemKey
	for _, m := range msgs {
		if m.EventSourceARN != q.queueARN {
			return fifo.QuarantineView{}, fmt.Errorf("quarantine: message %s comes from %q, but this quarantine is %q's: check the function's configuration", m.MessageId, m.EventSourceARN, q.queueARN)
		}
		g := group(m)
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
		if c, ok := ParseCopy(m); ok {
			k := ItemKey{Group: g, Sequence: c.Sequence}
			copies[m.MessageId] = k
			keys = append(keys, k)
		}
	}
	holds, items, err := q.store.Read(ctx, q.queue, groups, keys)
	if err != nil {
		return fifo.QuarantineView{}, err
	}
	view := fifo.QuarantineView{Holds: map[string]fifo.Hold{}, Messages: map[string]fifo.Disposition{}}
	for g, h := range holds {
		if fh := fifoHold(h); fh.State != fifo.NotHeld {
			view.Holds[g] = fh
		}
	}
	for _, m := range msgs {
		if d, ok := disposition(m, copies, items, holds); ok {
			view.Messages[m.MessageId] = d
		}
	}
	return view, nil
}

// disposition says what to do with m, if it is a genuine copy of a parked
// message or a redelivery of a message a released hold parked; ok is
// false for an ordinary message. A message that claims to be a copy but
// matches no parked message (another nonce or body, or nothing parked
// there) is an ordinary message: it is parked or run, by its own sequence
// number, and never takes a parked message's place.
func disposition(m *events.SQSMessage, copies map[string]ItemKey, items map[ItemKey]Parked, holds map[string]HoldRecord) (fifo.Disposition, bool) {
	if k, isCopy := copies[m.MessageId]; isCopy {
		p, ok := items[k]
		c, _ := ParseCopy(m)
		if ok && p.Nonce != "" && p.Nonce == c.Nonce && p.BodyMD5 == bodyMD5(m.Body) {
			switch p.Status {
			case StatusParked:
				return fifo.Disposition{Copy: true, Epoch: c.Epoch, Key: SeqNumber(c.Sequence)}, true
			case StatusDone:
				return fifo.Disposition{Drop: true, Reason: "a copy of a parked message already processed"}, true
			case StatusDiscarded:
				return fifo.Disposition{Drop: true, Reason: "a copy of a parked message an operator discarded"}, true
			}
		}
	}
	h, ok := holds[group(m)]
	if !ok || h.State != StateReleased {
		return fifo.Disposition{}, false
	}
	seq, err := SeqKey(m.Attributes["SequenceNumber"])
	if err == nil && h.From <= seq && seq <= h.Through {
		return fifo.Disposition{Drop: true, Reason: "a redelivery of a message parked before its group's hold was released"}, true
	}
	return fifo.Disposition{}, false
}

// Park implements fifo.Quarantine.
func (q *Quarantine) Park(ctx context.Context, group string, msgs []*events.SQSMessage, cause error, hold bool) (fifo.Hold, error) {
	why := "parked while the group was held"
	if cause != nil {
		why = clip(cause.Error(), maxCause)
	}
	items := make([]Parked, 0, len(msgs))
	for i, m := range msgs {
		p, err := q.parked(ctx, group, m)
		if err != nil {
			return fifo.Hold{}, err
		}
		p.Cause = why
		if i > 0 && hold {
			p.Cause = "an earlier message of its group was parked"
		}
		items = append(items, p)
	}
	h, err := q.store.Park(ctx, q.queue, group, items, hold, why, q.now())
	if err != nil {
		return fifo.Hold{}, err
	}
	return fifoHold(h), nil
}

// Done implements fifo.Quarantine.
func (q *Quarantine) Done(ctx context.Context, group string, msg *events.SQSMessage) (fifo.Hold, error) {
	c, ok := ParseCopy(msg)
	if !ok {
		return fifo.Hold{}, fmt.Errorf("quarantine: done: message %s is not a redriven copy", msg.MessageId)
	}
	h, err := q.store.Done(ctx, q.queue, group, c.Sequence, c.Epoch, q.now())
	if err != nil {
		return fifo.Hold{}, err
	}
	return fifoHold(h), nil
}

func fifoHold(h HoldRecord) fifo.Hold {
	switch h.State {
	case StateHeld:
		return fifo.Hold{State: fifo.Held, Epoch: h.Epoch, Next: SeqNumber(h.Next)}
	case StateDraining:
		return fifo.Hold{State: fifo.Draining, Epoch: h.Epoch, Next: SeqNumber(h.Next)}
	}
	return fifo.Hold{}
}

const maxCause = 1024 // bytes of a cause kept on a hold or a parked message

// parked is message m as a parked item, its body put in the BodyStore when
// it is too large for the item.
func (q *Quarantine) parked(ctx context.Context, group string, m *events.SQSMessage) (Parked, error) {
	seq, err := SeqKey(m.Attributes["SequenceNumber"])
	if err != nil {
		return Parked{}, fmt.Errorf("quarantine: message %s: %w", m.MessageId, err)
	}
	nonce, err := newNonce()
	if err != nil {
		return Parked{}, err
	}
	p := Parked{
		Queue: q.queue, Group: group, Sequence: seq, MessageID: m.MessageId, Nonce: nonce,
		Body: m.Body, BodyMD5: bodyMD5(m.Body), BodySize: int64(len(m.Body)),
		DeduplicationID: m.Attributes["MessageDeduplicationId"],
		ReceiveCount:    atoi(m.Attributes["ApproximateReceiveCount"]),
		Attributes:      attributes(m.MessageAttributes),
	}
	// Message attributes count toward SQS's message size as the body does,
	// and they stay in the item: the body leaves it when both together
	// are over the inline budget. (template.yaml caps both queues'
	// messages at 256 KiB, so an item stays well under DynamoDB's 400 KB
	// and a lane of ten under a transaction's 4 MB.)
	if size := len(m.Body) + attributesSize(p.Attributes); size > q.maxInline {
		if q.bodies == nil {
			return Parked{}, fmt.Errorf("quarantine: message %s: its body and attributes of %d bytes are more than %d and no body store is configured", m.MessageId, size, q.maxInline)
		}
		p.BodyKey = BodyKey(q.queue, group, seq)
		if err := q.bodies.PutBody(ctx, p.BodyKey, m.Body); err != nil {
			return Parked{}, fmt.Errorf("quarantine: message %s: keep its body: %w", m.MessageId, err)
		}
		p.Body = ""
	}
	return p, nil
}

// BodyKey is where a parked body too large for its item is kept.
func BodyKey(queue, group, seq string) string {
	return "quarantine/" + url.PathEscape(queue) + "/" + url.PathEscape(group) + "/" + seq + ".body"
}

func attributes(in map[string]events.SQSMessageAttribute) map[string]MessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]MessageAttribute, len(in))
	for name, a := range in {
		v := MessageAttribute{DataType: a.DataType, BinaryValue: a.BinaryValue}
		if a.StringValue != nil {
			v.StringValue = *a.StringValue
		}
		out[name] = v
	}
	return out
}

// attributesSize is what SQS counts of a message's attributes: each name,
// type and value.
func attributesSize(attrs map[string]MessageAttribute) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

func group(m *events.SQSMessage) string { return m.Attributes["MessageGroupId"] }

func bodyMD5(body string) string {
	sum := md5.Sum([]byte(body)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Copy is the identity a redriven copy carries: the epoch of the redrive
// that sent it, its parked message's nonce (the secret that proves the
// copy was made from it) and its sequence key.
type Copy struct {
	Epoch    int64
	Nonce    string
	Sequence string
}

const nonceLen = 32 // hex digits: 128 random bits

func newNonce() (string, error) {
	var b [nonceLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("quarantine: a nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// copyPrefix starts the MessageDeduplicationId of a redriven copy. The
// identity travels in the deduplication id, which every FIFO message has
// and Lambda's event carries, rather than in message attributes, of which
// a message may already use all ten SQS allows. It also makes SQS drop a
// second send of the same copy within its five-minute window.
const copyPrefix = "fifoworker-redrive."

// DeduplicationID is the MessageDeduplicationId of copy c: at most 19 +
// 19 + 1 + 32 + 1 + 40 = 112 characters, within SQS's 128.
func (c Copy) DeduplicationID() string {
	return copyPrefix + strconv.FormatInt(c.Epoch, 10) + "." + c.Nonce + "." + c.Sequence
}

// ParseCopy reads a redriven copy's identity from m's deduplication id.
// Check still verifies it against the parked message before trusting it.
func ParseCopy(m *events.SQSMessage) (Copy, bool) {
	rest, ok := strings.CutPrefix(m.Attributes["MessageDeduplicationId"], copyPrefix)
	if !ok {
		return Copy{}, false
	}
	return parseCopy(rest)
}

// parseCopy reads a copy's identity, "<epoch>.<nonce>.<sequence key>".
func parseCopy(rest string) (Copy, bool) {
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return Copy{}, false
	}
	n, err := strconv.ParseInt(parts[0], 10, 64)
	nonce, seq := parts[1], parts[2]
	if err != nil || n < 1 || len(nonce) != nonceLen || len(seq) != seqWidth {
		return Copy{}, false
	}
	if _, err := hex.DecodeString(nonce); err != nil || strings.ToLower(nonce) != nonce {
		return Copy{}, false
	}
	if _, err := SeqKey(seq); err != nil {
		return Copy{}, false
	}
	return Copy{Epoch: n, Nonce: nonce, Sequence: seq}, true
}

// BodyStore keeps bodies too large for a parked item (S3Bodies on S3).
type BodyStore interface {
	PutBody(ctx context.Context, key, body string) error
	GetBody(ctx context.Context, key string) (string, error)
}

// ErrNoBody reports that the BodyStore has no body under the key.
var ErrNoBody = errors.New("quarantine: no body under that key")
