package localesm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// kafkaHandler is a test function: it gets Lambda's Kafka event and
// answers any JSON.
type kafkaHandler = func(ctx context.Context, ev events.KafkaEvent) (json.RawMessage, error)

// kafkaLog records what the function got and what the mapping settled.
type kafkaLog struct {
	mu      sync.Mutex
	invoked []map[string][]int64 // per invocation, offsets per topic-partition
	events  []events.KafkaEvent
	results []KafkaBatchResult
}

func (l *kafkaLog) record(ev events.KafkaEvent) int {
	offsets := map[string][]int64{}
	for tp, recs := range ev.Records {
		for _, r := range recs {
			offsets[tp] = append(offsets[tp], r.Offset)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.invoked = append(l.invoked, offsets)
	l.events = append(l.events, ev)
	return len(l.invoked)
}

func (l *kafkaLog) onBatch(r KafkaBatchResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, r)
}

func (l *kafkaLog) batches() []map[string][]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.invoked)
}

func (l *kafkaLog) settled() []KafkaBatchResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.results)
}

// wrap records each event, then runs h.
func (l *kafkaLog) wrap(h kafkaHandler) kafkaHandler {
	return func(ctx context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
		l.record(ev)
		return h(ctx, ev)
	}
}

func succeed(context.Context, events.KafkaEvent) (json.RawMessage, error) {
	return json.RawMessage(`{"batchItemFailures":[]}`), nil
}

// fakeDestination is an on-failure destination in memory.
type fakeDestination struct {
	mu    sync.Mutex
	sent  []KafkaFailure
	fails int // the next Send calls that fail
}

func (d *fakeDestination) Send(_ context.Context, f KafkaFailure) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fails > 0 {
		d.fails--
		return errors.New("destination down")
	}
	d.sent = append(d.sent, f)
	return nil
}

func (d *fakeDestination) failures() []KafkaFailure {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.sent)
}

var _ KafkaOnFailureDestination = (*fakeDestination)(nil)

// testKafkaConfig completes cfg for a mapping on the fake: the fake's
// topic, a group, the handler recorded by log.
func testKafkaConfig(cfg KafkaConfig, log *kafkaLog, h kafkaHandler) KafkaConfig {
	cfg.BootstrapServers = []string{"127.0.0.1:9092"}
	cfg.Topics = []string{testTopic}
	if cfg.ConsumerGroupID == "" {
		cfg.ConsumerGroupID = "g"
	}
	if cfg.Invoker == nil {
		cfg.Invoker = Func(log.wrap(h))
	}
	cfg.OnBatch = log.onBatch
	return cfg
}

// runKafka starts a mapping on the fake and returns the function that
// stops it and checks that Run returned nil.
func runKafka(t *testing.T, k *fakeKafka, cfg KafkaConfig) (stop func()) {
	t.Helper()
	m, err := NewKafkaMapping(cfg)
	require.NoError(t, err)
	m.newConsumer = k.newConsumer
	stop = runMapping(t, m.Run)
	synctest.Wait() // joined, partitions assigned
	return stop
}

func tp0(offsets ...int64) map[string][]int64 { return map[string][]int64{testTopic + "-0": offsets} }

func TestKafkaBatchingWindowStartsAtTheFirstRecord(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		runKafka(t, k, testKafkaConfig(KafkaConfig{BatchSize: 4, MaximumBatchingWindow: 2 * time.Second}, &log, succeed))
		k.produce(0, nil, []byte("a"))
		time.Sleep(time.Second)
		k.produce(0, nil, []byte("b"))
		time.Sleep(time.Second - time.Nanosecond)
		k.produce(0, nil, []byte("c")) // wakes the mapping 1ns before the window ends
		synctest.Wait()
		require.Empty(t, log.batches(), "the window runs from the first record: 1ns left")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2)}, log.batches(), "the window is over")

		// BatchSize records make a batch at once.
		for range 4 {
			k.produce(0, nil, []byte("d"))
		}
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2), tp0(3, 4, 5, 6)}, log.batches())
		// One over BatchSize: a full batch now, the last record after the window.
		for range 5 {
			k.produce(0, nil, []byte("e"))
		}
		synctest.Wait()
		require.Len(t, log.batches(), 3)
		require.Equal(t, tp0(7, 8, 9, 10), log.batches()[2])
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, tp0(11), log.batches()[3])
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 12}, k.committed("g"))
	})
}

