package fifo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DeadLetterSender is the SQS call a DeadLetterQueue makes.
type DeadLetterSender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ DeadLetterSender = (*sqs.Client)(nil)

// DeadLetterAttribute is the message attribute that carries a DeadLetterInfo,
// as JSON, on a message this package sent to the dead-letter queue.
const DeadLetterAttribute = "fifoworker-dead-letter"

// DeadLetterInfo says why and from where a message was dead-lettered.
//
// The same source message can be dead-lettered more than once: the send's
// deduplication id is the source message id, but SQS drops a repeat only
// within five minutes, and a message is received again only after its
// queue's visibility timeout (6 minutes for template.yaml's commands
// queue), for example when the invocation that dead-lettered it timed out
// before it could acknowledge it. The source fields are the same on every
// copy, so a reader drops a repeat by (SourceQueueARN,
// SourceSequenceNumber), or by SourceMessageID where a standard queue has
// no sequence number; Error, ReceiveCount and DeadLetteredAt describe one
// copy. A message that already has ten message attributes is sent without
// a DeadLetterInfo: on a FIFO dead-letter queue its MessageDeduplicationId
// (the source message id) is then the only source identity it carries.
type DeadLetterInfo struct {
	Error           string `json:"error"`
	SourceMessageID string `json:"source_message_id"`
	SourceQueueARN  string `json:"source_queue_arn,omitempty"`
	// SourceSequenceNumber is the SequenceNumber SQS gave the message in
	// its FIFO source queue; empty for a standard queue.
	SourceSequenceNumber string    `json:"source_sequence_number,omitempty"`
	ReceiveCount         int       `json:"receive_count,omitempty"`
	DeadLetteredAt       time.Time `json:"dead_lettered_at"`
}

const (
	maxMessageAttributes = 10   // SQS's limit per message
	maxErrorText         = 1024 // bytes of the error kept in DeadLetterInfo
)

// DeadLetterQueue is where Config.DeadLetter sends the messages that
// failed with a permanent error.
type DeadLetterQueue struct {
	// Client sends the copies; usually an *sqs.Client. Required.
	Client DeadLetterSender
	// QueueURL is the queue's URL: a FIFO queue (".fifo") for a FIFO
	// source, so that a copy keeps its group. Required.
	QueueURL string
}

func (d *DeadLetterQueue) validate() error {
	switch {
	case d.Client == nil:
		return fmt.Errorf("%w: DeadLetter.Client is nil", ErrInvalidConfig)
	case d.QueueURL == "":
		return fmt.Errorf("%w: DeadLetter.QueueURL is empty", ErrInvalidConfig)
	}
	return nil
}

func (d *DeadLetterQueue) isFIFO() bool { return strings.HasSuffix(d.QueueURL, ".fifo") }

// send copies msg to the dead-letter queue with its group id, body,
// attributes and cause. The message id is the deduplication id, so a second
// send of the same message within SQS's five-minute window is dropped; a
// later one is not, and the DeadLetterInfo's source fields identify it as a
// repeat. withCause is false when the message already had SQS's maximum of
// ten attributes, leaving no room for the DeadLetterAttribute: the copy then
// carries no sequence number, and on a FIFO dead-letter queue only its
// deduplication id names the source message (on a standard one, nothing).
func (d *DeadLetterQueue) send(ctx context.Context, msg *events.SQSMessage, cause error, now time.Time) (withCause bool, err error) {
	group := msg.Attributes[groupAttribute]
	if (group != "" || strings.HasSuffix(msg.EventSourceARN, ".fifo")) && !d.isFIFO() {
		return false, fmt.Errorf("fifo: dead-letter queue %s is not a FIFO queue; a message of FIFO queue %s would lose its order there",
			d.QueueURL, msg.EventSourceARN)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(d.QueueURL),
		MessageBody:       aws.String(msg.Body),
		MessageAttributes: make(map[string]types.MessageAttributeValue, len(msg.MessageAttributes)+1),
	}
	if d.isFIFO() {
		if group == "" {
			group = msg.MessageId
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(msg.MessageId)
	}
	if trace := msg.Attributes["AWSTraceHeader"]; trace != "" {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	for name, a := range msg.MessageAttributes {
		v := types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		in.MessageAttributes[name] = v
	}
	withCause = len(in.MessageAttributes) < maxMessageAttributes
	if withCause {
		info, err := json.Marshal(DeadLetterInfo{
			Error:                sqsSafeText(cause.Error(), maxErrorText),
			SourceMessageID:      msg.MessageId,
			SourceQueueARN:       msg.EventSourceARN,
			SourceSequenceNumber: msg.Attributes["SequenceNumber"],
			ReceiveCount:         receiveCount(msg),
			DeadLetteredAt:       now.UTC(),
		})
		if err != nil {
			return false, fmt.Errorf("fifo: dead-letter %s: %w", msg.MessageId, err)
		}
		in.MessageAttributes[DeadLetterAttribute] = types.MessageAttributeValue{
			DataType: aws.String("String"), StringValue: aws.String(string(info)),
		}
	}
	if _, err := d.Client.SendMessage(ctx, in); err != nil {
		return false, fmt.Errorf("fifo: dead-letter %s to %s: %w", msg.MessageId, d.QueueURL, err)
	}
	return withCause, nil
}

// sqsSafeText keeps at most limit bytes of s, replacing characters SQS
// refuses in message attributes (#x9 | #xA | #xD | #x20-#xD7FF |
// #xE000-#xFFFD | #x10000-#x10FFFF) and cutting on a rune boundary.
func sqsSafeText(s string, limit int) string {
	var sb strings.Builder
	for _, r := range s {
		ok := r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) ||
			(r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
		if !ok || r == utf8.RuneError {
			r = '?'
		}
		if sb.Len()+utf8.RuneLen(r) > limit {
			break
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
