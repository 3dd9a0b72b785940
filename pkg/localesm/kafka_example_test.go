package localesm_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// A Kafka topic drives a function that reports a record failed once: the
// mapping commits up to that record and invokes again from it. kfake is an
// in-process broker; point BootstrapServers at any Kafka cluster instead.
func ExampleNewKafkaMapping() {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for _, v := range []string{"a", "b", "c"} {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			panic(err)
		}
	}

	reported := false
	handler := func(_ context.Context, ev events.KafkaEvent) (kafka.EventResponse, error) {
		var offsets []int64
		for _, r := range ev.Records["orders-0"] {
			offsets = append(offsets, r.Offset)
		}
		fmt.Println("invoked with offsets", offsets)
		if reported {
			return kafka.EventResponse{}, nil
		}
		reported = true
		return kafka.EventResponse{BatchItemFailures: []kafka.BatchItemFailure{
			{ItemIdentifier: kafka.ItemIdentifier{TopicPartition: "orders-0", Offset: 1}},
		}}, nil
	}
	m, err := localesm.NewKafkaMapping(localesm.KafkaConfig{
		BootstrapServers: cluster.ListenAddrs(), Topics: []string{"orders"}, ConsumerGroupID: "example",
		Invoker: localesm.Func(handler), ReportBatchItemFailures: true,
		OnBatch: func(r localesm.KafkaBatchResult) {
			fmt.Println(r.Outcome, "committed", r.Committed["orders-0"])
			if r.Outcome == localesm.OutcomeSuccess {
				stop()
			}
		},
	})
	if err != nil {
		panic(err)
	}
	if err := m.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// invoked with offsets [0 1 2]
	// partial_failure committed 1
	// invoked with offsets [1 2]
	// success committed 3
}