func TestKafkaDefaultWindowIs500msAndNoBatchingWindowIsNone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window, wait time.Duration
	}{{0, 500 * time.Millisecond}, {NoBatchingWindow, 0}} {
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 1)
			var log kafkaLog
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: tc.window}, &log, succeed))
			k.produce(0, nil, []byte("a"))
			if tc.wait > 0 {
				time.Sleep(tc.wait - time.Nanosecond)
				synctest.Wait()
				require.Empty(t, log.batches(), "window %v", tc.window)
				time.Sleep(time.Nanosecond)
			}
			synctest.Wait()
			require.Equal(t, []map[string][]int64{tp0(0)}, log.batches(), "window %v", tc.window)
		})
	}
}

// TestKafkaOneInvocationPerPartitionAtATime: a batch may hold several
// partitions, and a partition is in one invocation at a time: its records
// that arrive meanwhile wait, while other partitions' records run.
func TestKafkaOneInvocationPerPartitionAtATime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 2)
		var log kafkaLog
		release := make(chan struct{})
		var mu sync.Mutex
		inFlight, most := map[string]int{}, 0
		h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
			mu.Lock()
			for tp := range ev.Records {
				inFlight[tp]++
				most = max(most, inFlight[tp])
			}
			mu.Unlock()
			if n := len(log.batches()); n == 1 {
				<-release
			}
			mu.Lock()
			for tp := range ev.Records {
				inFlight[tp]--
			}
			mu.Unlock()
			return nil, nil
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		k.produce(0, nil, []byte("p0-a"))
		synctest.Wait() // the first invocation holds partition 0
		k.produce(0, nil, []byte("p0-b"))
		k.produce(1, nil, []byte("p1-a"))
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0), {testTopic + "-1": {0}}}, log.batches(), "partition 1 runs; partition 0's next record waits")
		close(release)
		synctest.Wait()
		require.Equal(t, tp0(1), log.batches()[2])

		// With nothing in flight, one batch takes both partitions.
		k.produce(0, nil, []byte("p0-c"))
		k.produce(1, nil, []byte("p1-b"))
		synctest.Wait()
		require.Equal(t, map[string][]int64{testTopic + "-0": {2}, testTopic + "-1": {1}}, log.batches()[3])
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 1, most, "never two invocations of one partition at once")
	})
}

func TestKafkaEventCarriesTheRecords(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		cfg := testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow, EventSource: EventSourceMSK, ClusterARN: testClusterARN}, &log, succeed)
		runKafka(t, k, cfg)
		k.produce(0, []byte("job-1"), []byte("v"))
		synctest.Wait()
		log.mu.Lock()
		defer log.mu.Unlock()
		require.Len(t, log.events, 1)
		ev := log.events[0]
		require.Equal(t, "aws:kafka", ev.EventSource)
		require.Equal(t, testClusterARN, ev.EventSourceARN)
		require.Equal(t, "127.0.0.1:9092", ev.BootstrapServers)
		r := ev.Records[testTopic+"-0"][0]
		require.Equal(t, "am9iLTE=", r.Key)
		require.Equal(t, "dg==", r.Value)
		require.Equal(t, "CREATE_TIME", r.TimestampType)
	})
}

