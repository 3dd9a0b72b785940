//go:build integration

package localesm_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/pkg/localesm"
)

const kafkaTopic = "fifoworker-commands"

// kafkaCluster starts an in-process Kafka broker on 127.0.0.1 with
// kafkaTopic in two partitions, and returns its address and a client that
// produces to the partition a record names and reads group offsets.
func kafkaCluster(t *testing.T) (addrs []string, client *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, kafkaTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	client, err = kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return c.ListenAddrs(), client
}

// committedOffsets reads a group's committed offsets by topic-partition.
func committedOffsets(t *testing.T, client *kgo.Client, group string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	offsets, err := kadm.NewClient(client).FetchOffsets(t.Context(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return out
	}
	require.NoError(t, err)
	offsets.Each(func(o kadm.OffsetResponse) { out[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.At })
	return out
}

// TestKafkaPartialResponseUnderTheEmulator drives a real Go bootstrap under
// aws-lambda-rie from a Kafka topic: the function reports a record of each
// partition failed once; the mapping commits each partition up to the
// record it reported and invokes again from there, then commits to the
// end; a new mapping in the group starts at that commit.
func TestKafkaPartialResponseUnderTheEmulator(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	addr, recordLog := startRIEWith(t, timeout, "./testdata/kafkabootstrap")
	addrs, client := kafkaCluster(t)
	produce := func(partition int32, key, value string) {
		r := &kgo.Record{Topic: kafkaTopic, Partition: partition, Value: []byte(value),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte{0xfe, 1}}}}
		if key != "" {
			r.Key = []byte(key)
		}
		require.NoError(t, client.ProduceSync(t.Context(), r).FirstErr())
	}
	for _, v := range []string{"ok", "fail-once", "ok", "ok"} {
		produce(0, "job-0", v)
	}
	produce(1, "", "ok")
	produce(1, "job-1", "fail-once")

	var mu sync.Mutex
	var results []localesm.KafkaBatchResult
	rie, err := localesm.NewRIE(localesm.RIEConfig{Addr: addr})
	require.NoError(t, err)
	run := func(group string) func() {
		m, err := localesm.NewKafkaMapping(localesm.KafkaConfig{
			BootstrapServers: addrs, Topics: []string{kafkaTopic}, ConsumerGroupID: group, Invoker: rie,
			ReportBatchItemFailures: true, FunctionTimeout: timeout, MaximumBatchingWindow: time.Second,
			OnBatch: func(r localesm.KafkaBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		return start(t, m.Run)
	}
	stop := run("integration")
	eventually(t, 60*time.Second, "both partitions committed to their end", func() bool {
		c := committedOffsets(t, client, "integration")
		return c[kafkaTopic+"-0"] == 4 && c[kafkaTopic+"-1"] == 2
	})
	stop()

	mu.Lock()
	require.Len(t, results, 2)
	first, second := results[0], results[1]
	mu.Unlock()
	require.Equal(t, localesm.OutcomePartialFailure, first.Outcome, "%v", first.Err)
	require.Equal(t, map[string][]int64{kafkaTopic + "-0": {0, 1, 2, 3}, kafkaTopic + "-1": {0, 1}}, first.Offsets)
	require.Equal(t, map[string]int64{kafkaTopic + "-0": 1, kafkaTopic + "-1": 1}, first.Committed, "each partition up to the record it reported")
	require.Equal(t, localesm.OutcomeSuccess, second.Outcome, "%v", second.Err)
	require.Equal(t, map[string][]int64{kafkaTopic + "-0": {1, 2, 3}, kafkaTopic + "-1": {1}}, second.Offsets, "everything from the reported records again")
	require.Equal(t, map[string]int64{kafkaTopic + "-0": 4, kafkaTopic + "-1": 2}, second.Committed)

	// What the function got over the emulator is Lambda's event.
	events := readKafkaLog(t, recordLog)
	require.Len(t, events, 2)
	ev := events[0]
	require.Equal(t, "SelfManagedKafka", ev.EventSource)
	require.Empty(t, ev.EventSourceARN)
	require.Equal(t, strings.Join(addrs, ","), ev.BootstrapServers)
	r := ev.Records[kafkaTopic+"-0"][1]
	require.Equal(t, "am9iLTA=", r.Key)
	require.Equal(t, "ZmFpbC1vbmNl", r.Value)
	require.Equal(t, []byte{0xfe, 1}, []byte(r.Headers[0]["trace"]))
	require.Empty(t, ev.Records[kafkaTopic+"-1"][0].Key, "a null key is left out")

	// A new mapping in the group starts at its commit.
	produce(0, "job-0", "ok")
	stop = run("integration")
	eventually(t, 60*time.Second, "the new record committed", func() bool {
		return committedOffsets(t, client, "integration")[kafkaTopic+"-0"] == 5
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, results, 3)
	require.Equal(t, map[string][]int64{kafkaTopic + "-0": {4}}, results[2].Offsets)
}

func readKafkaLog(t *testing.T, path string) []events.KafkaEvent {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []events.KafkaEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			RequestID string            `json:"aws_request_id"`
			Event     events.KafkaEvent `json:"event"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		require.NotEmpty(t, line.RequestID)
		out = append(out, line.Event)
	}
	require.NoError(t, sc.Err())
	return out
}
