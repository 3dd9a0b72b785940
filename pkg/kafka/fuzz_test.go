package kafka_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// FuzzResponse: from any batch of up to three partitions with gaps in
// their offsets and any set of completed records, the response names only
// records of the batch that were not completed, names every partition's
// lowest incomplete offset, and the commit offset is that lowest
// incomplete offset (or one past the partition's last record).
func FuzzResponse(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 3, 1, 1, 0})
	f.Add([]byte{})
	f.Add([]byte{2, 7, 0, 2, 0, 1, 1, 9, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{}}
		completed := map[kafka.ItemIdentifier]bool{}
		next := map[int64]int64{}
		for i := 0; i+2 < len(data); i += 3 {
			p := int64(data[i] % 3)
			next[p] += 1 + int64(data[i+1]%4) // a gap of 0 to 3 offsets
			r := events.KafkaRecord{Topic: "t-x", Partition: p, Offset: next[p]}
			tp := kafka.TopicPartition(r.Topic, p)
			ev.Records[tp] = append(ev.Records[tp], r)
			if data[i+2]%2 == 1 {
				completed[kafka.ItemIdentifier{TopicPartition: tp, Offset: r.Offset}] = true
			}
		}
		resp, err := kafka.Response(ev, completed)
		if err != nil {
			t.Fatal(err)
		}
		commit, err := kafka.CommitOffsets(ev, completed)
		if err != nil {
			t.Fatal(err)
		}
		inBatch := map[kafka.ItemIdentifier]bool{}
		lowest := map[string]int64{}
		last := map[string]int64{}
		for tp, recs := range ev.Records {
			for _, r := range recs { // appended in rising order above
				inBatch[kafka.ItemIdentifier{TopicPartition: tp, Offset: r.Offset}] = true
				last[tp] = r.Offset
				if _, ok := lowest[tp]; !ok && !completed[kafka.ItemIdentifier{TopicPartition: tp, Offset: r.Offset}] {
					lowest[tp] = r.Offset
				}
			}
		}
		reported := map[kafka.ItemIdentifier]bool{}
		for _, f := range resp.BatchItemFailures {
			if !inBatch[f.ItemIdentifier] {
				t.Fatalf("reported %+v, not in the batch", f.ItemIdentifier)
			}
			if completed[f.ItemIdentifier] {
				t.Fatalf("reported %+v, completed", f.ItemIdentifier)
			}
			reported[f.ItemIdentifier] = true
		}
		for tp := range ev.Records {
			low, incomplete := lowest[tp]
			want := last[tp] + 1
			if incomplete {
				want = low
				if !reported[kafka.ItemIdentifier{TopicPartition: tp, Offset: low}] {
					t.Fatalf("%s: lowest incomplete offset %d not reported in %+v", tp, low, resp)
				}
			}
			if commit[tp] != want {
				t.Fatalf("%s: commit %d, want %d", tp, commit[tp], want)
			}
		}
		if len(commit) != len(ev.Records) {
			t.Fatalf("commit names %d partitions, the batch has %d", len(commit), len(ev.Records))
		}
	})
}
