package kafka

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-lambda-go/events"
)

var (
	// ErrInvalidBatch means the event breaks what Lambda's Kafka event promises
	// (a record under another partition's key, an offset twice in a
	// partition, a negative offset). Nothing is reported or committed for
	// such a batch: a response computed from it could name the wrong record.
	ErrInvalidBatch = errors.New("kafka: invalid batch")
	// ErrUnknownRecord means a completion names a record the batch does not hold,
	// which is the caller's mistake (a record of another batch).
	ErrUnknownRecord = errors.New("kafka: completion of a record not in the batch")
)

// ItemIdentifier names one record of a batch in a partial batch response:
// its topic-partition (the event's records key: the topic, a hyphen, the
// partition number), under the JSON name "partition", and its offset.
type ItemIdentifier struct {
	TopicPartition string `json:"partition"`
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
	return fmt.Sprintf("%s-%d", topic, partition)
}

// Response reports every record of the batch not in completed, in
// topic-partition then offset order. It reports all of them, not only each
// partition's lowest: see the package documentation for why.
func Response(batch events.KafkaEvent, completed map[ItemIdentifier]bool) (EventResponse, error) {
	parts, err := partitions(batch, completed)
	if err != nil {
		return EventResponse{}, err
	}
	resp := EventResponse{BatchItemFailures: []BatchItemFailure{}}
	for _, tp := range sortedKeys(parts) {
		for _, off := range parts[tp] {
			item := ItemIdentifier{TopicPartition: tp, Offset: off}
			if !completed[item] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, BatchItemFailure{ItemIdentifier: item})
			}
		}
	}
	return resp, nil
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
	parts, err := partitions(batch, completed)
	if err != nil {
		return nil, err
	}
	commit := make(map[string]int64, len(parts))
	for tp, offsets := range parts {
		commit[tp] = offsets[len(offsets)-1] + 1
		for _, off := range offsets {
			if !completed[ItemIdentifier{TopicPartition: tp, Offset: off}] {
				commit[tp] = off
				break
			}
		}
	}
	return commit, nil
}

// partitions checks the batch and the completions and returns each
// partition's offsets in rising order.
func partitions(batch events.KafkaEvent, completed map[ItemIdentifier]bool) (map[string][]int64, error) {
	parts := make(map[string][]int64, len(batch.Records))
	for key, recs := range batch.Records {
		offsets := make([]int64, 0, len(recs))
		for _, r := range recs {
			if tp := TopicPartition(r.Topic, r.Partition); tp != key {
				return nil, fmt.Errorf("%w: key %q holds a record of %q (offset %d)", ErrInvalidBatch, key, tp, r.Offset)
			}
			if r.Offset < 0 {
				return nil, fmt.Errorf("%w: %q holds offset %d", ErrInvalidBatch, key, r.Offset)
			}
			offsets = append(offsets, r.Offset)
		}
		slices.Sort(offsets)
		for i := 1; i < len(offsets); i++ {
			if offsets[i] == offsets[i-1] {
				return nil, fmt.Errorf("%w: %q holds offset %d twice", ErrInvalidBatch, key, offsets[i])
			}
		}
		if len(offsets) > 0 {
			parts[key] = offsets
		}
	}
	for item, ok := range completed {
		if ok && !found(parts[item.TopicPartition], item.Offset) {
			return nil, fmt.Errorf("%w: %q offset %d", ErrUnknownRecord, item.TopicPartition, item.Offset)
		}
	}
	return parts, nil
}

func sortedKeys(m map[string][]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func found(offsets []int64, offset int64) bool {
	_, ok := slices.BinarySearch(offsets, offset)
	return ok
}
