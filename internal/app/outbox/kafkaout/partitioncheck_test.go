package kafkaout_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// The relay produces to a topic only while the brokers show it with the
// partition count the relay is configured with, and stamps each record
// with that count. One partition fewer or more on the brokers: nothing is
// produced, the response names the first record (the stream mapping
// retries it, so nothing is lost), and the log names the topic, the
// brokers' count and the relay's. A relay of the topics' count then
// publishes the whole history, in order.
func TestTheRelayProducesOnlyWhileTheBrokersShowItsPartitionCount(t *testing.T) {
	t.Parallel()
	for _, expected := range []int{partitions - 1, partitions, partitions + 1} {
		t.Run(fmt.Sprintf("the relay expects %d of %d", expected, partitions), func(t *testing.T) {
			t.Parallel()
			b := setupBroker(t)
			produced := failProduce(b.cluster, 0, func(int64) bool { return false }) // counts the produce requests
			a := outboxtest.History("job-42", jobs.EventStarted, jobs.EventCompleted)
			resp, err := b.relay(t, kafkaout.Config{PartitionCount: expected}).Handle(t.Context(), events.DynamoDBEvent{Records: a})
			require.NoError(t, err)
			if expected != partitions {
				require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures)
				require.Zero(t, produced.Load(), "nothing is produced")
				require.Contains(t, b.logs.String(), fmt.Sprintf(`topic \"%s\" has %d partitions on the brokers, the relay expects %d`, commandsTopic, partitions, expected))
				require.Empty(t, b.consume(t, commandsTopic))
				require.Empty(t, b.consume(t, eventsTopic))
				resp, err = b.relay(t, kafkaout.Config{}).Handle(t.Context(), events.DynamoDBEvent{Records: a})
				require.NoError(t, err)
			}
			require.Empty(t, resp.BatchItemFailures, b.logs.String())
			commands, evts := b.consume(t, commandsTopic), b.consume(t, eventsTopic)
			require.Equal(t, map[string][]string{"job-42": {"job-42/v0"}}, lanes(t, commands))
			require.Equal(t, map[string][]string{"job-42": {"job-42/v1", "job-42/v2"}}, lanes(t, evts))
			for _, r := range append(commands, evts...) {
				require.Equal(t, []string{strconv.Itoa(partitions)}, headerValues(r, kafka.PartitionCountHeader))
			}
		})
	}
}

