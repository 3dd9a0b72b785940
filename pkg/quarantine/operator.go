package quarantine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
)

// Sender is the SQS call a redrive makes.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ Sender = (*sqs.Client)(nil)

// DefaultPoll is how often a waiting redrive reads its hold by default.
const DefaultPoll = 500 * time.Millisecond

// OperatorConfig configures an Operator.
type OperatorConfig struct {
	// Store keeps the queue's holds. Required.
	Store Store
	// Queue is the queue's name. Required.
	Queue string
	// QueueURL is where Sender sends redriven copies. Default (empty, with
	// a nil Sender): the operator lists, shows and discards, and refuses to
	// redrive. Set both or neither.
	QueueURL string
	// Sender sends redriven copies to QueueURL. Default (nil, with an
	// empty QueueURL): no redrive. Set both or neither.
	Sender Sender
	// Records produces the redriven copies of a Kafka topic's parked
	// records (Queue is then the topic's name). Default (nil): a Kafka
	// redrive is refused. It excludes Sender and QueueURL.
	Records RecordSender
	// Bodies holds the bodies parked out of their items, and receives the
	// archive of what Discard drops. Default (nil): Discard, and a redrive
	// of a body parked out of its item, fail.
	Bodies BodyStore
	// Poll is how often a waiting redrive reads its hold. Default (zero):
	// DefaultPoll; a negative one is invalid.
	Poll time.Duration
	// Progress, if set, is told of each copy sent. Default (nil): no one.
	Progress func(RedriveProgress)
	// Now is the clock of the records' times. Default (nil): time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c OperatorConfig) Validate() error {
	switch {
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrInvalidConfig)
	case c.Queue == "":
		return fmt.Errorf("%w: Queue is empty", ErrInvalidConfig)
	case c.Sender != nil && c.QueueURL == "":
		return fmt.Errorf("%w: QueueURL is empty, and Sender is set", ErrInvalidConfig)
	case c.Sender == nil && c.QueueURL != "":
		return fmt.Errorf("%w: Sender is nil, and QueueURL is set", ErrInvalidConfig)
	case c.Records != nil && c.Sender != nil:
		return fmt.Errorf("%w: Records and Sender are both set: a quarantine is a queue's or a topic's", ErrInvalidConfig)
	case c.Poll < 0:
		return fmt.Errorf("%w: Poll %v is negative", ErrInvalidConfig, c.Poll)
	}
	return nil
}

// Operator is what an operator does with a queue's quarantine: list and
// show holds, redrive a group, discard parked messages.
type Operator struct {
	cfg OperatorConfig
}

// NewOperator returns the operator of cfg.Queue's quarantine, or an error
// wrapping ErrInvalidConfig.
func NewOperator(cfg OperatorConfig) (*Operator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Poll = cmp.Or(cfg.Poll, DefaultPoll)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Operator{cfg: cfg}, nil
}

// RedriveProgress is one copy a redrive sent.
type RedriveProgress struct {
	Group    string
	Epoch    int64
	Sequence string
	Sent     int   // copies sent so far
	Parked   int64 // messages still parked, as last read
}

// RedriveReport is what a redrive did.
type RedriveReport struct {
	Group string
	Epoch int64
	Sent  int
	// State is the hold's state when the redrive ended: released (every
	// parked message processed), held (a copy failed again: Cause says
	// why), or draining (it stopped waiting, or another redrive took over).
	State  State
	Cause  string
	Parked int64
	// TakenOverBy is the epoch of the redrive that took over from this
	// one (an operator began another meanwhile), 0 if none did.
	TakenOverBy int64
}

