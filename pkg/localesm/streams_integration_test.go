//go:build integration

package localesm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

func TestStreamResumesFromTheFirstFailedRecord(t *testing.T) {
	t.Parallel()
	ddb := awstest.DynamoDB(t)
	table, streamARN := newStreamTable(t, ddb)
	for i := 1; i <= 5; i++ {
		putJob(t, ddb, table, fmt.Sprint("job-", i))
	}

	var log streamLog
	var mu sync.Mutex
	failedOnce := false
	handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		log.invoke(ev)
		mu.Lock()
		defer mu.Unlock()
		var resp events.DynamoDBEventResponse
		for _, r := range ev.Records {
			if !failedOnce && r.Change.Keys["job_id"].String() == "job-3" {
				failedOnce = true
				// Report job-3 and, like a careful consumer, job-5 too: Lambda
				// resumes from the lowest sequence number reported.
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
				last := ev.Records[len(ev.Records)-1]
				if last.Change.Keys["job_id"].String() == "job-5" {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: last.Change.SequenceNumber})
				}
			}
		}
		return resp, nil
	}
	m, err := localesm.NewStreamMapping(localesm.StreamConfig{Client: awstest.Streams(t), Invoker: localesm.Func(handler),
		StreamARN: streamARN, ReportBatchItemFailures: true, BatchSize: 10, // retried until success: the default
		FunctionTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, OnBatch: log.onBatch,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)
	done := func() bool {
		_, results := log.snapshot()
		finished := map[string]bool{}
		for _, r := range results {
			for _, id := range jobIDs(r.Records[:r.Done]) {
				finished[id] = true
			}
		}
		return len(finished) == 5
	}
	eventually(t, 20*time.Second, "all five records to be finished", done)
	stop()

	invoked, results := log.snapshot()
	seen := map[string]int{}
	var firstSeen []string
	failedAt := -1
	for i, batch := range invoked {
		for _, id := range jobIDs(batch) {
			if seen[id] == 0 {
				firstSeen = append(firstSeen, id)
			}
			seen[id]++
		}
		if slices.Contains(jobIDs(batch), "job-3") && failedAt < 0 {
			failedAt = i
		}
	}
	require.Equal(t, []string{"job-1", "job-2", "job-3", "job-4", "job-5"}, firstSeen, "records are invoked in stream order")
	require.GreaterOrEqual(t, failedAt, 0)
	require.Equal(t, localesm.OutcomePartialFailure, results[failedAt].Outcome)
	require.Equal(t, "job-3", jobIDs(invoked[failedAt])[results[failedAt].Done], "the checkpoint is the failed record")
	require.Greater(t, len(invoked), failedAt+1, "the batch was retried")
	require.Equal(t, "job-3", jobIDs(invoked[failedAt+1])[0], "the retry starts with the failed record")
	require.Equal(t, 1, seen["job-1"], "records before the checkpoint are not invoked again")
	require.Equal(t, 1, seen["job-2"])
	require.Equal(t, 2, seen["job-3"])
	for _, r := range results {
		require.Equal(t, streamARN, r.Records[0].EventSourceArn)
		require.Equal(t, "aws:dynamodb", r.Records[0].EventSource)
		require.Equal(t, "1.1", r.Records[0].EventVersion)
		require.Equal(t, "INSERT", r.Records[0].EventName)
		require.Equal(t, "NEW_AND_OLD_IMAGES", r.Records[0].Change.StreamViewType)
		require.Equal(t, "pending", r.Records[0].Change.NewImage["status"].String())
		require.NotEmpty(t, r.Records[0].EventID)
		require.False(t, r.Records[0].Change.ApproximateCreationDateTime.IsZero())
	}
}

