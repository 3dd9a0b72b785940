package localesm

import (
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// groupAttribute is the system attribute naming a FIFO message's group.
const groupAttribute = "MessageGroupId"

// receiveCountAttribute is the system attribute counting a message's
// receives.
const receiveCountAttribute = "ApproximateReceiveCount"

// sqsRecord builds the event record Lambda builds from a received message:
// every system attribute SQS returned, the message attributes in Lambda's
// JSON shape (empty lists rather than null), and the source's ARN and
// region.
func sqsRecord(m sqstypes.Message, queueARN, region string) events.SQSMessage {
	attrs := make(map[string]string, len(m.Attributes))
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	msgAttrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
	for name, v := range m.MessageAttributes {
		a := events.SQSMessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         deref(v.DataType),
		}
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		msgAttrs[name] = a
	}
	return events.SQSMessage{
		MessageId:              deref(m.MessageId),
		ReceiptHandle:          deref(m.ReceiptHandle),
		Body:                   deref(m.Body),
		Md5OfBody:              deref(m.MD5OfBody),
		Md5OfMessageAttributes: deref(m.MD5OfMessageAttributes),
		Attributes:             attrs,
		MessageAttributes:      msgAttrs,
		EventSourceARN:         queueARN,
		EventSource:            "aws:sqs",
		AWSRegion:              region,
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// arnRegion returns the region field of an ARN
// (arn:partition:service:region:account:resource).
func arnRegion(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return "", fmt.Errorf("localesm: %q is not an ARN", arn)
	}
	return parts[3], nil
}

// sqsDecision is what to do with a batch after its invocation.
type sqsDecision struct {
	outcome Outcome
	delete  []int // indexes into the batch of the messages to delete
	err     error // why the batch failed, for failures
}

// decideSQS applies Lambda's rules to an invocation's result: with
// reportItemFailures, a valid partial batch response deletes every message
// it does not name, and anything else that is not a success deletes
// nothing; without it, a success deletes everything.
func decideSQS(batch []events.SQSMessage, res Result, reportItemFailures bool) sqsDecision {
	if outcome, failed := failedOutcome(res.Status); failed {
		return sqsDecision{outcome: outcome, err: fmt.Errorf("localesm: %s: %s", res.Status, strings.TrimSpace(string(res.Payload)))}
	}
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	if !reportItemFailures {
		return sqsDecision{outcome: OutcomeSuccess, delete: all}
	}
	ids, err := parseBatchItemFailures(res.Payload)
	if err != nil {
		return sqsDecision{outcome: OutcomeInvalidResponse, err: err}
	}
	if len(ids) == 0 {
		return sqsDecision{outcome: OutcomeSuccess, delete: all}
	}
	index := make(map[string]int, len(batch))
	for i, m := range batch {
		index[m.MessageId] = i
	}
	failed := make(map[int]bool, len(ids))
	for _, id := range ids {
		i, ok := index[id]
		if !ok {
			return sqsDecision{outcome: OutcomeInvalidResponse, err: fmt.Errorf("%w: itemIdentifier %q is not a message of the batch", ErrInvalidResponse, id)}
		}
		failed[i] = true
	}
	keep := make([]int, 0, len(batch)-len(failed))
	for i := range batch {
		if !failed[i] {
			keep = append(keep, i)
		}
	}
	return sqsDecision{outcome: OutcomePartialFailure, delete: keep}
}
