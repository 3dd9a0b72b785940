package sqsout

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
)

// SQSAPI is the part of the SQS client the relay calls.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// maxBatch is SendMessageBatch's limit on entries.
const maxBatch = 10

// ErrInvalidConfig is outbox.ErrInvalidConfig: every relay's constructor
// refuses a configuration with the same error.
var ErrInvalidConfig = outbox.ErrInvalidConfig

// Config configures the SQS relay.
type Config struct {
	// Client is the SQS client. Required.
	Client SQSAPI
	// CommandsURL is the URL of the commands queue, a FIFO queue (its name
	// ends in ".fifo"). Required.
	CommandsURL string
	// EventsURL is the URL of the events queue, a FIFO queue. Required.
	EventsURL string
	// Logger logs what could not be published. Default (nil): nothing is
	// logged.
	Logger *slog.Logger
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: Client is nil", ErrInvalidConfig)
	case !strings.HasSuffix(c.CommandsURL, ".fifo"):
		return fmt.Errorf("%w: CommandsURL %q is not a FIFO queue's", ErrInvalidConfig, c.CommandsURL)
	case !strings.HasSuffix(c.EventsURL, ".fifo"):
		return fmt.Errorf("%w: EventsURL %q is not a FIFO queue's", ErrInvalidConfig, c.EventsURL)
	}
	return nil
}

// NewRelay returns a relay that sends commands to cfg.CommandsURL and
// events to cfg.EventsURL, or an error wrapping ErrInvalidConfig.
func NewRelay(cfg Config) (*outbox.Relay, error) {
	s, err := NewSink(cfg)
	if err != nil {
		return nil, err
	}
	return outbox.NewRelay(outbox.RelayConfig{Sink: s, Logger: cfg.Logger})
}

// NewSink returns the sink NewRelay's relay sends through (commands to
// cfg.CommandsURL, events to cfg.EventsURL), for another relay to publish
// with: the PostgreSQL outbox's (internal/app/outbox/pgsource). Or an
// error wrapping ErrInvalidConfig.
func NewSink(cfg Config) (outbox.Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &sink{api: cfg.Client, urls: map[outbox.Kind]string{outbox.KindCommand: cfg.CommandsURL, outbox.KindEvent: cfg.EventsURL}}, nil
}

// sink sends each round to the queue of each message's kind, in batches of
// at most maxBatch.
type sink struct {
	api  SQSAPI
	urls map[outbox.Kind]string
}

// Send sends the commands of msgs, then its events.
func (s *sink) Send(ctx context.Context, msgs []outbox.Message, trace string) []error {
	errs := make([]error, len(msgs))
	for i := range msgs {
		errs[i] = fmt.Errorf("sqsout: %s: no queue for a message of kind %v", msgs[i].OutboxID, msgs[i].Kind)
	}
	attrs := traceAttributes(trace)
	for _, kind := range []outbox.Kind{outbox.KindCommand, outbox.KindEvent} {
		var chunk []int
		for i := range msgs {
			if msgs[i].Kind != kind {
				continue
			}
			if chunk = append(chunk, i); len(chunk) == maxBatch {
				s.send(ctx, s.urls[kind], msgs, chunk, attrs, errs)
				chunk = nil
			}
		}
		if len(chunk) > 0 {
			s.send(ctx, s.urls[kind], msgs, chunk, attrs, errs)
		}
	}
	return errs
}

// send sends the messages msgs[i] for i in chunk in one SendMessageBatch,
// each with the system attributes attrs, and sets errs[i] for each: nil
// when SQS listed it as successful.
func (s *sink) send(ctx context.Context, url string, msgs []outbox.Message, chunk []int, attrs map[string]types.MessageSystemAttributeValue, errs []error) {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
	for id, i := range chunk {
		m := &msgs[i]
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
			Id:                      aws.String(strconv.Itoa(id)),
			MessageBody:             aws.String(string(m.Body)),
			MessageGroupId:          aws.String(m.GroupID),
			MessageDeduplicationId:  aws.String(m.DeduplicationID),
			MessageSystemAttributes: attrs,
		})
	}
	out, err := s.api.SendMessageBatch(ctx, in)
	if err != nil {
		for _, i := range chunk {
			errs[i] = fmt.Errorf("sqsout: SendMessageBatch to %s: %w", url, err)
		}
		return
	}
	for _, i := range chunk {
		errs[i] = fmt.Errorf("sqsout: SendMessageBatch to %s listed no result for the message", url)
	}
	for _, r := range out.Successful {
		if id, err := strconv.Atoi(aws.ToString(r.Id)); err == nil && id >= 0 && id < len(chunk) {
			errs[chunk[id]] = nil
		}
	}
	for _, f := range out.Failed {
		if id, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && id >= 0 && id < len(chunk) {
			errs[chunk[id]] = fmt.Errorf("sqsout: %s refused the message: %s: %s (sender fault %t)",
				url, aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault)
		}
	}
}

// traceAttributes are the system attributes of a message that carries the
// trace header (none for "").
func traceAttributes(header string) map[string]types.MessageSystemAttributeValue {
	if header == "" {
		return nil
	}
	return map[string]types.MessageSystemAttributeValue{
		string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {
			DataType:    aws.String("String"),
			StringValue: aws.String(header),
		},
	}
}
