package localesm

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

const testQueueARN = "arn:aws:sqs:eu-west-1:123456789012:fifoworker-commands.fifo"

func TestSQSRecordHasLambdasShape(t *testing.T) {
	t.Parallel()
	msg := sqstypes.Message{
		MessageId:              aws.String("9d8e5a40-0000-0000-0000-000000000042"),
		ReceiptHandle:          aws.String("rh-42"),
		Body:                   aws.String(`{"type":"job.run","command_id":"cmd-42","job_id":"job-42"}`),
		MD5OfBody:              aws.String("7ff7f7aa19812e2dc359719967d0e4a4"),
		MD5OfMessageAttributes: aws.String("509308fe9f8ef67131cb619d5c92931e"),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "2",
			"SentTimestamp":                    "1793782800000",
			"SequenceNumber":                   "18889999999999999001",
			"MessageGroupId":                   "job-42",
			"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
			"MessageDeduplicationId":           "cmd-42",
			"ApproximateFirstReceiveTimestamp": "1793782800120",
		},
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"tenant":  {DataType: aws.String("String"), StringValue: aws.String("t-1")},
			"payload": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2}},
		},
	}
	got, err := json.Marshal(sqsRecord(msg, testQueueARN, "eu-west-1"))
	require.NoError(t, err)
	require.JSONEq(t, `{
		"messageId": "9d8e5a40-0000-0000-0000-000000000042",
		"receiptHandle": "rh-42",
		"body": "{\"type\":\"job.run\",\"command_id\":\"cmd-42\",\"job_id\":\"job-42\"}",
		"md5OfBody": "7ff7f7aa19812e2dc359719967d0e4a4",
		"md5OfMessageAttributes": "509308fe9f8ef67131cb619d5c92931e",
		"attributes": {
			"ApproximateReceiveCount": "2",
			"SentTimestamp": "1793782800000",
			"SequenceNumber": "18889999999999999001",
			"MessageGroupId": "job-42",
			"SenderId": "AIDAIENQZJOLO23YVJ4VO",
			"MessageDeduplicationId": "cmd-42",
			"ApproximateFirstReceiveTimestamp": "1793782800120"
		},
		"messageAttributes": {
			"tenant": {"stringValue": "t-1", "stringListValues": [], "binaryListValues": [], "dataType": "String"},
			"payload": {"binaryValue": "AQI=", "stringListValues": [], "binaryListValues": [], "dataType": "Binary"}
		},
		"eventSource": "aws:sqs",
		"eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:fifoworker-commands.fifo",
		"awsRegion": "eu-west-1"
	}`, string(got))
}

func TestSQSRecordWithoutAttributesHasEmptyMaps(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(sqsRecord(sqstypes.Message{MessageId: aws.String("m"), Body: aws.String("b")}, testQueueARN, "eu-west-1"))
	require.NoError(t, err)
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got, &doc))
	require.JSONEq(t, `{}`, string(doc["attributes"]))
	require.JSONEq(t, `{}`, string(doc["messageAttributes"]))
}

func TestARNRegion(t *testing.T) {
	t.Parallel()
	region, err := arnRegion(testQueueARN)
	require.NoError(t, err)
	require.Equal(t, "eu-west-1", region)
	region, err = arnRegion("arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/2026-11-29T11:14:55.539")
	require.NoError(t, err)
	require.Equal(t, "ddblocal", region)
	_, err = arnRegion("http://127.0.0.1:19324/000000000000/q")
	require.Error(t, err)
}

func sqsBatch(ids ...string) []events.SQSMessage {
	batch := make([]events.SQSMessage, len(ids))
	for i, id := range ids {
		batch[i] = events.SQSMessage{MessageId: id}
	}
	return batch
}