// Redrive begins a new epoch on group's hold and sends its parked messages
// back to the queue, oldest first, one at a time (each send waits for the
// previous one, so SQS keeps them in this order), including those parked
// while it runs. With wait, it goes on until the hold is released or held
// again, or ctx ends; without, it returns once what was parked is sent.
// Interrupted, it can be run again: the new epoch makes the copies still in
// flight be dropped on arrival, and every message still parked is sent
// again.
func (o *Operator) Redrive(ctx context.Context, group string, wait bool) (RedriveReport, error) {
	if o.cfg.Sender == nil && o.cfg.Records == nil {
		// Before the new epoch: an operator that cannot send changes nothing.
		return RedriveReport{Group: group}, errors.New("quarantine: redrive needs a Sender and a QueueURL, or Records for a Kafka topic")
	}
	h, err := o.cfg.Store.BeginRedrive(ctx, o.cfg.Queue, group, o.cfg.Now())
	if err != nil {
		return RedriveReport{Group: group}, o.wrap(group, err)
	}
	rep := RedriveReport{Group: group, Epoch: h.Epoch, State: h.State, Parked: h.Parked}
	last := ""
	poll := o.cfg.Poll
	for h.State == StateDraining {
		items, err := o.cfg.Store.Messages(ctx, o.cfg.Queue, group, StatusParked, last, 100)
		if err != nil {
			return rep, err
		}
		for _, p := range items {
			if err := o.send(ctx, h.Epoch, p); err != nil {
				return rep, err
			}
			rep.Sent++
			last = p.Sequence
			if o.cfg.Progress != nil {
				o.cfg.Progress(RedriveProgress{Group: group, Epoch: h.Epoch, Sequence: SeqNumber(p.Sequence), Sent: rep.Sent, Parked: h.Parked})
			}
		}
		now, err := o.cfg.Store.Hold(ctx, o.cfg.Queue, group)
		if err != nil {
			return rep, err
		}
		rep.State, rep.Parked, rep.Cause = now.State, now.Parked, now.Cause
		if now.Epoch != h.Epoch {
			rep.Cause, rep.TakenOverBy = fmt.Sprintf("another redrive (epoch %d) took over", now.Epoch), now.Epoch
			return rep, nil
		}
		h = now
		if len(items) > 0 {
			continue
		}
		if !wait {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(poll):
		}
	}
	if rep.State == StateReleased {
		rep.Cause = ""
	}
	return rep, nil
}

// send sends the copy of p under epoch, retrying a failed send before
// anything else is sent: a later copy must not overtake it. A retry carries
// the same deduplication id, so a send whose answer was lost is not
// repeated within SQS's five-minute window; on Kafka such a copy may be
// written twice, and the second is dropped as done (or as not its epoch's).
func (o *Operator) send(ctx context.Context, epoch int64, p Parked) error {
	if p.Kafka != nil {
		return o.sendRecord(ctx, epoch, p)
	}
	if o.cfg.Sender == nil {
		return fmt.Errorf("quarantine: message %s is an SQS message, and the operator sends Kafka records", SeqNumber(p.Sequence))
	}
	body := p.Body
	if p.BodyKey != "" {
		if o.cfg.Bodies == nil {
			return fmt.Errorf("quarantine: message %s's body is in %s, and no body store is configured", SeqNumber(p.Sequence), p.BodyKey)
		}
		b, err := o.cfg.Bodies.GetBody(ctx, p.BodyKey)
		if err != nil {
			return fmt.Errorf("quarantine: message %s's body: %w", SeqNumber(p.Sequence), err)
		}
		body = b
	}
	in := &sqs.SendMessageInput{
		QueueUrl:               aws.String(o.cfg.QueueURL),
		MessageBody:            aws.String(body),
		MessageGroupId:         aws.String(p.Group),
		MessageDeduplicationId: aws.String(Copy{Epoch: epoch, Nonce: p.Nonce, Sequence: p.Sequence}.DeduplicationID()),
		MessageAttributes:      sqsAttributes(p.Attributes),
	}
	return retrySend(ctx, p, func() error { _, err := o.cfg.Sender.SendMessage(ctx, in); return err })
}

// retrySend calls send, the send of p's copy, until it succeeds, six
// times at most, with a backoff between tries.
func retrySend(ctx context.Context, p Parked, send func() error) error {
	var err error
	for try := range 6 {
		if err = send(); err == nil {
			return nil
		}
		if err := backoff.Sleep(ctx, backoff.Delay(100*time.Millisecond, 5*time.Second, try)); err != nil {
			return err
		}
	}
	return fmt.Errorf("quarantine: redrive %s: send the copy of %s: %w", p.Group, SeqNumber(p.Sequence), err)
}

func sqsAttributes(in map[string]MessageAttribute) map[string]sqstypes.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]sqstypes.MessageAttributeValue, len(in))
	for name, a := range in {
		v := sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}
		if a.StringValue != "" {
			v.StringValue = aws.String(a.StringValue)
		}
		out[name] = v
	}
	return out
}

// Hold returns group's hold, released or not (ErrNoHold when there is no
// record).
func (o *Operator) Hold(ctx context.Context, group string) (HoldRecord, error) {
	h, err := o.cfg.Store.Hold(ctx, o.cfg.Queue, group)
	return h, o.wrap(group, err)
}

// Show returns group's hold and its messages with status (every status
// when empty), up to limit.
func (o *Operator) Show(ctx context.Context, group string, status Status, limit int) (HoldRecord, []Parked, error) {
	h, err := o.cfg.Store.Hold(ctx, o.cfg.Queue, group)
	if err != nil {
		return HoldRecord{}, nil, o.wrap(group, err)
	}
	items, err := o.cfg.Store.Messages(ctx, o.cfg.Queue, group, status, "", limit)
	return h, items, err
}

