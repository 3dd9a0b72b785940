package kafkabroker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Port: -1}, "Port"},
		{Config{Port: 65536}, "Port"},
		{Config{DefaultPartitions: -1}, "DefaultPartitions"},
	} {
		b, err := New(tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "%+v", tc.cfg)
		require.ErrorContains(t, err, tc.field)
		require.Nil(t, b)
	}
}

// The bounds, at exactly their values: a port is 0 (a free one) to 65535,
// a partition count 0 (the default) or more.
func TestValidateAcceptsTheBounds(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Port: 0}, {Port: 65535}, {DefaultPartitions: 0}, {DefaultPartitions: 1}} {
		require.NoError(t, cfg.Validate(), "%+v", cfg)
	}
}

// start runs a broker for the test and stops it after.
func start(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return b
}

func admin(t *testing.T, b *Broker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// listeners are the local addresses of the TCP sockets listening on port,
// from /proc/net/tcp and /proc/net/tcp6 (what ss -ltn reads): IPv4 ones
// as dotted quads, IPv6 ones as "tcp6 " and their hex.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexAddr, hexPort, _ := strings.Cut(f[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 16)
			require.NoError(t, err)
			if int(p) != port {
				continue
			}
			if file == "/proc/net/tcp6" {
				out = append(out, "tcp6 "+hexAddr)
				continue
			}
			a, err := strconv.ParseUint(hexAddr, 16, 32) // the kernel's byte order: little-endian here
			require.NoError(t, err)
			out = append(out, fmt.Sprintf("%d.%d.%d.%d", a&0xff, a>>8&0xff, a>>16&0xff, a>>24))
		}
	}
	return out
}

// The broker listens on 127.0.0.1 and nowhere else, and says so in its
// metadata: a client that bootstraps from it stays on loopback.
func TestItListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	host, portText, err := net.SplitHostPort(b.Addr())
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1"}, listeners(t, port))

	meta, err := admin(t, b).BrokerMetadata(context.Background())
	require.NoError(t, err)
	require.Len(t, meta.Brokers, 1, "one broker")
	require.Equal(t, "127.0.0.1", meta.Brokers[0].Host)
	require.Equal(t, int32(port), meta.Brokers[0].Port)
}

func TestItListensOnTheConfiguredPort(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	_, err = New(Config{Port: port})
	require.Error(t, err, "the port is taken")
	require.NotErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, l.Close())

	b := start(t, Config{Port: port})
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(port), b.Addr())
}

// A record goes through the broker as through Kafka: a topic made with
// CreateTopics, an idempotent producer with acks from all replicas, a
// consumer group.
func TestARecordGoesThroughTheBroker(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := admin(t, b).CreateTopic(ctx, -1, -1, nil, "commands")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	require.Equal(t, int32(1), created.NumPartitions, "the default partition count is Kafka's num.partitions, 1")

	producer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer producer.Close()
	sent := &kgo.Record{Topic: "commands", Key: []byte("job-1"), Value: []byte(`{"v":1}`),
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0x80}}}}
	require.NoError(t, producer.ProduceSync(ctx, sent).FirstErr())

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("worker"), kgo.ConsumeTopics("commands"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	fetches := consumer.PollFetches(ctx)
	require.NoError(t, fetches.Err())
	got := fetches.Records()
	require.Len(t, got, 1)
	require.Equal(t, int64(0), got[0].Offset)
	require.Equal(t, "job-1", string(got[0].Key))
	require.Equal(t, `{"v":1}`, string(got[0].Value))
	require.Equal(t, sent.Headers, got[0].Headers)
	require.NoError(t, consumer.CommitRecords(ctx, got...))
}

func TestDefaultPartitionsIsWhatATopicLeftToTheBrokerGets(t *testing.T) {
	t.Parallel()
	b := start(t, Config{DefaultPartitions: 3})
	created, err := admin(t, b).CreateTopic(context.Background(), -1, -1, nil, "events")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	require.Equal(t, int32(3), created.NumPartitions)
}

// As on an MSK cluster with its default configuration
// (auto.create.topics.enable=false), a topic exists only once created: a
// metadata request that asks for a topic to be created creates nothing,
// and the broker starts with no topic.
func TestTopicsAreNeverCreatedOnDemand(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("no-such-topic")
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.ErrorIs(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), kerr.UnknownTopicOrPartition)

	topics, err := admin(t, b).ListTopics(context.Background())
	require.NoError(t, err)
	require.Empty(t, topics.Names(), "nothing is made on start or on demand")
}

// One broker holds one replica: a topic asking for more is refused.
func TestAReplicationFactorAboveOneIsRefused(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	created, err := admin(t, b).CreateTopic(context.Background(), 1, 3, nil, "replicated")
	require.ErrorIs(t, errors.Join(err, created.Err), kerr.InvalidReplicationFactor)
}

// Run serves until its context ends, then closes the listener.
func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	b := start(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	conn, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err, "it serves while Run runs")
	require.NoError(t, conn.Close())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", b.Addr())
	require.Error(t, err, "the listener is closed")
}

func TestItLogsWhereItListens(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	b := start(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	require.Contains(t, buf.String(), "addr="+b.Addr())
}

// BenchmarkColdStart: from New to the first metadata answer, what the
// stack's readiness probe waits for after the process has started.
func BenchmarkColdStart(b *testing.B) {
	for b.Loop() {
		broker, err := New(Config{})
		require.NoError(b, err)
		cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addr()))
		require.NoError(b, err)
		_, err = kadm.NewClient(cl).BrokerMetadata(context.Background())
		require.NoError(b, err)
		cl.Close()
		broker.Close()
	}
}