// TestKafkaPartialResponseCommitsUpToTheLowestReportedOffset: per
// partition, the commit stops at the lowest offset reported, and the retry
// carries every record from it, reported or not.
func TestKafkaPartialResponseCommitsUpToTheLowestReportedOffset(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 2)
		var log kafkaLog
		h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
			if len(log.batches()) > 1 {
				return json.RawMessage(`{"batchItemFailures":null}`), nil
			}
			resp := kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{
				{ItemIdentifier: kafka.ItemIdentifier{TopicPartition: testTopic + "-0", Offset: 4}},
				{ItemIdentifier: kafka.ItemIdentifier{TopicPartition: testTopic + "-0", Offset: 2}},
			}}
			b, err := json.Marshal(resp)
			return b, err
		}
		for i := range 5 {
			k.produce(0, nil, fmt.Appendf(nil, "p0-%d", i))
		}
		k.produce(1, nil, []byte("p1"))
		runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		synctest.Wait()
		time.Sleep(10 * time.Second) // the retry's wait
		synctest.Wait()
		require.Equal(t, []map[string][]int64{
			{testTopic + "-0": {0, 1, 2, 3, 4}, testTopic + "-1": {0}},
			tp0(2, 3, 4), // 3 was not reported: it runs again with the others
		}, log.batches())
		commits := k.commits("g")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 2, {testTopic, 1}: 1}, commits[0], "exactly up to the lowest reported offset")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 5}, commits[1])
		res := log.settled()
		require.Equal(t, OutcomePartialFailure, res[0].Outcome)
		require.Equal(t, map[string]int64{testTopic + "-0": 2, testTopic + "-1": 1}, res[0].Committed)
	})
}

// TestKafkaWholeBatchFailuresCommitNothing: every way of failing a batch
// as a whole commits nothing and retries the same records; a response is
// ignored without ReportBatchItemFailures.
func TestKafkaWholeBatchFailuresCommitNothing(t *testing.T) {
	t.Parallel()
	respond := func(body string) kafkaHandler {
		return func(context.Context, events.KafkaEvent) (json.RawMessage, error) { return json.RawMessage(body), nil }
	}
	cases := []struct {
		name    string
		report  bool
		outcome Outcome
		fail    kafkaHandler
	}{
		{"function error", true, OutcomeFunctionError, func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			return nil, errors.New("batch failed")
		}},
		{"function error without reporting", false, OutcomeFunctionError, func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			return nil, errors.New("batch failed")
		}},
		{"panic", true, OutcomeFunctionError, func(context.Context, events.KafkaEvent) (json.RawMessage, error) { panic("boom") }},
		{"timeout", true, OutcomeTimeout, func(ctx context.Context, _ events.KafkaEvent) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, nil
		}},
		{"an offset not in the batch", true, OutcomeInvalidResponse, respond(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":1}},{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":9}}]}`)},
		{"a partition not in the batch", true, OutcomeInvalidResponse, respond(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-7","offset":1}}]}`)},
		{"a string itemIdentifier", true, OutcomeInvalidResponse, respond(`{"batchItemFailures":[{"itemIdentifier":"fifoworker-commands-0-1"}]}`)},
		{"not an object", true, OutcomeInvalidResponse, respond(`[1]`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				k := newFakeKafka(testTopic, 1)
				var log kafkaLog
				h := func(ctx context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
					if len(log.batches()) == 1 {
						return tc.fail(ctx, ev)
					}
					return nil, nil
				}
				for range 3 {
					k.produce(0, nil, []byte("v"))
				}
				runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: tc.report, FunctionTimeout: time.Second, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
				synctest.Wait()
				require.Empty(t, k.commits("g"), "nothing is committed after a failed batch")
				time.Sleep(time.Minute)
				synctest.Wait()
				require.Equal(t, []map[string][]int64{tp0(0, 1, 2), tp0(0, 1, 2)}, log.batches(), "the same records are retried whole")
				require.Equal(t, []map[kafkaTP]int64{{{testTopic, 0}: 3}}, k.commits("g"))
				require.Equal(t, tc.outcome, log.settled()[0].Outcome)
			})
		})
	}
	t.Run("a response is ignored without ReportBatchItemFailures", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 1)
			var log kafkaLog
			k.produce(0, nil, []byte("v"))
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &log,
				respond(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":0}}]}`)))
			synctest.Wait()
			require.Equal(t, []map[kafkaTP]int64{{{testTopic, 0}: 1}}, k.commits("g"))
			require.Equal(t, OutcomeSuccess, log.settled()[0].Outcome)
		})
	})
}

