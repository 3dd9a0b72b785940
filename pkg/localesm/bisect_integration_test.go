//go:build integration

package localesm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// TestStreamBisectIsolatesAPoisonRecordOnAStream: on a real stream, a record that
// fails every invocation it is in sits among seven others in one batch.
// With BisectBatchOnFunctionError and no retry, the batch is halved until
// that record is alone; it alone is discarded, with an on-failure record
// naming it alone, and its neighbours are finished once each, in stream
// order. (Without bisection the first failure would discard the batch.)
func TestStreamBisectIsolatesAPoisonRecordOnAStream(t *testing.T) {
	t.Parallel()
	ddb := awstest.DynamoDB(t)
	sqsClient := awstest.SQS(t)
	failures := newQueue(t, sqsClient, queueSpec{visibility: 30})
	table, streamARN := newStreamTable(t, ddb)
	ids := []string{"job-1", "job-2", "job-3", "job-4", "job-bad", "job-6", "job-7", "job-8"}
	for _, id := range ids {
		putJob(t, ddb, table, id)
	}

	var log streamLog
	handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		log.invoke(ev)
		if slices.Contains(jobIDs(ev.Records), "job-bad") {
			return events.DynamoDBEventResponse{}, errors.New("cannot process job-bad")
		}
		return events.DynamoDBEventResponse{}, nil
	}
	m, err := localesm.NewStreamMapping(localesm.StreamConfig{Client: awstest.Streams(t), Invoker: localesm.Func(handler),
		StreamARN: streamARN, BatchSize: 10, BisectBatchOnFunctionError: true, MaximumRetryAttempts: new(0),
		OnFailure:       &localesm.OnFailureDestination{Client: sqsClient, QueueURL: failures.url},
		FunctionTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, OnBatch: log.onBatch,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)
	msgs := receiveN(t, sqsClient, failures.url, 1, 20*time.Second)
	finishedIDs := func() []string {
		_, results := log.snapshot()
		var done []string
		for _, r := range results {
			done = append(done, jobIDs(r.Records[:r.Done])...)
		}
		return done
	}
	eventually(t, 20*time.Second, "the seven neighbours to be finished", func() bool { return len(finishedIDs()) >= 7 })
	stop()

	invoked, results := log.snapshot()
	var first []events.DynamoDBEventRecord // the first batch with job-bad in it
	for _, batch := range invoked {
		if slices.Contains(jobIDs(batch), "job-bad") {
			first = batch
			break
		}
	}
	require.Greater(t, len(first), 1, "the stream gave job-bad a batch of its own: nothing to bisect")
	var bad events.DynamoDBEventRecord
	for _, r := range first {
		if r.Change.Keys["job_id"].String() == "job-bad" {
			bad = r
		}
	}

	require.Equal(t, []string{"job-1", "job-2", "job-3", "job-4", "job-6", "job-7", "job-8"}, finishedIDs(),
		"every neighbour finished once, in stream order")

	var rec localesm.OnFailureRecord
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(msgs[0].Body)), &rec))
	info := rec.DDBStreamBatchInfo
	require.Equal(t, 1, info.BatchSize, "only job-bad is discarded")
	require.Equal(t, bad.Change.SequenceNumber, info.StartSequenceNumber)
	require.Equal(t, bad.Change.SequenceNumber, info.EndSequenceNumber)
	require.Equal(t, streamARN, info.StreamARN)
	require.Equal(t, "RetryAttemptsExhausted", rec.RequestContext.Condition)

	bisected, discarded := 0, 0
	for _, r := range results {
		if r.Bisected {
			bisected++
			require.Contains(t, jobIDs(r.Records), "job-bad", "only batches with job-bad in them fail")
		}
		if r.Discarded {
			discarded++
			require.Equal(t, []string{"job-bad"}, jobIDs(r.Records))
		}
	}
	require.Positive(t, bisected)
	require.Equal(t, 1, discarded)
}
