package sim_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/sim"
)

// EventRecordSize and EventSize count what json.Marshal writes for
// Lambda's Kafka event (aws-lambda-go's types), byte for byte, without
// encoding it: keys and values present or not, headers null, empty or
// holding bytes of every sign, header keys JSON escapes (HTML characters,
// a control character, invalid UTF-8), several partitions.
func TestEventSizesAreTheJSONsLength(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"h", "fifoworker-partitions", "<&>", "é", "\x01", "\xff", `"q\"`, ""}
	record := func(p int) events.KafkaRecord {
		r := events.KafkaRecord{
			Topic: "commands", Partition: int64(p), Offset: rng.Int64N(1 << 40),
			Timestamp: events.MilliSecondsEpochTime{Time: sim.Epoch.Add(time.Duration(rng.Int64N(1 << 50)))}, TimestampType: "CREATE_TIME",
		}
		if rng.IntN(3) > 0 {
			r.Key = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint("job-", rng.IntN(1000))))
		}
		if rng.IntN(4) > 0 {
			v := make([]byte, rng.IntN(300))
			for i := range v {
				v[i] = byte(rng.IntN(256))
			}
			r.Value = base64.StdEncoding.EncodeToString(v)
		}
		switch rng.IntN(3) {
		case 0: // null
		case 1:
			r.Headers = []map[string]events.JSONNumberBytes{}
		default:
			for range rng.IntN(6) {
				h := map[string]events.JSONNumberBytes{}
				for range 1 + rng.IntN(2) {
					var v events.JSONNumberBytes
					if rng.IntN(5) > 0 {
						v = make(events.JSONNumberBytes, rng.IntN(20))
						for i := range v {
							v[i] = byte(rng.IntN(256))
						}
					}
					h[keys[rng.IntN(len(keys))]] = v
				}
				r.Headers = append(r.Headers, h)
			}
		}
		return r
	}
	for range 500 {
		r := record(rng.IntN(12))
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.Equal(t, len(b), sim.EventRecordSize(r), "%s", b)
	}
	for range 50 {
		ev := events.KafkaEvent{EventSource: "aws:kafka", EventSourceARN: "arn:aws:kafka:eu-west-1:123456789012:cluster/sim/1", BootstrapServers: "b-1.sim:9098",
			Records: map[string][]events.KafkaRecord{}}
		for range rng.IntN(8) {
			p := rng.IntN(12)
			tp := fmt.Sprint("commands-", p)
			ev.Records[tp] = append(ev.Records[tp], record(p))
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		require.Equal(t, len(b), sim.EventSize(ev), "%s", b)
	}
}
