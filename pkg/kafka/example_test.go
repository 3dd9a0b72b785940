package kafka_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A batch of partition 0 of "orders" whose offsets 6 and 8 were compacted
// away; the handler completed 5, 7 and 10 but not 9.
func Example() {
	ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{
		"orders-0": {
			{Topic: "orders", Partition: 0, Offset: 5},
			{Topic: "orders", Partition: 0, Offset: 7},
			{Topic: "orders", Partition: 0, Offset: 9},
			{Topic: "orders", Partition: 0, Offset: 10},
		},
	}}
	completed := map[kafka.ItemIdentifier]bool{
		{TopicPartition: "orders-0", Offset: 5}:  true,
		{TopicPartition: "orders-0", Offset: 7}:  true,
		{TopicPartition: "orders-0", Offset: 10}: true,
	}
	resp, err := kafka.Response(ev, completed)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(resp)
	fmt.Println(string(b))
	commit, _ := kafka.CommitOffsets(ev, completed)
	fmt.Println("commit orders-0 at", commit["orders-0"])
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":{"topic-partition":"orders-0","offset":9}}]}
	// commit orders-0 at 9
}

// Records keyed by job run per job in offset order, jobs in parallel. Job
// 42's first record fails: its later record is not started, and both are
// reported; job 43's records, between and after them, complete. Lambda
// redelivers partition 0 from offset 10 (see the package documentation):
// 11 is delivered again, completed, and the fenced store absorbs it.
func ExampleProcessor_Process() {
	p, err := kafka.New(kafka.Config{Handler: func(ctx context.Context, rec kafka.Record) error {
		if string(rec.Value) == "job-42 step 1" {
			return errors.New("task failed")
		}
		return nil
	}})
	if err != nil {
		fmt.Println("invalid configuration:", err)
		return
	}
	record := func(offset int64, key, value string) events.KafkaRecord {
		return events.KafkaRecord{Topic: "commands", Partition: 0, Offset: offset, TimestampType: "CREATE_TIME",
			Key: base64.StdEncoding.EncodeToString([]byte(key)), Value: base64.StdEncoding.EncodeToString([]byte(value))}
	}
	resp, err := p.Process(context.Background(), events.KafkaEvent{EventSource: "aws:kafka", Records: map[string][]events.KafkaRecord{
		"commands-0": {
			record(10, "job-42", "job-42 step 1"),
			record(11, "job-43", "job-43 step 1"),
			record(12, "job-42", "job-42 step 2"),
			record(13, "job-43", "job-43 step 2"),
		},
	}})
	if err != nil {
		fmt.Println("batch refused:", err)
		return
	}
	b, _ := json.Marshal(resp)
	fmt.Println(string(b))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":{"topic-partition":"commands-0","offset":10}},{"itemIdentifier":{"topic-partition":"commands-0","offset":12}}]}
}
