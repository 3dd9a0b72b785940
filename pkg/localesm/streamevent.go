package localesm

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// streamRecord builds the event record Lambda builds from a stream record.
// awsRegion is the stream record's own unless region overrides it (DynamoDB
// Local reports "ddblocal"); eventSourceARN is the stream's ARN.
func streamRecord(r streamtypes.Record, streamARN, region string) events.DynamoDBEventRecord {
	ev := events.DynamoDBEventRecord{
		AWSRegion:      deref(r.AwsRegion),
		EventID:        deref(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    "aws:dynamodb",
		EventVersion:   deref(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if region != "" {
		ev.AWSRegion = region
	}
	if ev.EventVersion == "" {
		ev.EventVersion = "1.1"
	}
	if r.UserIdentity != nil {
		ev.UserIdentity = &events.DynamoDBUserIdentity{Type: deref(r.UserIdentity.Type), PrincipalID: deref(r.UserIdentity.PrincipalId)}
	}
	if d := r.Dynamodb; d != nil {
		ev.Change = events.DynamoDBStreamRecord{
			Keys:           attributeMap(d.Keys),
			NewImage:       attributeMap(d.NewImage),
			OldImage:       attributeMap(d.OldImage),
			SequenceNumber: deref(d.SequenceNumber),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			ev.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
		if d.SizeBytes != nil {
			ev.Change.SizeBytes = *d.SizeBytes
		}
	}
	return ev
}

func attributeMap(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = attributeValue(v)
	}
	return out
}

// attributeValue converts one attribute value. A member this SDK version
// does not know becomes NULL: the stream record is still delivered.
func attributeValue(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = attributeValue(e)
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		// An empty map is {"M":{}} on the wire, never null: Lambda
		// delivers it so, and a nil map would marshal as {"M":null},
		// which decodes as NULL.
		m := attributeMap(v.Value)
		if m == nil {
			m = map[string]events.DynamoDBAttributeValue{}
		}
		return events.NewMapAttribute(m)
	}
	return events.NewNullAttribute()
}

// streamDecision is what to do with a stream batch after its invocation.
type streamDecision struct {
	outcome Outcome
	done    int   // how many leading records of the batch are finished
	err     error // why the batch (or its rest) failed
}

// decideStream applies Lambda's rules for streams: a success finishes the
// batch; with reportItemFailures a valid partial batch response finishes
// the records before the lowest sequence number it names (the checkpoint),
// and the rest is retried from there; anything else finishes nothing.
func decideStream(batch []events.DynamoDBEventRecord, res Result, reportItemFailures bool) streamDecision {
	if outcome, failed := failedOutcome(res.Status); failed {
		return streamDecision{outcome: outcome, err: fmt.Errorf("localesm: %s: %s", res.Status, strings.TrimSpace(string(res.Payload)))}
	}
	if !reportItemFailures {
		return streamDecision{outcome: OutcomeSuccess, done: len(batch)}
	}
	ids, err := parseBatchItemFailures(res.Payload)
	if err != nil {
		return streamDecision{outcome: OutcomeInvalidResponse, err: err}
	}
	if len(ids) == 0 {
		return streamDecision{outcome: OutcomeSuccess, done: len(batch)}
	}
	index := make(map[string]int, len(batch))
	for i, rec := range batch {
		index[rec.Change.SequenceNumber] = i
	}
	// Records are in sequence-number order, so the lowest sequence number
	// reported is the one with the lowest index.
	first := len(batch)
	for _, id := range ids {
		i, ok := index[id]
		if !ok {
			return streamDecision{outcome: OutcomeInvalidResponse, err: fmt.Errorf("%w: itemIdentifier %q is not a sequence number of the batch", ErrInvalidResponse, id)}
		}
		first = min(first, i)
	}
	return streamDecision{outcome: OutcomePartialFailure, done: first,
		err: fmt.Errorf("localesm: record %s reported failed", batch[first].Change.SequenceNumber)}
}

// OnFailureRecord is the JSON document sent to a stream mapping's
// on-failure destination when a batch is discarded, in the shape Lambda
// sends: it locates the discarded records in the stream, it does not carry
// them.
type OnFailureRecord struct {
	RequestContext     OnFailureRequestContext  `json:"requestContext"`
	ResponseContext    OnFailureResponseContext `json:"responseContext"`
	Version            string                   `json:"version"`
	Timestamp          string                   `json:"timestamp"`
	DDBStreamBatchInfo DDBStreamBatchInfo       `json:"DDBStreamBatchInfo"`
}

// OnFailureRequestContext says which invocation gave up on the batch.
type OnFailureRequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"` // "RetryAttemptsExhausted"
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// OnFailureResponseContext describes the last invocation's response.
type OnFailureResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"` // "Unhandled" after an error or a timeout
}

// DDBStreamBatchInfo locates the discarded records.
type DDBStreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// onFailureRecord describes the discarded records batch (never empty) after
// invokeCount invocations, the last of which returned last.
func onFailureRecord(batch []events.DynamoDBEventRecord, shardID, streamARN, functionARN, requestID string, invokeCount int, last Status, now time.Time) OnFailureRecord {
	rec := OnFailureRecord{
		RequestContext: OnFailureRequestContext{
			RequestID:              requestID,
			FunctionARN:            functionARN,
			Condition:              "RetryAttemptsExhausted",
			ApproximateInvokeCount: invokeCount,
		},
		ResponseContext: OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"},
		Version:         "1.0",
		Timestamp:       now.UTC().Format("2006-01-02T15:04:05.000Z"),
		DDBStreamBatchInfo: DDBStreamBatchInfo{
			ShardID:                         shardID,
			StartSequenceNumber:             batch[0].Change.SequenceNumber,
			EndSequenceNumber:               batch[len(batch)-1].Change.SequenceNumber,
			ApproximateArrivalOfFirstRecord: batch[0].Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			ApproximateArrivalOfLastRecord:  batch[len(batch)-1].Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
			BatchSize:                       len(batch),
			StreamARN:                       streamARN,
		},
	}
	if last != StatusOK {
		rec.ResponseContext.FunctionError = "Unhandled"
	}
	return rec
}
