package kafka

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

var (
	// ErrInvalidBatch means the event breaks what Lambda's Kafka event
	// promises (a record under another partition's key, an offset twice in
	// a partition, a negative offset or partition, a key, value that is not
	// base64). Nothing is reported, committed or run for such a batch: a
	// response computed from it could name the wrong record.
	ErrInvalidBatch = errors.New("kafka: invalid batch")
	// ErrUnknownRecord means a completion names a record the batch does not hold,
	// which is the caller's mistake (a record of another batch).
	ErrUnknownRecord = errors.New("kafka: completion of a record not in the batch")
)

// ItemIdentifier names one record of a batch in a partial batch response:
// its topic-partition (the event's records key: the topic, a hyphen, the
// partition number), under the JSON name "topic-partition" of AWS's schema
// (see the package documentation), and its offset.
type ItemIdentifier struct {
	TopicPartition string `json:"topic-partition"`
	Offset         int64  `json:"offset"`
}

// BatchItemFailure is one record the function did not complete.
type BatchItemFailure struct {
	ItemIdentifier ItemIdentifier `json:"itemIdentifier"`
}

// EventResponse is a Kafka function's partial batch response. An empty
// list tells Lambda the whole batch succeeded.
type EventResponse struct {
	BatchItemFailures []BatchItemFailure `json:"batchItemFailures"`
}

// TopicPartition is the key under which Lambda groups a partition's
// records in a KafkaEvent, and the "topic-partition" of an
// ItemIdentifier: "orders-0".
func TopicPartition(topic string, partition int64) string {
	return topic + "-" + strconv.FormatInt(partition, 10)
}

// Response reports every record of the batch not in completed, in
// topic-partition then offset order. It reports all of them, not only each
// partition's lowest: see the package documentation for why.
func Response(batch events.KafkaEvent, completed map[ItemIdentifier]bool) (EventResponse, error) {
	recs, err := checkedWith(batch, completed)
	if err != nil {
		return EventResponse{}, err
	}
	return response(recs, func(i int) bool { return completed[recs[i].id] }), nil
}

// CommitOffsets gives, for each partition of the batch, the offset a
// consumer may commit (Kafka's committed offset is the next one to read):
// the offset of the partition's first record, in offset order, that is not
// completed, or one past its last record when all are. It walks the
// records the batch holds, not the integers between them, so an offset
// that does not exist (compacted away, a transaction marker) never holds
// it back; and it never goes past a record not completed, whatever was
// completed after it.
func CommitOffsets(batch events.KafkaEvent, completed map[ItemIdentifier]bool) (map[string]int64, error) {
	recs, err := checkedWith(batch, completed)
	if err != nil {
		return nil, err
	}
	commit := make(map[string]int64, len(batch.Records))
	for start := 0; start < len(recs); {
		end := partitionEnd(recs, start)
		tp := recs[start].id.TopicPartition
		commit[tp] = recs[end-1].id.Offset + 1
		for _, r := range recs[start:end] {
			if !completed[r.id] {
				commit[tp] = r.id.Offset
				break
			}
		}
		start = end
	}
	return commit, nil
}

// partitionEnd returns the index after the last record of the partition
// whose records start at recs[start].
func partitionEnd(recs []checkedRecord, start int) int {
	end := start + 1
	for end < len(recs) && recs[end].id.TopicPartition == recs[start].id.TopicPartition {
		end++
	}
	return end
}

// response reports each record of recs (in checked's order) that is not
// completed: the one piece of code behind Response and Processor.Process.
func response(recs []checkedRecord, completed func(i int) bool) EventResponse {
	resp := EventResponse{BatchItemFailures: []BatchItemFailure{}}
	for i := range recs {
		if !completed(i) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, BatchItemFailure{ItemIdentifier: recs[i].id})
		}
	}
	return resp
}

// checkedRecord is a record of a checked batch with its identifier.
type checkedRecord struct {
	id  ItemIdentifier
	rec *events.KafkaRecord
}

