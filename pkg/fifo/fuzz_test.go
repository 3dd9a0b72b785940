package fifo_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/fifo"
)

// FuzzProcess feeds arbitrary batches, well-formed or not, to Process. Each
// pair of input bytes is one record: the first picks its message id (ids
// may repeat or be empty, which makes the batch invalid), its group (or
// none) and its queue; the second what its handler does. Whatever the
// input, Process must not panic, must refuse an invalid batch without
// running anything, and must otherwise report each failed id once, in batch
// order, and nothing that is not in the batch.
func FuzzProcess(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x12, 0x01, 0x23, 0x02})
	f.Add([]byte{0x00, 0x00})             // an empty message id
	f.Add([]byte{0x11, 0x00, 0x11, 0x00}) // a duplicate id
	f.Add([]byte{0x01, 0x00, 0x82, 0x00}) // two queues
	f.Add([]byte{0x31, 0x03, 0x32, 0x00}) // a permanent error, then its lane
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 40 {
			in = in[:40]
		}
		var ev events.SQSEvent
		does := map[string]byte{}
		for i := 0; i+1 < len(in); i += 2 {
			b := in[i]
			id := ""
			if b&0x0f != 0 {
				id = "m" + strconv.Itoa(int(b&0x0f))
			}
			attrs := map[string]string{}
			if g := (b >> 4) & 0x07; g != 0 {
				attrs["MessageGroupId"] = "g" + strconv.Itoa(int(g))
			}
			arn := testQueueARN
			if b&0x80 != 0 {
				arn += "-other"
			}
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, Attributes: attrs, EventSourceARN: arn})
			does[id] = in[i+1]
		}
		var calls atomic.Int32
		p := newProcessor(t, fifo.Config{Handler: func(ctx context.Context, msg events.SQSMessage) error {
			calls.Add(1)
			switch does[msg.MessageId] % 4 {
			case 1:
				return errors.New("fail")
			case 2:
				panic("fuzz")
			case 3:
				return fifo.Permanent(errors.New("permanent"))
			}
			return nil
		}})
		resp, err := p.Process(context.Background(), ev)
		if err != nil {
			if !errors.Is(err, fifo.ErrInvalidBatch) {
				t.Fatalf("error not wrapping ErrInvalidBatch: %v", err)
			}
			if calls.Load() != 0 {
				t.Fatalf("an invalid batch ran %d handlers", calls.Load())
			}
			return
		}
		pos := map[string]int{}
		for i, r := range ev.Records {
			pos[r.MessageId] = i
		}
		last := -1
		for _, f := range resp.BatchItemFailures {
			i, ok := pos[f.ItemIdentifier]
			if !ok {
				t.Fatalf("reported %q, which is not in the batch", f.ItemIdentifier)
			}
			if i <= last {
				t.Fatalf("failures out of batch order or repeated: %v", resp.BatchItemFailures)
			}
			last = i
		}
		if int(calls.Load()) > len(ev.Records) {
			t.Fatalf("%d handler calls for %d records", calls.Load(), len(ev.Records))
		}
	})
}