// TestKafkaRetriesThenOnFailure: MaximumRetryAttempts retries, then the
// on-failure destination gets the records' metadata and the mapping
// commits past them. Infinite retries with a destination stop at 10.
func TestKafkaRetriesThenOnFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retries     *int
		invocations int
	}{{new(0), 1}, {new(2), 3}, {new(12), 13}, {nil, 11}, {new(-1), 11}} {
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 1)
			var log kafkaLog
			dest := &fakeDestination{fails: 2}
			for range 3 {
				k.produce(0, []byte("k"), []byte("v"))
			}
			fail := func(context.Context, events.KafkaEvent) (json.RawMessage, error) { return nil, errors.New("no") }
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumRetryAttempts: tc.retries, OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow}, &log, fail))
			time.Sleep(24 * time.Hour)
			synctest.Wait()
			require.Len(t, log.batches(), tc.invocations, "retries %v", tc.retries)
			require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 3}, k.committed("g"), "committed past the records given up")
			sent := dest.failures()
			require.Len(t, sent, 1, "the destination's failures were retried, the record sent once")
			rec := sent[0].Record
			require.Equal(t, ConditionRetryAttemptsExhausted, rec.RequestContext.Condition)
			require.Equal(t, tc.invocations, rec.RequestContext.ApproximateInvokeCount)
			require.Equal(t, &OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: "Unhandled"}, rec.ResponseContext)
			require.Equal(t, 3, rec.KafkaBatchInfo.BatchSize)
			require.Equal(t, "127.0.0.1:9092", rec.KafkaBatchInfo.BootstrapServers)
			require.Empty(t, rec.KafkaBatchInfo.EventSourceARN)
			require.Equal(t, "0", rec.KafkaBatchInfo.RecordsInfo[testTopic+"-0"].FirstRecordOffset)
			require.Equal(t, "2", rec.KafkaBatchInfo.RecordsInfo[testTopic+"-0"].LastRecordOffset)
			require.Len(t, sent[0].Records, 3)
			last := log.settled()[len(log.settled())-1]
			require.Equal(t, tp0(0, 1, 2), last.Discarded)
		})
	}
}

// TestKafkaPartialResponseThenRetriesRunOut: what is given up is the retry
// span only; what came before the lowest reported offset stays committed.
// The retries run out at offset 2, the commit having stopped there: its
// first failure (the second invocation, which moved the commit from 1 to
// 2) and one retry.
func TestKafkaPartialResponseThenRetriesRunOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		dest := &fakeDestination{}
		for range 4 {
			k.produce(0, nil, []byte("v"))
		}
		// The first invocation reports offset 1, the next ones offset 2:
		// the progress (offset 1) is committed, not given up.
		h := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			offset := min(len(log.batches()), 2)
			return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":%d}}]}`, offset), nil
		}
		// Bisection is on: it splits failed invocations, never a partial
		// batch response.
		runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, BisectBatchOnFunctionError: true,
			MaximumRetryAttempts: new(1), OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2, 3), tp0(1, 2, 3), tp0(2, 3)}, log.batches())
		require.Equal(t, []map[kafkaTP]int64{{{testTopic, 0}: 1}, {{testTopic, 0}: 2}, {{testTopic, 0}: 4}}, k.commits("g"))
		sent := dest.failures()
		require.Len(t, sent, 1)
		var given []int64
		for _, r := range sent[0].Records {
			given = append(given, r.Offset)
		}
		require.Equal(t, []int64{2, 3}, given, "offset 1 finished on the last retry: it is not given up")
		require.Equal(t, "2", sent[0].Record.KafkaBatchInfo.RecordsInfo[testTopic+"-0"].FirstRecordOffset)
		require.Equal(t, "3", sent[0].Record.KafkaBatchInfo.RecordsInfo[testTopic+"-0"].LastRecordOffset)
		require.Equal(t, 3, sent[0].Record.RequestContext.ApproximateInvokeCount)
		require.Empty(t, sent[0].Record.ResponseContext.FunctionError, "the function answered")
	})
}

