package fifo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

func noop(context.Context, events.SQSMessage) error { return nil }

// BenchmarkOverhead measures what the processor adds per message around a
// handler that does nothing, for a full FIFO batch of 10. The -lambda
// shape runs as in Lambda, as pkg/kafka's of that name: under a context
// with a deadline and with a metrics hook that does nothing, so that the
// clock is read for the deadline and the timings.
func BenchmarkOverhead(b *testing.B) {
	shapes := map[string][]string{
		"1group":          {"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a0"},
		"10groups":        {"a1", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "i1", "j1"},
		"10groups-lambda": {"a1", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "i1", "j1"},
		"standard":        {"-0", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8", "-9"},
	}
	for _, name := range []string{"1group", "10groups", "10groups-lambda", "standard"} {
		b.Run(name, func(b *testing.B) {
			ev := batchOf(b, shapes[name]...)
			cfg := fifo.Config{Handler: noop}
			ctx := context.Background()
			if name == "10groups-lambda" {
				cfg.Metrics = func(fifo.BatchMetrics) {}
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			p := newProcessor(b, cfg)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Process(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ev.Records)), "ns/msg")
		})
	}
}

// latencyBatch is a batch whose handler sleeps per message, standing in for
// I/O. The handler measures how long each message really took (a sleep
// overshoots by a fraction of a millisecond), so the critical path, the
// longest lane's summed handler time, is what this run's lanes really cost.
type latencyBatch struct {
	ev      events.SQSEvent
	index   map[string]int
	lane    []string
	latency []time.Duration
	took    []time.Duration // written once per message by its lane's goroutine
}

func newLatencyBatch(rng *rand.Rand, messages, groups int, minLat, maxLat time.Duration) *latencyBatch {
	lb := &latencyBatch{index: map[string]int{}}
	for i := range messages {
		id := fmt.Sprintf("m%d", i)
		g := fmt.Sprintf("job-%d", rng.IntN(groups))
		if groups == messages {
			g = fmt.Sprintf("job-%d", i)
		}
		lb.index[id] = i
		lb.lane = append(lb.lane, g)
		lb.latency = append(lb.latency, minLat+time.Duration(rng.Int64N(int64(maxLat-minLat)+1)))
		lb.ev.Records = append(lb.ev.Records, events.SQSMessage{
			MessageId: id, Body: "{}", Attributes: map[string]string{"MessageGroupId": g},
		})
	}
	lb.took = make([]time.Duration, messages)
	return lb
}

func (lb *latencyBatch) handler(_ context.Context, msg events.SQSMessage) error {
	i := lb.index[msg.MessageId]
	start := time.Now()
	time.Sleep(lb.latency[i])
	lb.took[i] = time.Since(start)
	return nil
}

// critical returns the longest lane's summed handler time of the last run.
func (lb *latencyBatch) critical() time.Duration {
	perLane := map[string]time.Duration{}
	var longest time.Duration
	for i, took := range lb.took {
		perLane[lb.lane[i]] += took
		longest = max(longest, perLane[lb.lane[i]])
	}
	return longest
}

// sequential is the baseline: one message at a time in batch order, as the
// Powertools batch processors handle FIFO queues.
func sequential(ctx context.Context, h fifo.Handler, ev events.SQSEvent) events.SQSEventResponse {
	resp := events.SQSEventResponse{}
	for i, msg := range ev.Records {
		if err := h(ctx, msg); err != nil {
			for _, rest := range ev.Records[i:] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rest.MessageId})
			}
			break
		}
	}
	return resp
}

// BenchmarkSchedulingEfficiency reports critical/wall: 1.0 means the batch
// took exactly as long as its longest lane, the least any ordered processor
// can take.
func BenchmarkSchedulingEfficiency(b *testing.B) {
	for _, shape := range []struct {
		name             string
		messages, groups int
	}{{"10msgs-10groups", 10, 10}, {"10msgs-4groups", 10, 4}, {"10msgs-2groups", 10, 2}} {
		b.Run(shape.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(shape.groups)))
			batches := make([]*latencyBatch, 16)
			for i := range batches {
				batches[i] = newLatencyBatch(rng, shape.messages, shape.groups, time.Millisecond, 8*time.Millisecond)
			}
			var critical, wall time.Duration
			i := 0
			for b.Loop() {
				lb := batches[i%len(batches)]
				i++
				start := time.Now()
				if _, err := newProcessor(b, fifo.Config{Handler: lb.handler}).Process(context.Background(), lb.ev); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				critical += lb.critical()
			}
			b.ReportMetric(float64(critical)/float64(wall), "critical/wall")
		})
	}
}

// BenchmarkSpeedupOverSequential runs the same batch (10 groups, one 5 ms
// message each: the most a FIFO batch of 10 can gain, 10x in theory) through
// the processor and through one-at-a-time processing, alternating in one
// run, and reports the ratio of their wall times.
func BenchmarkSpeedupOverSequential(b *testing.B) {
	rng := rand.New(rand.NewPCG(42, 42))
	lb := newLatencyBatch(rng, 10, 10, 5*time.Millisecond, 5*time.Millisecond)
	p := newProcessor(b, fifo.Config{Handler: lb.handler})
	ctx := context.Background()
	var seqWall, laneWall time.Duration
	for b.Loop() {
		start := time.Now()
		sequential(ctx, lb.handler, lb.ev)
		mid := time.Now()
		if _, err := p.Process(ctx, lb.ev); err != nil {
			b.Fatal(err)
		}
		seqWall += mid.Sub(start)
		laneWall += time.Since(mid)
	}
	b.ReportMetric(float64(seqWall)/float64(laneWall), "speedup")
}
