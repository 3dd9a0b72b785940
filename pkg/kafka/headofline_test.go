package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// holLayout is one partition's log for the head-of-line measurement:
// records records whose keys go round-robin over keys keys (record i has
// key i mod keys), delivered batch at a time from the committed offset.
// The record at failAt fails on its first failures deliveries; with
// parkAfter > 0, its key is parked (as the quarantine parks it) once it
// has failed parkAfter times, which completes every record of the key.
type holLayout struct {
	records, keys, batch int
	failAt, failures     int
	parkAfter            int
}

// holCost is what the mapping delivered for a layout.
type holCost struct {
	deliveries       int // invocations
	failedDeliveries int // invocations whose response named a record
	// redelivered counts the records delivered again after an invocation
	// had completed them: each costs the fenced store a refusal.
	redelivered int
}

// simulateHOL delivers the layout's log to a real Processor as the stream
// reading of Lambda's Kafka mapping does (see the package documentation):
// each invocation gets up to batch records from the committed offset; the
// commit moves to the lowest offset the response names, or past the batch.
func simulateHOL(t testing.TB, l holLayout) holCost {
	t.Helper()
	completed := make([]bool, l.records) // completed by an earlier invocation
	failedSoFar := 0
	parked := false
	p, err := kafka.New(kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
		if int(r.Offset) == l.failAt && failedSoFar < l.failures && !parked {
			return errors.New("fails")
		}
		return nil
	}})
	require.NoError(t, err)
	var cost holCost
	for commit := 0; commit < l.records; {
		end := min(commit+l.batch, l.records)
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
		for i := commit; i < end; i++ {
			if completed[i] {
				cost.redelivered++
			}
			key := fmt.Sprintf("%d", i%l.keys)
			ev.Records["t-0"] = append(ev.Records["t-0"], events.KafkaRecord{Topic: "t", Offset: int64(i), Key: b64(key)})
		}
		resp, err := p.Process(context.Background(), ev)
		require.NoError(t, err)
		cost.deliveries++
		next := end
		reported := map[int]bool{}
		for _, f := range resp.BatchItemFailures {
			reported[int(f.ItemIdentifier.Offset)] = true
			next = min(next, int(f.ItemIdentifier.Offset))
		}
		for i := commit; i < end; i++ {
			completed[i] = completed[i] || !reported[i]
		}
		if len(resp.BatchItemFailures) > 0 {
			cost.failedDeliveries++
			failedSoFar++
			parked = l.parkAfter > 0 && failedSoFar >= l.parkAfter
		}
		commit = next
	}
	return cost
}

// The head-of-line cost, measured on the real processor: a record that
// fails holds back its partition's commit, so every later offset of the
// batch, of every key, is delivered again, and those of other keys were
// completed. One failure at position p of a batch of n records in k
// round-robin keys redelivers exactly (n-1-p) - floor((n-1-p)/k)
// completed records: 0 with one key (sequential per partition does no
// more), up to n-1 with a key per record. A key that fails every delivery
// repeats that cost on each, until it is parked. These figures are the
// package documentation's table.
func TestHeadOfLineCost(t *testing.T) {
	t.Parallel()
	formula := func(n, k, p int) int { return (n - 1 - p) - (n-1-p)/k }
	cases := []struct {
		layout holLayout
		want   holCost
	}{
		// One transient failure in a batch of Lambda's default 100.
		{holLayout{records: 100, keys: 1, batch: 100, failAt: 0, failures: 1}, holCost{2, 1, 0}},
		{holLayout{records: 100, keys: 10, batch: 100, failAt: 0, failures: 1}, holCost{2, 1, 90}},
		{holLayout{records: 100, keys: 100, batch: 100, failAt: 0, failures: 1}, holCost{2, 1, 99}},
		{holLayout{records: 100, keys: 10, batch: 100, failAt: 50, failures: 1}, holCost{2, 1, 45}},
		{holLayout{records: 100, keys: 10, batch: 100, failAt: 99, failures: 1}, holCost{2, 1, 0}},
		// The failing record's key fails 3 times, then is parked (a
		// quarantine threshold of 3): the window is pinned at its offset,
		// each later delivery redelivers the whole batch but the key.
		{holLayout{records: 300, keys: 10, batch: 100, failAt: 0, failures: 1 << 30, parkAfter: 3}, holCost{6, 3, 90 + 90 + 90}},
		{holLayout{records: 300, keys: 100, batch: 100, failAt: 0, failures: 1 << 30, parkAfter: 3}, holCost{6, 3, 99 + 99 + 99}},
		// A failure in the middle of a batch, twice: the first failed
		// delivery had completed 45 records after it; the window then moves
		// to it and is pinned there, and the second failed delivery
		// completes 45 more, which the third delivers again with the first 45.
		{holLayout{records: 300, keys: 10, batch: 100, failAt: 150, failures: 2}, holCost{5, 2, 45 + 90}},
	}
	for _, tc := range cases {
		l := tc.layout
		t.Run(fmt.Sprintf("n%d-k%d-p%d-f%d-park%d", l.records, l.keys, l.failAt, min(l.failures, 99), l.parkAfter), func(t *testing.T) {
			t.Parallel()
			got := simulateHOL(t, l)
			require.Equal(t, tc.want, got)
			if l.failures == 1 && l.records == l.batch {
				require.Equal(t, formula(l.batch, l.keys, l.failAt), got.redelivered)
			}
			require.LessOrEqual(t, got.redelivered, got.failedDeliveries*(l.batch-1), "the bound: batch-1 per failed delivery")
		})
	}
}

// BenchmarkHeadOfLine reports the head-of-line cost as redelivered
// completed records per failed delivery, for one stuck key parked after 3
// failures in a partition of 1,000 records delivered 100 at a time. It is
// deterministic: the figure is the same every run.
func BenchmarkHeadOfLine(b *testing.B) {
	for _, keys := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			l := holLayout{records: 1000, keys: keys, batch: 100, failAt: 0, failures: 1 << 30, parkAfter: 3}
			var cost holCost
			for b.Loop() {
				cost = simulateHOL(b, l)
			}
			b.ReportMetric(float64(cost.redelivered)/float64(cost.failedDeliveries), "redelivered/failure")
		})
	}
}