func TestDecideSQS(t *testing.T) {
	t.Parallel()
	batch := sqsBatch("a", "b", "c")
	ok := func(payload string) Result { return Result{Status: StatusOK, Payload: []byte(payload)} }
	cases := []struct {
		name    string
		res     Result
		report  bool
		outcome Outcome
		delete  []int
	}{
		{"success without reporting deletes all", ok(`null`), false, OutcomeSuccess, []int{0, 1, 2}},
		{"a partial response is ignored without reporting", ok(`{"batchItemFailures":[{"itemIdentifier":"b"}]}`), false, OutcomeSuccess, []int{0, 1, 2}},
		{"function error deletes nothing", Result{Status: StatusFunctionError, Payload: []byte(`{"errorType":"x"}`)}, true, OutcomeFunctionError, nil},
		{"function error deletes nothing without reporting", Result{Status: StatusFunctionError}, false, OutcomeFunctionError, nil},
		{"timeout deletes nothing", Result{Status: StatusTimeout}, true, OutcomeTimeout, nil},
		{"timeout deletes nothing without reporting", Result{Status: StatusTimeout}, false, OutcomeTimeout, nil},
		{"null response is success", ok(`null`), true, OutcomeSuccess, []int{0, 1, 2}},
		{"empty response is success", ok(``), true, OutcomeSuccess, []int{0, 1, 2}},
		{"empty object is success", ok(`{}`), true, OutcomeSuccess, []int{0, 1, 2}},
		{"null list is success", ok(`{"batchItemFailures":null}`), true, OutcomeSuccess, []int{0, 1, 2}},
		{"empty list is success", ok(`{"batchItemFailures":[]}`), true, OutcomeSuccess, []int{0, 1, 2}},
		{"partial deletes the unreported", ok(`{"batchItemFailures":[{"itemIdentifier":"b"}]}`), true, OutcomePartialFailure, []int{0, 2}},
		{"a duplicate report is one failure", ok(`{"batchItemFailures":[{"itemIdentifier":"c"},{"itemIdentifier":"c"}]}`), true, OutcomePartialFailure, []int{0, 1}},
		{"all reported deletes nothing", ok(`{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"},{"itemIdentifier":"c"}]}`), true, OutcomePartialFailure, []int{}},
		{"unknown id fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":"b"},{"itemIdentifier":"zz"}]}`), true, OutcomeInvalidResponse, nil},
		{"empty id fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":""}]}`), true, OutcomeInvalidResponse, nil},
		{"null id fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":null}]}`), true, OutcomeInvalidResponse, nil},
		{"a bad key name fails the batch", ok(`{"batchItemFailures":[{"ItemIdentifier":"b"}]}`), true, OutcomeInvalidResponse, nil},
		{"a numeric id fails the batch", ok(`{"batchItemFailures":[{"itemIdentifier":7}]}`), true, OutcomeInvalidResponse, nil},
		{"a list that is not a list fails the batch", ok(`{"batchItemFailures":"b"}`), true, OutcomeInvalidResponse, nil},
		{"a null item fails the batch", ok(`{"batchItemFailures":[null]}`), true, OutcomeInvalidResponse, nil},
		{"invalid JSON fails the batch", ok(`{"batchItemFailures":[`), true, OutcomeInvalidResponse, nil},
		{"a response that is not an object fails the batch", ok(`["b"]`), true, OutcomeInvalidResponse, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := decideSQS(batch, tc.res, tc.report)
			require.Equal(t, tc.outcome, d.outcome, "error: %v", d.err)
			require.ElementsMatch(t, tc.delete, d.delete)
			if tc.outcome == OutcomeSuccess || tc.outcome == OutcomePartialFailure {
				require.NoError(t, d.err)
			} else {
				require.Error(t, d.err)
			}
			if tc.outcome == OutcomeInvalidResponse {
				require.True(t, errors.Is(d.err, ErrInvalidResponse), "%v", d.err)
			}
		})
	}
}

func TestOutcomeAndStatusNames(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for o := OutcomeSuccess; o <= OutcomeWithheld; o++ {
		name := o.String()
		require.NotContains(t, name, "Outcome(")
		require.False(t, seen[name], "duplicate name %s", name)
		seen[name] = true
	}
	require.Equal(t, "Outcome(99)", Outcome(99).String())
	require.Equal(t, "timeout", StatusTimeout.String())
	require.Equal(t, "Status(9)", Status(9).String())
}
