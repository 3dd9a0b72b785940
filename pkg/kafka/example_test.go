package kafka_test

import (
	"encoding/json"
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
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":9}}]}
	// commit orders-0 at 9
}
