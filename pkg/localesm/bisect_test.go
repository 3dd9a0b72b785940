package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// fakeSender is an on-failure queue in memory: it keeps the records sent
// to it.
type fakeSender struct {
	mu   sync.Mutex
	sent []OnFailureRecord
}

func (f *fakeSender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	var rec OnFailureRecord
	if err := json.Unmarshal([]byte(aws.ToString(in.MessageBody)), &rec); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, rec)
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

func (f *fakeSender) records() []OnFailureRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

var _ MessageSender = (*fakeSender)(nil)

// streamRun records, per invocation, the keys the function got, and every
// settled result.
type streamRun struct {
	mu      sync.Mutex
	invoked [][]string
	results []StreamBatchResult
}

func (r *streamRun) invoke(ev events.DynamoDBEvent) []string {
	keys := make([]string, len(ev.Records))
	for i, rec := range ev.Records {
		keys[i] = rec.Change.Keys["job_id"].String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invoked = append(r.invoked, keys)
	return keys
}

func (r *streamRun) onBatch(res StreamBatchResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

func (r *streamRun) snapshot() ([][]string, []StreamBatchResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.invoked), slices.Clone(r.results)
}

// finished lists the keys of the records the results report finished, in
// the order they were finished.
func finished(results []StreamBatchResult) []string {
	var keys []string
	for _, r := range results {
		for _, rec := range r.Records[:r.Done] {
			keys = append(keys, rec.Change.Keys["job_id"].String())
		}
	}
	return keys
}

func keysOf(records []events.DynamoDBEventRecord) []string {
	keys := make([]string, len(records))
	for i, rec := range records {
		keys[i] = rec.Change.Keys["job_id"].String()
	}
	return keys
}

// TestStreamBisectIsolatesAPoisonRecord: one record of a batch of eight
// makes every invocation that carries it fail. With
// BisectBatchOnFunctionError and no retry at all (MaximumRetryAttempts 0)
// the batch is still halved until the poison record is alone, since a
// split is no retry; only that record is discarded, with an on-failure
// record of it alone, and its seven neighbours are finished, in shard
// order, each exactly once. Without bisection the first failure would
// discard all eight.
func TestStreamBisectIsolatesAPoisonRecord(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		keys := []string{"k1", "k2", "k3", "k4", "poison", "k6", "k7", "k8"}
		f := &fakeStreams{shards: []fakeShard{{id: "s", keys: slices.Clone(keys)}}, iterTypes: map[string][]streamtypes.ShardIteratorType{}}
		var run streamRun
		handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if slices.Contains(run.invoke(ev), "poison") {
				return events.DynamoDBEventResponse{}, errors.New("cannot process poison")
			}
			return events.DynamoDBEventResponse{}, nil
		}
		onFailure := &fakeSender{}
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, BatchSize: 8, PollInterval: 5 * time.Millisecond,
			BisectBatchOnFunctionError: true, MaximumRetryAttempts: new(0),
			OnFailure: &OnFailureDestination{Client: onFailure, QueueURL: "http://127.0.0.1:1/000000000000/stream-failures"},
			OnBatch:   run.onBatch,
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "the batch to be finished or discarded", func() bool {
			_, results := run.snapshot()
			return len(finished(results))+len(onFailure.records()) == len(keys)
		})
		stop()

		invoked, results := run.snapshot()
		require.Equal(t, [][]string{
			{"k1", "k2", "k3", "k4", "poison", "k6", "k7", "k8"}, // fails: split in two
			{"k1", "k2", "k3", "k4"},                             // finished
			{"poison", "k6", "k7", "k8"},                         // fails: split
			{"poison", "k6"},                                     // fails: split
			{"poison"},                                           // fails alone: no retry left, discarded
			{"k6"},
			{"k7", "k8"},
		}, invoked)
		require.Equal(t, []string{"k1", "k2", "k3", "k4", "k6", "k7", "k8"}, finished(results),
			"the neighbours are finished once each, in shard order")

		sent := onFailure.records()
		require.Len(t, sent, 1)
		info := sent[0].DDBStreamBatchInfo
		require.Equal(t, 1, info.BatchSize, "only the poison record is discarded")
		require.Equal(t, "s-4", info.StartSequenceNumber)
		require.Equal(t, "s-4", info.EndSequenceNumber)
		require.Equal(t, 4, sent[0].RequestContext.ApproximateInvokeCount, "the poison record was in four invocations")
		require.Equal(t, "Unhandled", sent[0].ResponseContext.FunctionError)

		var bisected, discarded []string
		for _, r := range results {
			if r.Bisected {
				bisected = append(bisected, keysOf(r.Records)[0])
				require.Equal(t, OutcomeFunctionError, r.Outcome)
				require.False(t, r.Discarded)
			}
			if r.Discarded {
				discarded = append(discarded, keysOf(r.Records)...)
			}
		}
		require.Equal(t, []string{"k1", "poison", "poison"}, bisected, "the first element of each bisected batch")
		require.Equal(t, []string{"poison"}, discarded)
		require.Equal(t, []int{1, 2, 2, 3, 4, 4, 3}, attempts(results), "a half's count goes on from its batch's")
	})
}