// checkedWith is checked, then refuses a completion of a record the batch
// does not hold.
func checkedWith(batch events.KafkaEvent, completed map[ItemIdentifier]bool) ([]checkedRecord, error) {
	recs, err := checked(batch)
	if err != nil {
		return nil, err
	}
	for item, ok := range completed {
		if _, found := slices.BinarySearchFunc(recs, item, compareID); ok && !found {
			return nil, fmt.Errorf("%w: %q offset %d", ErrUnknownRecord, item.TopicPartition, item.Offset)
		}
	}
	return recs, nil
}

// checked checks what Lambda's Kafka event promises and returns the
// batch's records in topic-partition, then offset order: every record
// under its own partition's key, offsets and partitions not negative, no
// offset twice in a partition. It is the one check behind Response,
// CommitOffsets and Processor.Process.
func checked(batch events.KafkaEvent) ([]checkedRecord, error) {
	return checkedInto(nil, batch)
}

// checkedInto is checked, in the room of out (of a batch done with).
func checkedInto(out []checkedRecord, batch events.KafkaEvent) ([]checkedRecord, error) {
	n := 0
	var few [8]string // the partitions' keys, without an allocation for up to 8
	keys := few[:0]
	for key, recs := range batch.Records {
		n += len(recs)
		keys = append(keys, key)
	}
	// Partition by partition in key order, each partition's records
	// sorted only if the event does not list them in offset order (Lambda
	// does): no sort over the whole batch.
	slices.Sort(keys)
	if out = out[:0]; cap(out) < n {
		out = make([]checkedRecord, 0, n)
	}
	for _, key := range keys {
		recs := batch.Records[key]
		start, inOrder := len(out), true
		for i := range recs {
			r := &recs[i]
			// Every record of a key is held to the first's topic and
			// partition, and the first to the key.
			if (i == 0 || r.Topic != recs[0].Topic || r.Partition != recs[0].Partition) && !isTopicPartition(key, r.Topic, r.Partition) {
				return nil, fmt.Errorf("%w: key %q holds a record of %q (offset %d)", ErrInvalidBatch, key, TopicPartition(r.Topic, r.Partition), r.Offset)
			}
			switch {
			case r.Partition < 0:
				return nil, fmt.Errorf("%w: %q holds partition %d", ErrInvalidBatch, key, r.Partition)
			case r.Offset < 0:
				return nil, fmt.Errorf("%w: %q holds offset %d", ErrInvalidBatch, key, r.Offset)
			}
			inOrder = inOrder && (i == 0 || r.Offset > recs[i-1].Offset)
			out = append(out, checkedRecord{id: ItemIdentifier{TopicPartition: key, Offset: r.Offset}, rec: r})
		}
		if inOrder {
			continue
		}
		part := out[start:]
		slices.SortFunc(part, func(a, b checkedRecord) int { return cmp.Compare(a.id.Offset, b.id.Offset) })
		for i := 1; i < len(part); i++ {
			if part[i].id.Offset == part[i-1].id.Offset {
				return nil, fmt.Errorf("%w: %q holds offset %d twice", ErrInvalidBatch, key, part[i].id.Offset)
			}
		}
	}
	return out, nil
}

// isTopicPartition reports whether tp is TopicPartition(topic, partition),
// without building that string.
func isTopicPartition(tp, topic string, partition int64) bool {
	var digits [20]byte
	n := strconv.AppendInt(digits[:0], partition, 10)
	return len(tp) == len(topic)+1+len(n) && tp[:len(topic)] == topic && tp[len(topic)] == '-' && tp[len(topic)+1:] == string(n)
}

func compareID(r checkedRecord, id ItemIdentifier) int {
	if c := cmp.Compare(r.id.TopicPartition, id.TopicPartition); c != 0 {
		return c
	}
	return cmp.Compare(r.id.Offset, id.Offset)
}
