package localesm

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"
)

const testStreamARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/fifoworker-jobs/stream/2026-11-04T09:00:00.000"

func TestStreamRecordHasLambdasShape(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC)
	rec := streamtypes.Record{
		AwsRegion:    aws.String("eu-west-1"),
		EventID:      aws.String("c4ca4238a0b923820dcc509a6f75849b"),
		EventName:    streamtypes.OperationTypeModify,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &created,
			Keys:                        map[string]streamtypes.AttributeValue{"job_id": &streamtypes.AttributeValueMemberS{Value: "job-42"}},
			NewImage: map[string]streamtypes.AttributeValue{
				"job_id":     &streamtypes.AttributeValueMemberS{Value: "job-42"},
				"generation": &streamtypes.AttributeValueMemberN{Value: "2"},
				"digest":     &streamtypes.AttributeValueMemberB{Value: []byte{1, 2}},
				"final":      &streamtypes.AttributeValueMemberBOOL{Value: true},
				"error":      &streamtypes.AttributeValueMemberNULL{Value: true},
				"tags":       &streamtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
				"sizes":      &streamtypes.AttributeValueMemberNS{Value: []string{"1", "2"}},
				"blobs":      &streamtypes.AttributeValueMemberBS{Value: [][]byte{{3}}},
				"steps":      &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{&streamtypes.AttributeValueMemberS{Value: "claim"}, &streamtypes.AttributeValueMemberN{Value: "1"}}},
				"outbox": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
					"id": &streamtypes.AttributeValueMemberS{Value: "evt-90"},
				}},
			},
			OldImage:       map[string]streamtypes.AttributeValue{"job_id": &streamtypes.AttributeValueMemberS{Value: "job-42"}},
			SequenceNumber: aws.String("000000000000000000042"),
			SizeBytes:      aws.Int64(120),
			StreamViewType: streamtypes.StreamViewTypeNewAndOldImages,
		},
	}
	got, err := json.Marshal(streamRecord(rec, testStreamARN, ""))
	require.NoError(t, err)
	require.JSONEq(t, `{
		"awsRegion": "eu-west-1",
		"eventID": "c4ca4238a0b923820dcc509a6f75849b",
		"eventName": "MODIFY",
		"eventSource": "aws:dynamodb",
		"eventVersion": "1.1",
		"eventSourceARN": "`+testStreamARN+`",
		"dynamodb": {
			"ApproximateCreationDateTime": 1793782800,
			"Keys": {"job_id": {"S": "job-42"}},
			"NewImage": {
				"job_id": {"S": "job-42"},
				"generation": {"N": "2"},
				"digest": {"B": "AQI="},
				"final": {"BOOL": true},
				"error": {"NULL": true},
				"tags": {"SS": ["a", "b"]},
				"sizes": {"NS": ["1", "2"]},
				"blobs": {"BS": ["Aw=="]},
				"steps": {"L": [{"S": "claim"}, {"N": "1"}]},
				"outbox": {"M": {"id": {"S": "evt-90"}}}
			},
			"OldImage": {"job_id": {"S": "job-42"}},
			"SequenceNumber": "000000000000000000042",
			"SizeBytes": 120,
			"StreamViewType": "NEW_AND_OLD_IMAGES"
		}
	}`, string(got))
}

func TestStreamRecordDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	rec := streamtypes.Record{
		AwsRegion: aws.String("ddblocal"),
		EventName: streamtypes.OperationTypeRemove,
		Dynamodb:  &streamtypes.StreamRecord{SequenceNumber: aws.String("7")},
		UserIdentity: &streamtypes.Identity{
			PrincipalId: aws.String("dynamodb.amazonaws.com"),
			Type:        aws.String("Service"),
		},
	}
	ev := streamRecord(rec, testStreamARN, "eu-west-1")
	require.Equal(t, "eu-west-1", ev.AWSRegion, "a configured region replaces DynamoDB Local's")
	require.Equal(t, "1.1", ev.EventVersion)
	require.Equal(t, "aws:dynamodb", ev.EventSource)
	require.Equal(t, &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}, ev.UserIdentity)
	require.Equal(t, "ddblocal", streamRecord(rec, testStreamARN, "").AWSRegion, "without an override the record's region is kept")
}

func streamBatch(seqs ...string) []events.DynamoDBEventRecord {
	batch := make([]events.DynamoDBEventRecord, len(seqs))
	for i, s := range seqs {
		batch[i].Change.SequenceNumber = s
	}
	return batch
}

