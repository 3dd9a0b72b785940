package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reportAfterFirst is a handler that, in each partition of failing,
// completes the first record of the event and reports the next one (a
// partition's last record completes); in each partition of stuck it
// reports the first record.
func reportAfterFirst(failing, stuck []string) kafkaHandler {
	return func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
		var items []string
		for tp, recs := range ev.Records {
			switch {
			case slices.Contains(stuck, tp):
				items = append(items, fmt.Sprintf(`{"itemIdentifier":{"topic-partition":%q,"offset":%d}}`, tp, recs[0].Offset))
			case slices.Contains(failing, tp) && len(recs) > 1:
				items = append(items, fmt.Sprintf(`{"itemIdentifier":{"topic-partition":%q,"offset":%d}}`, tp, recs[1].Offset))
			}
		}
		return json.RawMessage(`{"batchItemFailures":[` + strings.Join(items, ",") + `]}`), nil
	}
}

// runReporting runs a mapping of k with partial batch responses, the
// given MaximumRetryAttempts and an on-failure destination, until it has
// nothing left to do. Call it inside a synctest bubble.
func runReporting(t *testing.T, k *fakeKafka, retries int, h kafkaHandler) (*kafkaLog, *fakeDestination) {
	t.Helper()
	log, dest := &kafkaLog{}, &fakeDestination{}
	runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, MaximumRetryAttempts: &retries, OnFailure: dest,
		MaximumBatchingWindow: NoBatchingWindow}, log, h))
	time.Sleep(time.Minute)
	synctest.Wait()
	return log, dest
}

// TestKafkaRetryCountRestartsWhenTheCommitMoves: MaximumRetryAttempts
// counts a partition's attempts at its committed offset, as the
// simulation (internal/sim) counts them; a partial batch response that
// moves the commit forward starts the count again. Each invocation here
// completes one record and reports the next: every record fails once and
// succeeds on its first retry, so nothing is given up, though the span
// was invoked four times under a bound of one retry.
func TestKafkaRetryCountRestartsWhenTheCommitMoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		for range 4 {
			k.produce(0, nil, []byte("v"))
		}
		log, dest := runReporting(t, k, 1, reportAfterFirst([]string{testTopic + "-0"}, nil))
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2, 3), tp0(1, 2, 3), tp0(2, 3), tp0(3)}, log.batches())
		require.Empty(t, dest.failures(), "no record failed more than once")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 4}, k.committed("g"))
	})
}

// TestKafkaNoRetryWhenTheCommitMoves: MaximumRetryAttempts 0 means no
// retry (the count excludes the first invocation), also when a partial
// batch response moved the commit: what is left after it is given up at
// once, not retried.
func TestKafkaNoRetryWhenTheCommitMoves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		for range 4 {
			k.produce(0, nil, []byte("v"))
		}
		log, dest := runReporting(t, k, 0, reportAfterFirst([]string{testTopic + "-0"}, nil))
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2, 3)}, log.batches(), "no retry")
		sent := dest.failures()
		require.Len(t, sent, 1)
		var given []int64
		for _, r := range sent[0].Records {
			given = append(given, r.Offset)
		}
		require.Equal(t, []int64{1, 2, 3}, given, "offset 0 completed; the rest is given up")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 4}, k.committed("g"))
	})
}