// TestKafkaMaximumRecordAge: a record older than MaximumRecordAge is given
// up without being invoked; one exactly that old still runs.
func TestKafkaMaximumRecordAge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		dest := &fakeDestination{}
		now := time.Now()
		k.produceAt(0, now.Add(-time.Minute-time.Millisecond), nil, []byte("old"))
		k.produceAt(0, now.Add(-time.Minute), nil, []byte("just young enough"))
		runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumRecordAge: time.Minute, OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow, Now: time.Now}, &log, succeed))
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(1)}, log.batches())
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 2}, k.committed("g"))
		sent := dest.failures()
		require.Len(t, sent, 1)
		require.Equal(t, ConditionRecordAgeExceeded, sent[0].Record.RequestContext.Condition)
		require.Nil(t, sent[0].Record.ResponseContext, "never invoked")
		require.Equal(t, 0, sent[0].Record.RequestContext.ApproximateInvokeCount)
		require.Equal(t, OutcomeExpired, log.settled()[0].Outcome)

		// A batch with nothing expired gives nothing up: no empty record
		// reaches the destination, and no expiry is settled.
		k.produce(0, nil, []byte("young"))
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(1), tp0(2)}, log.batches())
		require.Len(t, dest.failures(), 1)
		var outcomes []Outcome
		for _, r := range log.settled() {
			outcomes = append(outcomes, r.Outcome)
		}
		require.Equal(t, []Outcome{OutcomeExpired, OutcomeSuccess, OutcomeSuccess}, outcomes)
	})
}

// TestKafkaBisectNarrowsAFailureToItsRecord: halves run in order, a split
// uses up no retry, and only the poison record is given up.
func TestKafkaBisectNarrowsAFailureToItsRecord(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		dest := &fakeDestination{}
		for i := range 8 {
			k.produce(0, nil, fmt.Appendf(nil, "%d", i))
		}
		h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
			for _, r := range ev.Records[testTopic+"-0"] {
				if r.Offset == 5 {
					return nil, errors.New("poison")
				}
			}
			return nil, nil
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{BisectBatchOnFunctionError: true, MaximumRetryAttempts: new(0), OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []map[string][]int64{
			tp0(0, 1, 2, 3, 4, 5, 6, 7), tp0(0, 1, 2, 3), tp0(4, 5, 6, 7), tp0(4, 5), tp0(4), tp0(5), tp0(6, 7),
		}, log.batches())
		sent := dest.failures()
		require.Len(t, sent, 1)
		require.Equal(t, []int64{5}, []int64{sent[0].Records[0].Offset})
		require.Equal(t, 4, sent[0].Record.RequestContext.ApproximateInvokeCount, "the poison record was in four invocations")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 8}, k.committed("g"))
		var bisected int
		for _, r := range log.settled() {
			if r.Bisected {
				bisected++
			}
		}
		require.Equal(t, 3, bisected)
	})
}

// TestKafkaOffsetGapsNeverStall: offsets missing from a partition
// (compaction, transaction markers) are never waited for: a commit goes to
// the next record that exists.
func TestKafkaOffsetGapsNeverStall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		k.produce(0, nil, []byte("0"))
		k.produce(0, nil, []byte("1"))
		k.skip(0, 3) // 2, 3, 4 do not exist
		k.produce(0, nil, []byte("5"))
		k.produce(0, nil, []byte("6"))
		h := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			if len(log.batches()) == 1 {
				return json.RawMessage(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":5}}]}`), nil
			}
			return nil, nil
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0, 1, 5, 6), tp0(5, 6)}, log.batches())
		require.Equal(t, []map[kafkaTP]int64{{{testTopic, 0}: 5}, {{testTopic, 0}: 7}}, k.commits("g"), "5, the next record after the gap, not 2")

		// A gap at the end of a batch: the commit goes past the last record,
		// and the next record, after the gap, runs.
		k.skip(0, 10)
		k.produce(0, nil, []byte("17"))
		synctest.Wait()
		require.Equal(t, tp0(17), log.batches()[2])
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 18}, k.committed("g"))
	})
}

// TestKafkaEventsStayUnderMaxRequestSize: a batch closes before its event
// would cross MaxRequestSize, without waiting for the window.
func TestKafkaEventsStayUnderMaxRequestSize(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		sizing := &payloadSizes{}
		value := []byte(strings.Repeat("x", 2<<20)) // 2 MiB: 2.7 MiB as base64, two per event
		for range 3 {
			k.produce(0, nil, value)
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{Invoker: sizing, MaximumBatchingWindow: 300 * time.Second}, &log, nil))
		synctest.Wait()
		require.Len(t, log.settled(), 1)
		require.Equal(t, tp0(0, 1), log.settled()[0].Offsets, "a full event does not wait for the window")
		time.Sleep(300 * time.Second)
		synctest.Wait()
		require.Equal(t, tp0(2), log.settled()[1].Offsets)
		for _, n := range sizing.got() {
			require.LessOrEqual(t, n, MaxRequestSize)
		}
	})
}