// List returns the queue's holds that are not released.
func (o *Operator) List(ctx context.Context) ([]HoldRecord, error) {
	return o.cfg.Store.Holds(ctx, o.cfg.Queue)
}

// Discard drops group's parked message seq (a sequence number as SQS
// writes it), or every parked message when seq is empty, after archiving
// each, as JSON with its body, under ArchiveKey. It returns the keys of the
// archives and the hold afterwards: released when nothing is left parked.
//
// Only a held group's messages are discarded. While a group drains, a copy
// that has passed its batch's check may be running: it would run though
// its message was discarded (its record of being done then fails). A held
// group runs nothing, and a copy still in flight is dropped on arrival.
// (Another operator's redrive begun between the check and the discard is
// not caught.)
func (o *Operator) Discard(ctx context.Context, group, seq string) ([]string, HoldRecord, error) {
	if o.cfg.Bodies == nil {
		return nil, HoldRecord{}, errors.New("quarantine: discard needs a body store for its archive")
	}
	switch h, err := o.cfg.Store.Hold(ctx, o.cfg.Queue, group); {
	case err != nil:
		return nil, HoldRecord{}, o.wrap(group, err)
	case h.State == StateDraining:
		return nil, h, fmt.Errorf("quarantine: group %q is draining under epoch %d: a redriven copy may be running; discard once it is held again or released: %w", group, h.Epoch, ErrConflict)
	case h.State == StateReleased:
		return nil, h, o.wrap(group, ErrNoHold)
	}
	var items []Parked
	if seq != "" {
		k, err := SeqKey(seq)
		if err != nil {
			return nil, HoldRecord{}, err
		}
		_, got, err := o.cfg.Store.Read(ctx, o.cfg.Queue, nil, []ItemKey{{Group: group, Sequence: k}})
		if err != nil {
			return nil, HoldRecord{}, err
		}
		p, ok := got[ItemKey{Group: group, Sequence: k}]
		if !ok || p.Status != StatusParked {
			return nil, HoldRecord{}, fmt.Errorf("quarantine: group %q has no parked message %s: %w", group, seq, ErrNotParked)
		}
		items = []Parked{p}
	} else {
		all, err := o.cfg.Store.Messages(ctx, o.cfg.Queue, group, StatusParked, "", 0)
		if err != nil {
			return nil, HoldRecord{}, err
		}
		items = all
	}
	if len(items) == 0 {
		return nil, HoldRecord{}, o.wrap(group, ErrNoHold)
	}
	var keys []string
	var h HoldRecord
	for _, p := range items {
		key, err := o.archive(ctx, p)
		if err != nil {
			return keys, h, err
		}
		if h, err = o.cfg.Store.Discard(ctx, o.cfg.Queue, group, p.Sequence, o.cfg.Now()); err != nil {
			return keys, h, o.wrap(group, err)
		}
		keys = append(keys, key)
	}
	return keys, h, nil
}

// ArchiveKey is where Discard archives a parked message.
func ArchiveKey(queue, group, seq string) string {
	return "quarantine-archive/" + url.PathEscape(queue) + "/" + url.PathEscape(group) + "/" + seq + ".json"
}

func (o *Operator) archive(ctx context.Context, p Parked) (string, error) {
	if p.BodyKey != "" {
		b, err := o.cfg.Bodies.GetBody(ctx, p.BodyKey)
		if err != nil {
			return "", fmt.Errorf("quarantine: archive %s: its body: %w", SeqNumber(p.Sequence), err)
		}
		p.Body = b
	}
	doc, err := json.Marshal(archived{Parked: p, SequenceNumber: SeqNumber(p.Sequence), DiscardedAt: o.cfg.Now().UTC()})
	if err != nil {
		return "", err
	}
	key := ArchiveKey(p.Queue, p.Group, p.Sequence)
	if err := o.cfg.Bodies.PutBody(ctx, key, string(doc)); err != nil {
		return "", fmt.Errorf("quarantine: archive %s: %w", SeqNumber(p.Sequence), err)
	}
	return key, nil
}

type archived struct {
	Parked
	SequenceNumber string    `json:"sequence_number"`
	DiscardedAt    time.Time `json:"discarded_at"`
}

func (o *Operator) wrap(group string, err error) error {
	if errors.Is(err, ErrNoHold) {
		return fmt.Errorf("quarantine: queue %q has no hold on group %q: %w", o.cfg.Queue, group, err)
	}
	return err
}