func TestStreamRetriesExhaustedSendsOnFailureRecord(t *testing.T) {
	t.Parallel()
	ddb := awstest.DynamoDB(t)
	sqsClient := awstest.SQS(t)
	failures := newQueue(t, sqsClient, queueSpec{visibility: 30}) // Lambda takes a standard queue here
	table, streamARN := newStreamTable(t, ddb)
	for _, id := range []string{"job-1", "job-bad", "job-3"} {
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
	const functionARN = "arn:aws:lambda:eu-west-1:000000000000:function:relay"
	m, err := localesm.NewStreamMapping(localesm.StreamConfig{Client: awstest.Streams(t), Invoker: localesm.Func(handler),
		StreamARN: streamARN, MaximumRetryAttempts: new(1), BatchSize: 10, FunctionARN: functionARN,
		OnFailure:       &localesm.OnFailureDestination{Client: sqsClient, QueueURL: failures.url},
		FunctionTimeout: 2 * time.Second, PollInterval: 50 * time.Millisecond, OnBatch: log.onBatch,
	})
	require.NoError(t, err)
	start(t, m.Run)

	msgs := receiveN(t, sqsClient, failures.url, 1, 20*time.Second)
	var rec localesm.OnFailureRecord
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(msgs[0].Body)), &rec))

	invoked, results := log.snapshot()
	var bad []events.DynamoDBEventRecord
	badInvocations := 0
	for _, batch := range invoked {
		if slices.Contains(jobIDs(batch), "job-bad") {
			bad = batch
			badInvocations++
		}
	}
	require.Equal(t, 2, badInvocations, "one invocation and MaximumRetryAttempts=1 retry")
	require.Equal(t, "RetryAttemptsExhausted", rec.RequestContext.Condition)
	require.Equal(t, 2, rec.RequestContext.ApproximateInvokeCount)
	require.Equal(t, functionARN, rec.RequestContext.FunctionARN)
	require.NotEmpty(t, rec.RequestContext.RequestID)
	require.Equal(t, "Unhandled", rec.ResponseContext.FunctionError)
	require.Equal(t, 200, rec.ResponseContext.StatusCode)
	require.Equal(t, "1.0", rec.Version)
	_, err = time.Parse(time.RFC3339, rec.Timestamp)
	require.NoError(t, err)
	info := rec.DDBStreamBatchInfo
	require.Equal(t, streamARN, info.StreamARN)
	require.NotEmpty(t, info.ShardID)
	require.Equal(t, bad[0].Change.SequenceNumber, info.StartSequenceNumber)
	require.Equal(t, bad[len(bad)-1].Change.SequenceNumber, info.EndSequenceNumber)
	require.Equal(t, len(bad), info.BatchSize)
	_, err = time.Parse(time.RFC3339, info.ApproximateArrivalOfFirstRecord)
	require.NoError(t, err)
	discarded := 0
	for _, r := range results {
		if r.Discarded {
			discarded++
			require.Equal(t, localesm.OutcomeFunctionError, r.Outcome)
			require.Equal(t, 2, r.Attempt)
		}
	}
	require.Equal(t, 1, discarded)

	// The mapping moves on past the discarded batch.
	putJob(t, ddb, table, "job-after")
	eventually(t, 10*time.Second, "the record after the discarded batch to be invoked", func() bool {
		invoked, _ := log.snapshot()
		return slices.Contains(jobIDs(invoked[len(invoked)-1]), "job-after")
	})
}

func TestStreamLatestSkipsEarlierRecords(t *testing.T) {
	t.Parallel()
	ddb := awstest.DynamoDB(t)
	table, streamARN := newStreamTable(t, ddb)
	putJob(t, ddb, table, "job-before")

	var log streamLog
	handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		log.invoke(ev)
		return events.DynamoDBEventResponse{}, nil
	}
	m, err := localesm.NewStreamMapping(localesm.StreamConfig{Client: awstest.Streams(t), Invoker: localesm.Func(handler),
		StreamARN: streamARN, StartingPosition: localesm.Latest, PollInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	stop := start(t, m.Run)
	// The mapping takes its LATEST iterator at some point after start: keep
	// writing until something arrives.
	for i := 0; ; i++ {
		putJob(t, ddb, table, fmt.Sprint("job-after-", i))
		invoked, _ := log.snapshot()
		if len(invoked) > 0 {
			break
		}
		require.Less(t, i, 100, "nothing was invoked")
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	invoked, _ := log.snapshot()
	for _, batch := range invoked {
		require.NotContains(t, jobIDs(batch), "job-before")
	}
}