// payloadSizes is an invoker that keeps the size of each event it is
// given, and succeeds without decoding it (megabytes of JSON).
type payloadSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (p *payloadSizes) Invoke(_ context.Context, inv Invocation) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes = append(p.sizes, len(inv.Payload))
	return Result{Status: StatusOK, Payload: []byte("null")}, nil
}

func (p *payloadSizes) got() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sizes)
}

type invokerFunc func(context.Context, Invocation) (Result, error)

func (f invokerFunc) Invoke(ctx context.Context, inv Invocation) (Result, error) { return f(ctx, inv) }

// TestKafkaARecordTooLargeForAnEvent is given up as
// MaximumPayloadSizeExceeded, never invoked; without a destination it
// holds its partition, and only its partition.
func TestKafkaARecordTooLargeForAnEvent(t *testing.T) {
	t.Parallel()
	huge := []byte(strings.Repeat("x", 5<<20)) // 6.7 MiB as base64
	t.Run("with a destination", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 1)
			var log kafkaLog
			dest := &fakeDestination{}
			k.produce(0, []byte("big"), huge)
			k.produce(0, nil, []byte("small"))
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumRetryAttempts: new(3), OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow}, &log, succeed))
			synctest.Wait()
			require.Equal(t, []map[string][]int64{tp0(1)}, log.batches())
			sent := dest.failures()
			require.Len(t, sent, 1)
			require.Equal(t, ConditionMaximumPayloadSizeExceeded, sent[0].Record.RequestContext.Condition)
			require.Nil(t, sent[0].Record.ResponseContext)
			require.Greater(t, sent[0].Record.KafkaBatchInfo.PayloadSize, MaxRequestSize)
			require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 2}, k.committed("g"))
		})
	})
	t.Run("without one", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 2)
			var log kafkaLog
			k.produce(0, nil, huge)
			k.produce(0, nil, []byte("behind it"))
			k.produce(1, nil, []byte("other partition"))
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &log, succeed))
			time.Sleep(time.Minute)
			synctest.Wait()
			require.Equal(t, []map[string][]int64{{testTopic + "-1": {0}}}, log.batches())
			require.Equal(t, map[kafkaTP]int64{{testTopic, 1}: 1}, k.committed("g"), "partition 0 is held, not skipped")
			var tooLarge int
			for _, r := range log.settled() {
				if r.Outcome == OutcomeTooLarge {
					tooLarge++
				}
			}
			require.Greater(t, tooLarge, 1, "reported at every try")
		})
	})
}

// TestKafkaRevokedPartitionIsNotCommittedByItsOldOwner: a partition
// revoked while its invocation runs is neither committed nor retried by the
// member that lost it; its new owner starts from the last commit.
func TestKafkaRevokedPartitionIsNotCommittedByItsOldOwner(t *testing.T) {
	t.Parallel()
	for _, fails := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 2)
			var logA, logB kafkaLog
			release := make(chan struct{})
			blockP1 := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
				if _, ok := ev.Records[testTopic+"-1"]; ok {
					<-release
					if fails {
						return nil, errors.New("failed after its partition was revoked")
					}
				}
				return nil, nil
			}
			runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &logA, blockP1))
			k.produce(1, nil, []byte("p1"))
			synctest.Wait() // A's invocation holds partition 1
			never := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
				return nil, errors.New("B never finishes")
			}
			stopB := runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &logB, never))
			require.NotEmpty(t, logB.batches(), "partition 1 went to B, which reads it from the last commit")
			close(release)
			time.Sleep(time.Minute)
			synctest.Wait()
			require.Len(t, logA.batches(), 1, "A does not retry a partition it lost (fails %v)", fails)
			res := logA.settled()
			require.Len(t, res, 1)
			require.Empty(t, res[0].Committed, "A lost partition 1 during the invocation")
			require.Empty(t, k.commits("g"))

			// A still holds partition 0 and commits it.
			k.produce(0, nil, []byte("p0"))
			synctest.Wait()
			require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 1}, k.committed("g"))
			stopB()
		})
	}
}