// TestKafkaRetryCountRestartsAfterABisectedHalf: the count belongs to the
// partition's first record, so it restarts whenever the commit moves,
// here through a bisected half that succeeded. The span used its one
// retry at offset 0 (a partial batch response), then failed and was
// split; the first half [0 1] succeeds; offset 2 then fails and must get
// its own first attempt and one retry before it is given up, not inherit
// offset 0's used retry.
func TestKafkaRetryCountRestartsAfterABisectedHalf(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		dest := &fakeDestination{}
		for range 4 {
			k.produce(0, nil, []byte("v"))
		}
		report := func(offset int64) json.RawMessage {
			return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"fifoworker-commands-0","offset":%d}}]}`, offset)
		}
		h := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
			switch first := ev.Records[testTopic+"-0"][0].Offset; {
			case len(log.batches()) == 1:
				return report(0), nil
			case len(log.batches()) == 2:
				return nil, errors.New("function error: bisect")
			case first == 0:
				return nil, nil
			default:
				return report(first), nil
			}
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{ReportBatchItemFailures: true, BisectBatchOnFunctionError: true,
			MaximumRetryAttempts: new(1), OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow}, &log, h))
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(0, 1, 2, 3), tp0(0, 1, 2, 3), tp0(0, 1), tp0(2, 3), tp0(2, 3)}, log.batches(),
			"offset 2: its first attempt and MaximumRetryAttempts (1) retries")
		sent := dest.failures()
		require.Len(t, sent, 1)
		require.Equal(t, "2", sent[0].Record.KafkaBatchInfo.RecordsInfo[testTopic+"-0"].FirstRecordOffset)
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 4}, k.committed("g"))
	})
}

// TestKafkaRetryCountIsEachPartitions: in a batch of two partitions, one
// moving forward at every invocation does not restart the count of the
// other, stuck at its first record: that one is given up after
// MaximumRetryAttempts retries, alone, and the first runs on.
func TestKafkaRetryCountIsEachPartitions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 2)
		for range 4 {
			k.produce(0, nil, []byte("v"))
		}
		k.produce(1, nil, []byte("poison"))
		_, dest := runReporting(t, k, 1, reportAfterFirst([]string{testTopic + "-0"}, []string{testTopic + "-1"}))
		sent := dest.failures()
		require.Len(t, sent, 1)
		require.Len(t, sent[0].Records, 1)
		require.Equal(t, testTopic+"-1", sent[0].Records[0].TopicPartition, "only the stuck partition is given up")
		require.Equal(t, 2, sent[0].Record.RequestContext.ApproximateInvokeCount, "its first attempt and one retry")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 4, {testTopic, 1}: 1}, k.committed("g"))
	})
}

// TestKafkaRecordAgeGivesUpOnlyALeadingRun: timestamps in a partition need
// not increase. Of [old, young, old] only the first is given up before
// the young one runs: the second old record is invoked with it rather
// than given up out of order, ahead of a record before it.
func TestKafkaRecordAgeGivesUpOnlyALeadingRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 1)
		var log kafkaLog
		dest := &fakeDestination{}
		now := time.Now()
		old := now.Add(-time.Minute - time.Millisecond)
		k.produceAt(0, old, nil, []byte("old"))
		k.produceAt(0, now, nil, []byte("young"))
		k.produceAt(0, old, nil, []byte("old again"))
		runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumRecordAge: time.Minute, OnFailure: dest, MaximumBatchingWindow: NoBatchingWindow, Now: time.Now}, &log, succeed))
		synctest.Wait()
		require.Equal(t, []map[string][]int64{tp0(1, 2)}, log.batches())
		sent := dest.failures()
		require.Len(t, sent, 1)
		require.Len(t, sent[0].Records, 1)
		require.EqualValues(t, 0, sent[0].Records[0].Offset)
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 3}, k.committed("g"))
	})
}

// TestKafkaTakeDropsARecordFetchedAgain: a poll that repeats records the
// partition has already taken in buffers each offset once, in order: the
// buffer never hands a record to two batches, whatever the consumer
// returns.
func TestKafkaTakeDropsARecordFetchedAgain(t *testing.T) {
	t.Parallel()
	tp := kafkaTP{testTopic, 0}
	r := &kafkaRun{parts: map[kafkaTP]*kafkaPartition{tp: {epoch: 1, next: -1}}}
	r.take([]*kgo.Record{kafkaRec(0, 0, nil, nil), kafkaRec(0, 1, nil, nil)})
	r.take([]*kgo.Record{kafkaRec(0, 0, nil, nil), kafkaRec(0, 1, nil, nil), kafkaRec(0, 2, nil, nil)})
	var got []int64
	for _, rec := range r.parts[tp].buf {
		got = append(got, rec.rec.Offset)
	}
	require.Equal(t, []int64{0, 1, 2}, got)
	require.EqualValues(t, 3, r.parts[tp].next)
}