// The stale relay of pkg/kafka's doc ("A key that moves partition"): an
// execution environment whose producer learnt the topics' partitions
// before partitions were added. After a fresh environment published a
// job's version stamped with the new count, the stale one must not publish
// the job's next version stamped with the old count to the old partition
// (a consumer of the old count would run it, while the newer-stamped
// version before it waits on the new partition). It asks the brokers, sees
// the new count, and produces nothing.
func TestAStaleRelayProducesNothingOnceTheTopicsPartitionsChanged(t *testing.T) {
	t.Parallel()
	b := setupBrokerWith(t, 2)
	key := movedKey(t, 2, 8)
	a := outboxtest.History(key, jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	stale := b.relay(t, kafkaout.Config{PartitionCount: 2})
	resp, err := stale.Handle(t.Context(), events.DynamoDBEvent{Records: a[:2]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, b.logs.String())

	_, err = kadm.NewClient(b.producer).CreatePartitions(t.Context(), 6, commandsTopic, eventsTopic)
	require.NoError(t, err)
	staleProducer := b.producer
	b.producer = b.newProducer(t, "a-fresh-environment")
	resp, err = b.relay(t, kafkaout.Config{PartitionCount: 8}).Handle(t.Context(), events.DynamoDBEvent{Records: a[2:3]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, b.logs.String())

	b.producer = staleProducer
	resp, err = stale.Handle(t.Context(), events.DynamoDBEvent{Records: a[3:]})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[3].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), fmt.Sprintf(`topic \"%s\" has 8 partitions on the brokers, the relay expects 2`, eventsTopic))

	stamps := map[string]string{}
	for _, r := range b.consume(t, eventsTopic) {
		stamps[header(r, kafkaout.HeaderOutboxID)] = header(r, kafka.PartitionCountHeader)
	}
	require.Equal(t, map[string]string{key + "/v1": "2", key + "/v2": "8"}, stamps, "v3 is not published with the old count")
}

// A producer whose metadata is behind the brokers' (it learnt the topic's
// partitions before some were added) while the brokers and the relay agree
// on the new count: its partitioner would partition a record over the old
// count, so the record is refused, not written with a count it was not
// partitioned over, and the error says so. The relay has the producer's
// metadata refreshed, so a retry publishes the record, stamped and
// partitioned over the new count.
func TestARecordTheProducersStaleMetadataWouldMisplaceIsRefusedUntilItIsRefreshed(t *testing.T) {
	t.Parallel()
	b := setupBrokerWith(t, 2)
	key := movedKey(t, 2, 8)
	a := outboxtest.History(key, jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	resp, err := b.relay(t, kafkaout.Config{PartitionCount: 2}).Handle(t.Context(), events.DynamoDBEvent{Records: a[:2]})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures, b.logs.String())
	_, err = kadm.NewClient(b.newProducer(t, "admin")).CreatePartitions(t.Context(), 6, commandsTopic, eventsTopic)
	require.NoError(t, err)

	relay := b.relay(t, kafkaout.Config{PartitionCount: 8}) // the same producer, its metadata of 2 partitions
	resp, err = relay.Handle(t.Context(), events.DynamoDBEvent{Records: a[2:]})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[2].Change.SequenceNumber}}, resp.BatchItemFailures)
	require.Contains(t, b.logs.String(), fmt.Sprintf(`to topic \"%s\": the producer's metadata has 2 partitions, the brokers and the relay 8`, eventsTopic))
	require.Len(t, b.consume(t, eventsTopic), 1, "only v1")

	// The stream mapping's retries, until the producer's metadata is
	// refreshed: kgo's own refresh would wait for its MetadataMaxAge (5
	// minutes), far past this bound.
	require.Eventually(t, func() bool {
		resp, err := relay.Handle(t.Context(), events.DynamoDBEvent{Records: a[2:]})
		return err == nil && len(resp.BatchItemFailures) == 0
	}, 20*time.Second, 20*time.Millisecond, b.logs.String())
	want := kgo.StickyKeyPartitioner(nil).ForTopic(eventsTopic).Partition(&kgo.Record{Key: []byte(key)}, 8)
	got := map[string]string{}
	for _, r := range b.consume(t, eventsTopic) {
		id := header(r, kafkaout.HeaderOutboxID)
		got[id] = header(r, kafka.PartitionCountHeader)
		if id != key+"/v1" {
			require.Equal(t, int32(want), r.Partition, "%s partitioned over 8", id)
		}
	}
	require.Equal(t, map[string]string{key + "/v1": "2", key + "/v2": "8", key + "/v3": "8"}, got)
}

// The check costs one metadata request per round, for the round's topics
// only, never creating one.
func TestEachRoundAsksTheBrokersOnceForItsTopics(t *testing.T) {
	t.Parallel()
	one := outboxtest.History("job-1", jobs.EventStarted, jobs.EventCompleted) // v0 a command, v1 and v2 events
	two := outboxtest.History("job-2", jobs.EventStarted)                      // v1 an event
	f := &fakeProducer{}
	resp, err := newRelay(t, f, nil).Handle(t.Context(), events.DynamoDBEvent{Records: append(one, two[1])})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Len(t, f.produced, 4)
	for _, topics := range f.asked {
		slices.Sort(topics)
	}
	require.Equal(t, [][]string{{commandsTopic, eventsTopic}, {eventsTopic}, {eventsTopic}}, f.asked)
}