// TestKafkaStopCommitsWhatTheFunctionFinished: a function that returns
// after the mapping was told to stop still has its records committed, and
// Run waits for it.
func TestKafkaStopCommitsWhatTheFunctionFinished(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		release := make(chan struct{})
		h := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			<-release // ignores its context
			return nil, nil
		}
		k.produce(0, nil, []byte("v"))
		stop := runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow, FunctionTimeout: 14 * time.Minute}, &log, h))
		stopped := make(chan struct{})
		go func() {
			stop()
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Run returned while an invocation was in flight")
		default:
		}
		close(release)
		<-stopped
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 1}, k.committed("g"))
	})
}

// TestKafkaCommitFailuresAreRetried: a commit that fails is retried; the
// records are not invoked again.
func TestKafkaCommitFailuresAreRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		k.failCommits = 2
		var log kafkaLog
		k.produce(0, nil, []byte("v"))
		runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &log, succeed))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, log.batches(), 1)
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 1}, k.committed("g"))
		require.Equal(t, map[string]int64{testTopic + "-0": 1}, log.settled()[0].Committed)
	})
}

// TestKafkaInvokeErrorsUseNoAttempt: an invocation that could not be made
// is tried again without using up a retry.
func TestKafkaInvokeErrorsUseNoAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		var calls int
		var mu sync.Mutex
		inner := Func(log.wrap(succeed))
		flaky := invokerFunc(func(ctx context.Context, inv Invocation) (Result, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n <= 2 {
				return Result{}, errors.New("emulator unreachable")
			}
			return inner.Invoke(ctx, inv)
		})
		k.produce(0, nil, []byte("v"))
		runKafka(t, k, testKafkaConfig(KafkaConfig{Invoker: flaky, MaximumRetryAttempts: new(0), OnFailure: &fakeDestination{}, MaximumBatchingWindow: NoBatchingWindow}, &log, nil))
		time.Sleep(time.Minute)
		synctest.Wait()
		res := log.settled()
		require.Len(t, res, 3)
		require.Equal(t, []Outcome{OutcomeInvokeError, OutcomeInvokeError, OutcomeSuccess}, []Outcome{res[0].Outcome, res[1].Outcome, res[2].Outcome})
		require.Equal(t, 1, res[2].Attempt)
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 1}, k.committed("g"))
	})
}

// TestKafkaStartingPosition: without a committed offset the group starts
// where StartingPosition says; with one, it resumes there.
func TestKafkaStartingPosition(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		t0 := time.Now()
		k.produce(0, nil, []byte("0"))
		time.Sleep(time.Second)
		k.produce(0, nil, []byte("1"))
		for _, tc := range []struct {
			group string
			start StartingPosition
			at    time.Time
			want  []map[string][]int64
		}{
			{"trim", TrimHorizon, time.Time{}, []map[string][]int64{tp0(0, 1)}},
			{"latest", Latest, time.Time{}, nil},
			{"at", AtTimestamp, t0.Add(time.Second), []map[string][]int64{tp0(1)}},
		} {
			var log kafkaLog
			stop := runKafka(t, k, testKafkaConfig(KafkaConfig{ConsumerGroupID: tc.group, StartingPosition: tc.start, StartingPositionTimestamp: tc.at, MaximumBatchingWindow: NoBatchingWindow, Now: time.Now}, &log, succeed))
			synctest.Wait()
			require.Equal(t, tc.want, log.batches(), tc.group)
			stop()
		}
		// The group "latest" committed nothing: it has no offset, and starts
		// at the end again. The group "trim" resumes after its commit.
		k.produce(0, nil, []byte("2"))
		var log kafkaLog
		stop := runKafka(t, k, testKafkaConfig(KafkaConfig{ConsumerGroupID: "trim", StartingPosition: Latest, MaximumBatchingWindow: NoBatchingWindow}, &log, succeed))
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(2)}, log.batches(), "a committed offset wins over StartingPosition")
		stop()
		require.Equal(t, maps.Clone(map[kafkaTP]int64{{testTopic, 0}: 3}), k.committed("trim"))
	})
}

