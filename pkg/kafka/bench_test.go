package kafka_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// benchBatch is a batch of partitions partitions of perPartition records
// each, whose keys go round-robin over keys keys per partition, listed in
// the order Process takes them (topic-partition, then offset).
type benchBatch struct {
	ev    events.KafkaEvent
	lane  []string // each record's lane: partition and key
	index map[kafka.ItemIdentifier]int
}

func newBenchBatch(partitions, perPartition, keys int) *benchBatch {
	bb := &benchBatch{ev: events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{}},
		index: map[kafka.ItemIdentifier]int{}}
	for p := range partitions {
		tp := kafka.TopicPartition("orders", int64(p))
		for i := range perPartition {
			key := fmt.Sprintf("job-%d", i%keys)
			bb.ev.Records[tp] = append(bb.ev.Records[tp], events.KafkaRecord{
				Topic: "orders", Partition: int64(p), Offset: int64(1000 + i), TimestampType: "CREATE_TIME",
				Key:   base64.StdEncoding.EncodeToString([]byte(key)),
				Value: base64.StdEncoding.EncodeToString([]byte(`{"type":"job.run","job_id":"` + key + `"}`)),
			})
			bb.index[kafka.ItemIdentifier{TopicPartition: tp, Offset: int64(1000 + i)}] = len(bb.lane)
			bb.lane = append(bb.lane, tp+"|"+key)
		}
	}
	return bb
}

func (bb *benchBatch) records() int { return len(bb.lane) }

