package kafka_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// FuzzProcess feeds arbitrary batches, well-formed or not, to Process. Each
// three input bytes are one record: the first picks its partition (of
// three), whether it sits under another partition's key, and a negative
// partition; the second its offset's step from the partition's last (0
// repeats an offset; a high bit makes it negative); the third its key (null,
// empty, one of three, not base64) and what its handler does (succeed,
// fail, panic, fail permanently, call runtime.Goexit). Whatever the input,
// Process must not panic; an invalid batch must be refused with
// ErrInvalidBatch without running anything; otherwise the response must
// name exactly the records not completed, each once, in topic-partition
// then offset order, and so each partition's lowest incomplete offset.
func FuzzProcess(f *testing.F) {
	f.Add([]byte{0, 1, 0x01, 1, 1, 0x12, 0, 1, 0x21, 2, 3, 0x30})
	f.Add([]byte{0, 1, 0x01, 0, 0, 0x01})       // a duplicate offset
	f.Add([]byte{0x10, 1, 0x01})                // under another partition's key
	f.Add([]byte{0, 0x81, 0x01})                // a negative offset
	f.Add([]byte{0, 1, 0x05})                   // a key that is not base64
	f.Add([]byte{0, 1, 0x41, 0, 1, 0x31})       // a Goexit, a permanent error
	f.Add([]byte{0x20, 1, 0x01, 0x20, 1, 0x02}) // a negative partition
	keys := []string{"", "", b64(""), b64("a"), b64("b"), "!"}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 60 {
			in = in[:60]
		}
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
		does := map[kafka.ItemIdentifier]byte{}
		next := map[int64]int64{}
		for i := 0; i+2 < len(in); i += 3 {
			part := int64(in[i] % 3)
			if in[i]&0x20 != 0 {
				part = -1
			}
			next[part] += int64(in[i+1] & 0x7f)
			off := next[part]
			if in[i+1]&0x80 != 0 {
				off = -off - 1
			}
			r := events.KafkaRecord{Topic: "t", Partition: part, Offset: off, Key: keys[int(in[i+2]&0x0f)%len(keys)]}
			tp := kafka.TopicPartition("t", part)
			if in[i]&0x10 != 0 {
				tp = kafka.TopicPartition("t", part+1) // the wrong key
			}
			ev.Records[tp] = append(ev.Records[tp], r)
			does[kafka.ItemIdentifier{TopicPartition: kafka.TopicPartition("t", part), Offset: off}] = in[i+2] >> 4
		}
		var calls atomic.Int32
		var mu sync.Mutex
		completed := map[kafka.ItemIdentifier]bool{}
		p := newProcessor(t, kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
			calls.Add(1)
			var err error
			switch does[r.ID()] % 5 {
			case 1:
				err = errors.New("fail")
			case 2:
				panic("fuzz")
			case 3:
				err = kafka.Permanent(errors.New("permanent"))
			case 4:
				runtime.Goexit()
			}
			if err == nil || kafka.IsPermanent(err) { // the dead-letter store takes it
				mu.Lock()
				completed[r.ID()] = true
				mu.Unlock()
			}
			return err
		}, DeadLetter: &deadLetters{}, Concurrency: len(in) % 4})
		resp, err := p.Process(context.Background(), ev)
		if err != nil {
			if !errors.Is(err, kafka.ErrInvalidBatch) {
				t.Fatalf("error not wrapping ErrInvalidBatch: %v", err)
			}
			if calls.Load() != 0 {
				t.Fatalf("an invalid batch ran %d handlers", calls.Load())
			}
			return
		}
		checkResponse(t, ev, completed, resp)
	})
}

// fataler is what checkResponse needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkResponse fails t unless resp names exactly the records of ev not
// in completed, each once, in topic-partition then offset order, which
// names each partition's lowest incomplete offset.
func checkResponse(t fataler, ev events.KafkaEvent, completed map[kafka.ItemIdentifier]bool, resp kafka.EventResponse) {
	t.Helper()
	inBatch := map[kafka.ItemIdentifier]bool{}
	lowest := map[string]int64{}
	for tp, recs := range ev.Records {
		for _, r := range recs {
			id := kafka.ItemIdentifier{TopicPartition: tp, Offset: r.Offset}
			inBatch[id] = true
			if low, ok := lowest[tp]; !completed[id] && (!ok || r.Offset < low) {
				lowest[tp] = r.Offset
			}
		}
	}
	named := map[kafka.ItemIdentifier]bool{}
	for i, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] || completed[f.ItemIdentifier] || named[f.ItemIdentifier] {
			t.Fatalf("the response names %+v: not in the batch, completed or twice", f.ItemIdentifier)
		}
		named[f.ItemIdentifier] = true
		if prev := resp.BatchItemFailures[max(i-1, 0)].ItemIdentifier; i > 0 &&
			(prev.TopicPartition > f.ItemIdentifier.TopicPartition ||
				prev.TopicPartition == f.ItemIdentifier.TopicPartition && prev.Offset > f.ItemIdentifier.Offset) {
			t.Fatalf("the response is not in topic-partition then offset order: %v", resp.BatchItemFailures)
		}
	}
	for id := range inBatch {
		if !completed[id] && !named[id] {
			t.Fatalf("%+v is not completed and not named", id)
		}
	}
	for tp, low := range lowest {
		if !named[kafka.ItemIdentifier{TopicPartition: tp, Offset: low}] {
			t.Fatalf("%s's lowest incomplete offset %d is not named", tp, low)
		}
	}
}