// What the brokers' metadata answers decides each topic alone: the
// commands topic as the relay expects it is produced to, the events topic
// is not when its answer is anything but exactly the relay's count, each
// error naming why.
func TestEachTopicsMetadataDecidesForItsRecords(t *testing.T) {
	t.Parallel()
	withEvents := func(change func(*kmsg.MetadataResponseTopic)) func(context.Context, *kmsg.MetadataRequest) (kmsg.Response, error) {
		return func(_ context.Context, req *kmsg.MetadataRequest) (kmsg.Response, error) {
			var topics []string
			for _, rt := range req.Topics {
				topics = append(topics, *rt.Topic)
			}
			resp := metadataResponse(nil, topics...)
			for i := range resp.Topics {
				if *resp.Topics[i].Topic == eventsTopic {
					change(&resp.Topics[i])
				}
			}
			return resp, nil
		}
	}
	for _, tc := range []struct {
		name     string
		f        *fakeProducer
		produced int    // records produced: 2 both, 1 the command alone
		log      string // what the log says of the events' record
	}{
		{"the events topic has the relay's count", &fakeProducer{}, 2, ""},
		{"one partition fewer", &fakeProducer{topicPartitions: map[string]int{eventsTopic: partitions - 1}}, 1,
			fmt.Sprintf(`topic \"%s\" has %d partitions on the brokers, the relay expects %d`, eventsTopic, partitions-1, partitions)},
		{"one partition more", &fakeProducer{topicPartitions: map[string]int{eventsTopic: partitions + 1}}, 1,
			fmt.Sprintf(`topic \"%s\" has %d partitions on the brokers, the relay expects %d`, eventsTopic, partitions+1, partitions)},
		{"no partitions", &fakeProducer{topicPartitions: map[string]int{eventsTopic: 0}}, 1,
			fmt.Sprintf(`topic \"%s\" has 0 partitions on the brokers, the relay expects %d`, eventsTopic, partitions)},
		{"the topic does not exist", &fakeProducer{metadata: withEvents(func(rt *kmsg.MetadataResponseTopic) {
			rt.ErrorCode, rt.Partitions = kerr.UnknownTopicOrPartition.Code, nil
		})}, 1, fmt.Sprintf(`topic \"%s\" does not exist (the relay creates no topic): UNKNOWN_TOPIC_OR_PARTITION`, eventsTopic)},
		{"the relay may not describe the topic", &fakeProducer{metadata: withEvents(func(rt *kmsg.MetadataResponseTopic) {
			rt.ErrorCode, rt.Partitions = kerr.TopicAuthorizationFailed.Code, nil
		})}, 1, fmt.Sprintf(`the brokers' metadata of topic \"%s\": TOPIC_AUTHORIZATION_FAILED`, eventsTopic)},
		{"the answer leaves the topic out", &fakeProducer{metadata: func(_ context.Context, req *kmsg.MetadataRequest) (kmsg.Response, error) {
			var others []string
			for _, rt := range req.Topics {
				if *rt.Topic != eventsTopic {
					others = append(others, *rt.Topic)
				}
			}
			return metadataResponse(nil, others...), nil
		}}, 1, fmt.Sprintf(`the brokers' metadata did not describe topic \"%s\"`, eventsTopic)},
		{"the request fails", &fakeProducer{metadata: func(_ context.Context, req *kmsg.MetadataRequest) (kmsg.Response, error) {
			if *req.Topics[0].Topic == eventsTopic {
				return nil, errors.New("injected")
			}
			return metadataResponse(nil, commandsTopic), nil
		}}, 1, fmt.Sprintf(`the brokers' metadata of topic \"%s\": no answer (are the brokers reachable?): injected`, eventsTopic)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := outboxtest.History("job-42", jobs.EventStarted)
			var logs bytes.Buffer
			resp, err := newRelay(t, tc.f, slog.New(slog.NewJSONHandler(&logs, nil))).Handle(t.Context(), events.DynamoDBEvent{Records: a})
			require.NoError(t, err)
			require.Len(t, tc.f.produced, tc.produced)
			require.Equal(t, commandsTopic, tc.f.produced[0].Topic)
			if tc.produced == 2 {
				require.Empty(t, resp.BatchItemFailures)
				return
			}
			require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[1].Change.SequenceNumber}}, resp.BatchItemFailures)
			require.Contains(t, logs.String(), "job-42/v1")
			require.Contains(t, logs.String(), tc.log)
		})
	}
}

// The metadata request ends with the round's wait: brokers that do not
// answer it fail the round exactly ResponseReserve before the deadline,
// saying so, and nothing is produced.
func TestAMetadataRequestWithoutAnAnswerEndsWithTheWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeProducer{metadata: func(ctx context.Context, _ *kmsg.MetadataRequest) (kmsg.Response, error) {
			<-ctx.Done() // the brokers never answer
			return nil, ctx.Err()
		}}
		var logs bytes.Buffer
		a := outboxtest.History("job-42", jobs.EventStarted)
		const timeout = 10 * time.Second
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		start := time.Now()
		resp, err := newRelay(t, f, slog.New(slog.NewJSONHandler(&logs, nil))).Handle(ctx, events.DynamoDBEvent{Records: a})
		require.NoError(t, err)
		require.Equal(t, timeout-kafkaout.DefaultResponseReserve, time.Since(start))
		require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: a[0].Change.SequenceNumber}}, resp.BatchItemFailures)
		require.Empty(t, f.produced)
		require.Contains(t, logs.String(), fmt.Sprintf(`the brokers' metadata of topic \"%s\": not answered by %v before the invocation's deadline (are the brokers reachable?)`,
			commandsTopic, kafkaout.DefaultResponseReserve))
	})
}
