package quarantine

import (
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

// Operator is what an operator does with a queue's quarantine: list and
// show holds, redrive a group, discard parked messages.
type Operator struct {
	Store    Store
	Queue    string // the queue's name
	QueueURL string // where redriven copies are sent
	Sender   Sender
	// Bodies holds the bodies parked out of their items, and receives the
	// archive of what Discard drops. Required for Discard.
	Bodies BodyStore
	// Poll is how often a waiting redrive reads its hold (default 500 ms).
	Poll time.Duration
	// Progress, if set, is told of each copy sent.
	Progress func(RedriveProgress)
	Now      func() time.Time
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
}

func (o *Operator) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
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
	h, err := o.Store.BeginRedrive(ctx, o.Queue, group, o.now())
	if err != nil {
		return RedriveReport{Group: group}, o.wrap(group, err)
	}
	rep := RedriveReport{Group: group, Epoch: h.Epoch, State: h.State, Parked: h.Parked}
	last := ""
	poll := o.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for h.State == StateDraining {
		items, err := o.Store.Messages(ctx, o.Queue, group, StatusParked, last, 100)
		if err != nil {
			return rep, err
		}
		for _, p := range items {
			if err := o.send(ctx, h.Epoch, p); err != nil {
				return rep, err
			}
			rep.Sent++
			last = p.Sequence
			if o.Progress != nil {
				o.Progress(RedriveProgress{Group: group, Epoch: h.Epoch, Sequence: SeqNumber(p.Sequence), Sent: rep.Sent, Parked: h.Parked})
			}
		}
		now, err := o.Store.Hold(ctx, o.Queue, group)
		if err != nil {
			return rep, err
		}
		rep.State, rep.Parked, rep.Cause = now.State, now.Parked, now.Cause
		if now.Epoch != h.Epoch {
			rep.Cause = fmt.Sprintf("another redrive (epoch %d) took over", now.Epoch)
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
// repeated within SQS's five-minute window.
func (o *Operator) send(ctx context.Context, epoch int64, p Parked) error {
	body := p.Body
	if p.BodyKey != "" {
		if o.Bodies == nil {
			return fmt.Errorf("quarantine: message %s's body is in %s, and no body store is configured", SeqNumber(p.Sequence), p.BodyKey)
		}
		b, err := o.Bodies.GetBody(ctx, p.BodyKey)
		if err != nil {
			return fmt.Errorf("quarantine: message %s's body: %w", SeqNumber(p.Sequence), err)
		}
		body = b
	}
	in := &sqs.SendMessageInput{
		QueueUrl:               aws.String(o.QueueURL),
		MessageBody:            aws.String(body),
		MessageGroupId:         aws.String(p.Group),
		MessageDeduplicationId: aws.String(Copy{Epoch: epoch, Nonce: p.Nonce, Sequence: p.Sequence}.DeduplicationID()),
		MessageAttributes:      sqsAttributes(p.Attributes),
	}
	var err error
	for try := range 6 {
		if _, err = o.Sender.SendMessage(ctx, in); err == nil {
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

// Show returns group's hold and its messages with status (every status
// when empty), up to limit.
func (o *Operator) Show(ctx context.Context, group string, status Status, limit int) (HoldRecord, []Parked, error) {
	h, err := o.Store.Hold(ctx, o.Queue, group)
	if err != nil {
		return HoldRecord{}, nil, o.wrap(group, err)
	}
	items, err := o.Store.Messages(ctx, o.Queue, group, status, "", limit)
	return h, items, err
}

// List returns the queue's holds that are not released.
func (o *Operator) List(ctx context.Context) ([]HoldRecord, error) {
	return o.Store.Holds(ctx, o.Queue)
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
	if o.Bodies == nil {
		return nil, HoldRecord{}, errors.New("quarantine: discard needs a body store for its archive")
	}
	switch h, err := o.Store.Hold(ctx, o.Queue, group); {
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
		_, got, err := o.Store.Read(ctx, o.Queue, nil, []ItemKey{{Group: group, Sequence: k}})
		if err != nil {
			return nil, HoldRecord{}, err
		}
		p, ok := got[ItemKey{Group: group, Sequence: k}]
		if !ok || p.Status != StatusParked {
			return nil, HoldRecord{}, fmt.Errorf("quarantine: group %q has no parked message %s: %w", group, seq, ErrNotParked)
		}
		items = []Parked{p}
	} else {
		all, err := o.Store.Messages(ctx, o.Queue, group, StatusParked, "", 0)
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
		if h, err = o.Store.Discard(ctx, o.Queue, group, p.Sequence, o.now()); err != nil {
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
		b, err := o.Bodies.GetBody(ctx, p.BodyKey)
		if err != nil {
			return "", fmt.Errorf("quarantine: archive %s: its body: %w", SeqNumber(p.Sequence), err)
		}
		p.Body = b
	}
	doc, err := json.Marshal(archived{Parked: p, SequenceNumber: SeqNumber(p.Sequence), DiscardedAt: o.now().UTC()})
	if err != nil {
		return "", err
	}
	key := ArchiveKey(p.Queue, p.Group, p.Sequence)
	if err := o.Bodies.PutBody(ctx, key, string(doc)); err != nil {
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
		return fmt.Errorf("quarantine: queue %q has no hold on group %q: %w", o.Queue, group, err)
	}
	return err
}