func attempts(results []StreamBatchResult) []int {
	out := make([]int, len(results))
	for i, r := range results {
		out[i] = r.Attempt
	}
	return out
}

// TestStreamBisectRetriesTheLoneRecordThenMovesOn: a record that fails
// alone is retried MaximumRetryAttempts times, like any batch, then
// discarded: the two splits before it used up none of its retries. The
// records after it in its batch run only after that, and the shard goes on
// with the records written later.
func TestStreamBisectRetriesTheLoneRecordThenMovesOn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{shards: []fakeShard{{id: "s", keys: []string{"k1", "poison", "k3"}}}, iterTypes: map[string][]streamtypes.ShardIteratorType{}}
		var run streamRun
		handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			if slices.Contains(run.invoke(ev), "poison") {
				return events.DynamoDBEventResponse{}, errors.New("cannot process poison")
			}
			return events.DynamoDBEventResponse{}, nil
		}
		onFailure := &fakeSender{}
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, BatchSize: 10, PollInterval: 5 * time.Millisecond,
			BisectBatchOnFunctionError: true, MaximumRetryAttempts: new(2),
			OnFailure: &OnFailureDestination{Client: onFailure, QueueURL: "http://127.0.0.1:1/000000000000/stream-failures"},
			OnBatch:   run.onBatch,
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "the first batch to be settled", func() bool {
			_, results := run.snapshot()
			return len(finished(results)) == 2
		})
		f.mu.Lock()
		f.shards[0].keys = append(f.shards[0].keys, "k4") // written after the discard
		f.mu.Unlock()
		waitFor(t, time.Minute, "the later record", func() bool {
			_, results := run.snapshot()
			return len(finished(results)) == 3
		})
		stop()

		invoked, results := run.snapshot()
		require.Equal(t, [][]string{
			{"k1", "poison", "k3"}, // fails: split into [k1] and [poison k3]
			{"k1"},
			{"poison", "k3"}, // fails: split
			{"poison"},       // fails alone
			{"poison"},       // retry 1
			{"poison"},       // retry 2: retries exhausted, discarded
			{"k3"},
			{"k4"},
		}, invoked)
		require.Equal(t, []string{"k1", "k3", "k4"}, finished(results))
		sent := onFailure.records()
		require.Len(t, sent, 1)
		require.Equal(t, 1, sent[0].DDBStreamBatchInfo.BatchSize)
		require.Equal(t, "s-1", sent[0].DDBStreamBatchInfo.StartSequenceNumber)
		require.Equal(t, 5, sent[0].RequestContext.ApproximateInvokeCount)
	})
}

