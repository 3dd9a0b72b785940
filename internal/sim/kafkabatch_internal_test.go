package sim

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A batch takes a record whose event alone is exactly MaxRequestSize
// bytes, and not one a byte larger (Lambda: "Request must be smaller than
// 6291456 bytes"), counted as the event Lambda would send holds it.
func TestABatchTakesARecordUpToExactlyMaxRequestSize(t *testing.T) {
	t.Parallel()
	alone := func(r *LogRecord) int {
		z := newEventSize(newKBatch().ev)
		return z.total + z.grow("commands-0", recordEventSize(r))
	}
	// A value a few bytes under the limit (its base64 grows 4 characters
	// at a time), then a header whose key's length lands it on n.
	buf := make([]byte, MaxRequestSize)
	sized := func(n int) *LogRecord {
		for v := (MaxRequestSize - 400) / 4 * 3; v < (MaxRequestSize-100)/4*3; v++ {
			for k := range 4 {
				r := &LogRecord{Topic: commandsTopic, Key: []byte("job-1"), Value: buf[:v], Time: Epoch,
					Headers: []kafka.Header{{Key: strings.Repeat("h", 1+k), Value: []byte{1}}}}
				if alone(r) == n {
					return r
				}
			}
		}
		t.Fatalf("no record makes an event of %d bytes alone", n)
		return nil
	}
	for n, fits := range map[int]bool{MaxRequestSize: true, MaxRequestSize + 1: false} {
		r := sized(n)
		b := newKBatch()
		b.ev.Records["commands-0"] = []events.KafkaRecord{eventRecord(r)}
		require.Equal(t, n, EventSize(b.ev), "the event as Lambda would send it")
		z := newEventSize(newKBatch().ev)
		require.Equal(t, fits, z.fits(z.grow("commands-0", recordEventSize(r))), "an event of %d bytes", n)
	}
}