// BenchmarkOverhead measures what the processor adds per record around a
// handler that does nothing: decoding, planning the lanes, their
// goroutines, the response; in wall time and in CPU time. The 10-record shapes are pkg/fifo's
// BenchmarkOverhead's (a FIFO batch of 10, one group or ten); the
// 2x100-record ones a Kafka batch of two partitions with 1, 10 and 100 keys
// each.
//
// The -lambda shape runs as in Lambda: under a context with a deadline
// and with a metrics hook (that does nothing), so that the clock is read
// for the deadline and the timings, twice a record; without either (the
// other shapes), the processor does not read it at all.
func BenchmarkOverhead(b *testing.B) {
	for _, shape := range []struct {
		name                           string
		partitions, perPartition, keys int
		lambda                         bool
	}{
		{"10records-1key", 1, 10, 1, false}, {"10records-10keys", 1, 10, 10, false}, {"10records-10keys-lambda", 1, 10, 10, true},
		{"2x100records-1key", 2, 100, 1, false}, {"2x100records-10keys", 2, 100, 10, false}, {"2x100records-100keys", 2, 100, 100, false},
	} {
		b.Run(shape.name, func(b *testing.B) {
			bb := newBenchBatch(shape.partitions, shape.perPartition, shape.keys)
			cfg := kafka.Config{Handler: noop}
			ctx := context.Background()
			if shape.lambda {
				cfg.Metrics = func(kafka.BatchMetrics) {}
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			p := newProcessor(b, cfg)
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := p.Process(ctx, bb.ev); err != nil {
					b.Fatal(err)
				}
			}
			records := float64(b.N * bb.records())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
			b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/records, "cpu-ns/record")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// machine others load, wall time per record counts the time the
// benchmark waited for a core, CPU time what it spent on one (the
// garbage collector's included).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// work is the simulated handler's time per record, standing in for I/O.
const work = time.Millisecond

// timedHandler sleeps work per record and notes how long each really took
// (a sleep overshoots), so that the critical path is what this run's
// records really cost.
type timedHandler struct {
	bb   *benchBatch
	took []time.Duration // written once per record, by its lane's goroutine
}

func (h *timedHandler) handle(_ context.Context, r kafka.Record) error {
	start := time.Now()
	time.Sleep(work)
	h.took[h.bb.index[r.ID()]] = time.Since(start)
	return nil
}

// criticalPath is the least time an ordered processor with concurrency
// slots can take for the batch with the durations of the last run: list
// scheduling of the lanes, in the order the lane engine's Plan takes them
// (longest first under a bound), each lane on the slot that frees first.
func (h *timedHandler) criticalPath(concurrency int) time.Duration {
	engine, err := lanes.New(lanes.Config{Concurrency: concurrency})
	if err != nil {
		panic(err)
	}
	plan := engine.Plan(h.bb.records(), func(i int) (string, bool) { return h.bb.lane[i], true })
	slots := plan.Lanes()
	if concurrency > 0 {
		slots = min(slots, concurrency)
	}
	free := make([]time.Duration, slots) // when each slot is next free
	var end time.Duration
	for _, head := range plan.Heads() {
		var lane time.Duration
		for i := head; i >= 0; i = plan.Next(i) {
			lane += h.took[i]
		}
		first := 0
		for s := range free {
			if free[s] < free[first] {
				first = s
			}
		}
		free[first] += lane
		end = max(end, free[first])
	}
	return end
}

// sequentialPerPartition is the baseline: each partition's records one
// after another, in offset order, the partitions in parallel; a failure
// reports the rest of its partition. Powertools' batch processor runs
// one record after another per partition (its Python BatchProcessor, one
// loop over the whole batch, is slower still with several partitions).
// It decodes the key and value as the processor does.
func sequentialPerPartition(ctx context.Context, h kafka.Handler, ev events.KafkaEvent) kafka.EventResponse {
	var mu sync.Mutex
	var wg sync.WaitGroup
	resp := kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{}}
	for tp, recs := range ev.Records {
		wg.Go(func() {
			for i, r := range recs {
				key, _ := base64.StdEncoding.DecodeString(r.Key)
				value, _ := base64.StdEncoding.DecodeString(r.Value)
				rec := kafka.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: key, Value: value}
				if h(ctx, rec) == nil {
					continue
				}
				mu.Lock()
				for _, rest := range recs[i:] {
					resp.BatchItemFailures = append(resp.BatchItemFailures,
						kafka.BatchItemFailure{ItemIdentifier: kafka.ItemIdentifier{TopicPartition: tp, Offset: rest.Offset}})
				}
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	return resp
}

// benchConcurrency is the lanes' bound in BenchmarkAgainstSequential.
const benchConcurrency = 16

// BenchmarkAgainstSequential runs the same batch (two partitions of 100
// records, 1, 10 or 100 keys per partition, each record taking work)
// through the processor (impl=lanes, Concurrency 16) and the sequential
// per-partition baseline (impl=sequential), side by side in one run
// (benchstat -col /impl). The processor reports its scheduling
// efficiency: the critical path (list scheduling of this run's lanes under
// the bound) over the wall time, 1.0 being the least any ordered processor
// can take.
func BenchmarkAgainstSequential(b *testing.B) {
	for _, keys := range []int{1, 10, 100} {
		bb := newBenchBatch(2, 100, keys)
		h := &timedHandler{bb: bb, took: make([]time.Duration, bb.records())}
		ctx := context.Background()
		b.Run(fmt.Sprintf("keys=%d/impl=lanes", keys), func(b *testing.B) {
			p := newProcessor(b, kafka.Config{Handler: h.handle, Concurrency: benchConcurrency})
			var critical, wall time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := p.Process(ctx, bb.ev); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				critical += h.criticalPath(benchConcurrency)
			}
			b.ReportMetric(float64(critical)/float64(wall), "efficiency")
			b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N*bb.records()), "ns/record")
		})
		b.Run(fmt.Sprintf("keys=%d/impl=sequential", keys), func(b *testing.B) {
			var wall time.Duration
			for b.Loop() {
				start := time.Now()
				sequentialPerPartition(ctx, h.handle, bb.ev)
				wall += time.Since(start)
			}
			b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N*bb.records()), "ns/record")
		})
	}
}
