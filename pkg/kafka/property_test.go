package kafka_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"pgregory.net/rapid"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// modelRecord is one record of a drawn batch.
type modelRecord struct {
	tp     string
	offset int64
	key    string // "" for the null key
	fails  bool
}

// lane is the record's lane as the package documentation defines it.
func (m modelRecord) lane() string { return m.tp + "|" + m.key }

// span is one handler call: its start and end on a global sequence.
type span struct{ start, end int64 }

// TestPropertyLanesRunInOffsetOrderOneRecordAtATime checks, on drawn
// batches (up to three partitions, given in any order, with gaps in their
// offsets; three keys and the null key; failures; any Concurrency), that
// per lane the handlers start in offset order and never overlap, that a
// lane stops at its first failure and runs up to it, and that the response
// names exactly the records not completed.
func TestPropertyLanesRunInOffsetOrderOneRecordAtATime(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 24).Draw(rt, "records")
		var model []modelRecord
		next := map[string]int64{}
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
		for range n {
			part := rapid.IntRange(0, 2).Draw(rt, "partition")
			tp := kafka.TopicPartition("t", int64(part))
			next[tp] += int64(rapid.IntRange(1, 3).Draw(rt, "step"))
			m := modelRecord{tp: tp, offset: next[tp], key: rapid.SampledFrom([]string{"a", "b", "c", ""}).Draw(rt, "key"),
				fails: rapid.IntRange(0, 5).Draw(rt, "fails") == 0}
			model = append(model, m)
			r := events.KafkaRecord{Topic: "t", Partition: int64(part), Offset: m.offset}
			if m.key != "" {
				r.Key = b64(m.key)
			}
			ev.Records[tp] = append(ev.Records[tp], r)
		}
		for tp, recs := range ev.Records { // the event's order is not the offsets'
			perm := rapid.Permutation(recs).Draw(rt, "order "+tp)
			ev.Records[tp] = perm
		}
		byID := map[kafka.ItemIdentifier]modelRecord{}
		for _, m := range model {
			byID[kafka.ItemIdentifier{TopicPartition: m.tp, Offset: m.offset}] = m
		}

		var seq atomic.Int64
		var mu sync.Mutex
		spans := map[kafka.ItemIdentifier]span{}
		completed := map[kafka.ItemIdentifier]bool{}
		p := newProcessor(t, kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
			start := seq.Add(1)
			runtime.Gosched() // let another lane's handler interleave
			m := byID[r.ID()]
			end := seq.Add(1)
			mu.Lock()
			defer mu.Unlock()
			spans[r.ID()] = span{start, end}
			if m.fails {
				return errors.New("fails")
			}
			completed[r.ID()] = true
			return nil
		}, Concurrency: rapid.IntRange(0, 4).Draw(rt, "concurrency")})
		resp, err := p.Process(context.Background(), ev)
		if err != nil {
			rt.Fatal(err)
		}

		lanes := map[string][]modelRecord{}
		for _, m := range model {
			lanes[m.lane()] = append(lanes[m.lane()], m)
		}
		for name, lane := range lanes {
			slices.SortFunc(lane, func(a, b modelRecord) int { return int(a.offset - b.offset) })
			var prev *span
			stopped := false
			for _, m := range lane {
				s, ran := spans[kafka.ItemIdentifier{TopicPartition: m.tp, Offset: m.offset}]
				switch {
				case stopped && ran:
					rt.Fatalf("lane %s: offset %d ran after a failure", name, m.offset)
				case !stopped && !ran:
					rt.Fatalf("lane %s: offset %d did not run", name, m.offset)
				case ran && prev != nil && s.start < prev.end:
					rt.Fatalf("lane %s: offset %d started (%d) before the one before it ended (%d)", name, m.offset, s.start, prev.end)
				}
				if ran {
					prev = &s
				}
				stopped = stopped || m.fails
			}
		}
		checkResponse(rt, ev, completed, resp)
	})
}