// TestStreamBisectWithReportBatchItemFailures: AWS documents that a failed
// invocation is bisected whatever ReportBatchItemFailures says, and that a
// partial batch response is "bisected at the returned sequence number":
// the records before it are done, and only the remaining records are
// retried, as one batch (not halved). Here the function first reports
// "flaky" failed, then fails outright on every batch with "crash" in it.
//
// Which retries the remaining records have used when they are later
// bisected is not documented: this mapping counts the checkpoint retry
// (without it a function that always reports its first record would be
// retried forever), and the halves keep that count.
func TestStreamBisectWithReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{shards: []fakeShard{{id: "s", keys: []string{"k1", "k2", "flaky", "k4", "crash", "k6"}}}, iterTypes: map[string][]streamtypes.ShardIteratorType{}}
		var run streamRun
		var mu sync.Mutex
		flakyFailed := false
		handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			keys := run.invoke(ev)
			mu.Lock()
			defer mu.Unlock()
			for i, k := range keys {
				switch {
				case k == "crash":
					return events.DynamoDBEventResponse{}, errors.New("crash")
				case k == "flaky" && !flakyFailed:
					flakyFailed = true
					return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
						{ItemIdentifier: ev.Records[i].Change.SequenceNumber},
					}}, nil
				}
			}
			return events.DynamoDBEventResponse{}, nil
		}
		onFailure := &fakeSender{}
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, BatchSize: 10, PollInterval: 5 * time.Millisecond,
			BisectBatchOnFunctionError: true, ReportBatchItemFailures: true, MaximumRetryAttempts: new(2),
			OnFailure: &OnFailureDestination{Client: onFailure, QueueURL: "http://127.0.0.1:1/000000000000/stream-failures"},
			OnBatch:   run.onBatch,
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "the batch to be finished or discarded", func() bool {
			_, results := run.snapshot()
			return len(finished(results))+len(onFailure.records()) == 6
		})
		stop()

		invoked, results := run.snapshot()
		require.Equal(t, [][]string{
			{"k1", "k2", "flaky", "k4", "crash", "k6"}, // partial: k1 k2 done, checkpoint at flaky (retry 1)
			{"flaky", "k4", "crash", "k6"},             // the rest, whole; crashes: split
			{"flaky", "k4"},
			{"crash", "k6"}, // crashes: split
			{"crash"},       // fails alone (retry 1 already used)
			{"crash"},       // retry 2: exhausted, discarded
			{"k6"},
		}, invoked)
		require.Equal(t, OutcomePartialFailure, results[0].Outcome)
		require.Equal(t, 2, results[0].Done)
		require.False(t, results[0].Bisected, "a partial batch response is not halved")
		require.True(t, results[1].Bisected, "a failed invocation is bisected whatever ReportBatchItemFailures says")
		require.Equal(t, []string{"k1", "k2", "flaky", "k4", "k6"}, finished(results))
		sent := onFailure.records()
		require.Len(t, sent, 1)
		require.Equal(t, 1, sent[0].DDBStreamBatchInfo.BatchSize)
		require.Equal(t, "s-4", sent[0].DDBStreamBatchInfo.StartSequenceNumber)
	})
}

// TestStreamBisectOnTimeoutButNotOnAnInvalidResponse: a timeout is a failed
// invocation and is bisected; a malformed partial batch response fails the
// whole batch but is retried whole.
func TestStreamBisectOnTimeoutButNotOnAnInvalidResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{shards: []fakeShard{{id: "s", keys: []string{"k1", "slow", "k3", "k4"}}}, iterTypes: map[string][]streamtypes.ShardIteratorType{}}
		var run streamRun
		calls := 0
		handler := func(ctx context.Context, ev events.DynamoDBEvent) (json.RawMessage, error) {
			keys := run.invoke(ev)
			run.mu.Lock()
			calls++
			n := calls
			run.mu.Unlock()
			if n == 1 {
				return json.RawMessage(`{"batchItemFailures":[{"itemIdentifier":""}]}`), nil // invalid: retried whole
			}
			if slices.Contains(keys, "slow") && n < 4 {
				<-ctx.Done() // times out
				return nil, ctx.Err()
			}
			return json.RawMessage(`{}`), nil
		}
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, BatchSize: 10, PollInterval: 5 * time.Millisecond, FunctionTimeout: time.Second,
			BisectBatchOnFunctionError: true, ReportBatchItemFailures: true,
			OnBatch: run.onBatch,
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "every record to be finished", func() bool {
			_, results := run.snapshot()
			return len(finished(results)) == 4
		})
		stop()
		invoked, results := run.snapshot()
		require.Equal(t, [][]string{
			{"k1", "slow", "k3", "k4"}, // invalid response: retried whole
			{"k1", "slow", "k3", "k4"}, // times out: split
			{"k1", "slow"},             // times out: split
			{"k1"},
			{"slow"},
			{"k3", "k4"},
		}, invoked)
		require.Equal(t, OutcomeInvalidResponse, results[0].Outcome)
		require.False(t, results[0].Bisected)
		require.Equal(t, OutcomeTimeout, results[1].Outcome)
		require.True(t, results[1].Bisected)
		require.Equal(t, []string{"k1", "slow", "k3", "k4"}, finished(results))
	})
}