func TestDecideStream(t *testing.T) {
	t.Parallel()
	batch := streamBatch("101", "102", "103", "104")
	ok := func(payload string) Result { return Result{Status: StatusOK, Payload: []byte(payload)} }
	cases := []struct {
		name    string
		res     Result
		report  bool
		outcome Outcome
		done    int
	}{
		{"success finishes the batch", ok(`null`), true, OutcomeSuccess, 4},
		{"success without reporting ignores the response", ok(`{"batchItemFailures":[{"itemIdentifier":"102"}]}`), false, OutcomeSuccess, 4},
		{"empty list is success", ok(`{"batchItemFailures":[]}`), true, OutcomeSuccess, 4},
		{"partial resumes at the failed record", ok(`{"batchItemFailures":[{"itemIdentifier":"103"}]}`), true, OutcomePartialFailure, 2},
		{"partial resumes at the lowest sequence number", ok(`{"batchItemFailures":[{"itemIdentifier":"104"},{"itemIdentifier":"102"}]}`), true, OutcomePartialFailure, 1},
		{"first record failed", ok(`{"batchItemFailures":[{"itemIdentifier":"101"}]}`), true, OutcomePartialFailure, 0},
		{"function error finishes nothing", Result{Status: StatusFunctionError}, true, OutcomeFunctionError, 0},
		{"timeout finishes nothing", Result{Status: StatusTimeout}, false, OutcomeTimeout, 0},
		{"unknown sequence number fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":"999"}]}`), true, OutcomeInvalidResponse, 0},
		{"empty identifier fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":""}]}`), true, OutcomeInvalidResponse, 0},
		{"bad key name fails the batch", ok(`{"batchItemFailures":[{"sequenceNumber":"102"}]}`), true, OutcomeInvalidResponse, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := decideStream(batch, tc.res, tc.report)
			require.Equal(t, tc.outcome, d.outcome, "error: %v", d.err)
			require.Equal(t, tc.done, d.done)
			require.Equal(t, tc.outcome == OutcomeSuccess, d.err == nil)
			require.Equal(t, tc.outcome == OutcomeInvalidResponse, errors.Is(d.err, ErrInvalidResponse))
		})
	}
}

func TestOnFailureRecordHasLambdasShape(t *testing.T) {
	t.Parallel()
	batch := streamBatch("202", "203")
	batch[0].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Date(2026, 11, 4, 9, 0, 1, 0, time.UTC)}
	batch[1].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Date(2026, 11, 4, 9, 0, 2, 0, time.UTC)}
	now := time.Date(2026, 11, 4, 9, 0, 5, 479_000_000, time.UTC)
	rec := onFailureRecord(batch, "shardId-1", testStreamARN, DefaultFunctionARN, "req-1", 3, StatusFunctionError, now)
	got, err := json.Marshal(rec)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"requestContext": {"requestId": "req-1", "functionArn": "`+DefaultFunctionARN+`", "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
		"responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"version": "1.0",
		"timestamp": "2026-11-04T09:00:05.479Z",
		"DDBStreamBatchInfo": {
			"shardId": "shardId-1",
			"startSequenceNumber": "202",
			"endSequenceNumber": "203",
			"approximateArrivalOfFirstRecord": "2026-11-04T09:00:01Z",
			"approximateArrivalOfLastRecord": "2026-11-04T09:00:02Z",
			"batchSize": 2,
			"streamArn": "`+testStreamARN+`"
		}
	}`, string(got))

	partial := onFailureRecord(batch, "shardId-1", testStreamARN, DefaultFunctionARN, "req-1", 3, StatusOK, now)
	require.Empty(t, partial.ResponseContext.FunctionError, "a partial batch response is not a function error")
}

// An empty map, as DynamoDB Local's stream returns it (nil in the SDK's
// member), reaches the function as an empty map, not as NULL.
func TestStreamRecordKeepsEmptyMapsThroughJSON(t *testing.T) {
	t.Parallel()
	av := attributeValue(&streamtypes.AttributeValueMemberM{Value: nil})
	b, err := json.Marshal(av)
	require.NoError(t, err)
	require.JSONEq(t, `{"M":{}}`, string(b))
	var back events.DynamoDBAttributeValue
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, events.DataTypeMap, back.DataType())
}