// TestKafkaPausesAPartitionThatWaits: a partition whose buffered records
// make a batch is paused, so a partition held by a long invocation does not
// fill memory, and resumed once its records are batched; nothing is lost.
func TestKafkaPausesAPartitionThatWaits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		release := make(chan struct{})
		h := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			if len(log.batches()) == 1 {
				<-release
			}
			return nil, nil
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{BatchSize: 2, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		paused := func() bool {
			k.mu.Lock()
			defer k.mu.Unlock()
			return k.group("g").members[0].paused[kafkaTP{testTopic, 0}]
		}
		k.produce(0, nil, []byte("0"))
		synctest.Wait() // its invocation holds the partition
		k.produce(0, nil, []byte("1"))
		synctest.Wait()
		require.False(t, paused(), "one record waits: under BatchSize")
		k.produce(0, nil, []byte("2"))
		synctest.Wait()
		require.True(t, paused(), "exactly a batch's worth waits: fetching stops")
		for i := range 4 {
			k.produce(0, nil, fmt.Appendf(nil, "%d", i+3))
		}
		synctest.Wait()
		require.True(t, paused())
		close(release)
		synctest.Wait()
		require.False(t, paused())
		var all []int64
		for _, b := range log.batches() {
			all = append(all, b[testTopic+"-0"]...)
		}
		require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6}, all, "every record once, in order")
	})
}

// TestKafkaEventOfExactlyMaxRequestSize is invoked; one byte more, an
// event of 6,291,456 bytes, is not: Lambda's error reads "Request must be
// smaller than 6291456 bytes".
func TestKafkaEventOfExactlyMaxRequestSize(t *testing.T) {
	t.Parallel()
	src := kafkaSource{eventSource: EventSourceSelfManagedKafka, bootstrap: "127.0.0.1:9092"}
	const valueSize = 4 << 20
	// A header key grows the event one byte per character: pad it to size.
	// The value's base64 is counted, not encoded: it needs no escaping.
	sized := func(size int) kgo.RecordHeader {
		h := kgo.RecordHeader{Key: "h", Value: nil}
		r := kafkaRec(0, 0, nil, []byte{})
		r.Headers = []kgo.RecordHeader{h}
		r.Timestamp = time.Now().Truncate(time.Millisecond) // as the fake stamps it
		n := len(src.encode([]kafkaPart{{tp: kafkaTP{testTopic, 0}, recs: []*kafkaRecord{newKafkaRecord(r, time.Time{})}}})) +
			base64.StdEncoding.EncodedLen(valueSize)
		h.Key += strings.Repeat("h", size-n)
		return h
	}
	for _, tc := range []struct {
		size    int
		outcome Outcome
	}{{6291456 - 1, OutcomeSuccess}, {6291456, OutcomeTooLarge}} {
		synctest.Test(t, func(t *testing.T) {
			k := newFakeKafka(testTopic, 1)
			var log kafkaLog
			sizing := &payloadSizes{}
			k.produce(0, nil, []byte(strings.Repeat("x", valueSize)), sized(tc.size))
			runKafka(t, k, testKafkaConfig(KafkaConfig{Invoker: sizing, MaximumBatchingWindow: NoBatchingWindow}, &log, nil))
			synctest.Wait()
			require.Equal(t, tc.outcome, log.settled()[0].Outcome, "an event of %d bytes", tc.size)
			if tc.outcome == OutcomeSuccess {
				require.Equal(t, []int{tc.size}, sizing.got())
				require.Equal(t, MaxRequestSize, tc.size)
			}
		})
	}
}

func TestKafkaLogsOffsetRanges(t *testing.T) {
	t.Parallel()
	require.Equal(t, map[string]string{"t-0": "3-9 (4 records)", "t-1": "5-5 (1 records)"},
		offsetRanges(map[string][]int64{"t-0": {3, 4, 8, 9}, "t-1": {5}}))
}
