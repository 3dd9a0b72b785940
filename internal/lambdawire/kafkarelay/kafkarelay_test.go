package kafkarelay_test

import (
	"context"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// full is every setting Relay reads, each valid: two brokers (nothing is
// dialled before the first record), no authentication.
var full = map[string]string{
	"TRANSPORT": "kafka", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092, 127.0.0.1:9093",
	"COMMANDS_TOPIC": "fifoworker-commands", "EVENTS_TOPIC": "fifoworker-events", "TOPIC_PARTITIONS": "2",
}

var withCredentials = aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}

func build(env map[string]string, cfg aws.Config) error {
	_, err := kafkarelay.Relay(startup.NewEnvFrom(env), cfg, slog.New(slog.DiscardHandler))
	return err
}

func with(change map[string]string) map[string]string {
	env := maps.Clone(full)
	for k, v := range change {
		if v == "" {
			delete(env, k)
			continue
		}
		env[k] = v
	}
	return env
}

// Every setting is named when it is missing or wrong, under its own
// variable, and every problem at once.
func TestRelayNamesEveryMisconfiguredSetting(t *testing.T) {
	t.Parallel()
	require.NoError(t, build(full, withCredentials))
	require.NoError(t, build(with(map[string]string{"KAFKA_SASL_MECHANISM": "AWS_MSK_IAM"}), withCredentials), "MSK IAM signs with the function's credentials")
	for _, n := range []string{"1", "100000"} {
		require.NoError(t, build(with(map[string]string{"TOPIC_PARTITIONS": n}), withCredentials), "TOPIC_PARTITIONS=%s", n)
	}
	for name, tc := range map[string]struct {
		change map[string]string
		cfg    aws.Config
		want   []string
	}{
		"nothing set": {map[string]string{"TRANSPORT": "", "KAFKA_BOOTSTRAP_SERVERS": "", "COMMANDS_TOPIC": "", "EVENTS_TOPIC": "", "TOPIC_PARTITIONS": ""}, withCredentials,
			[]string{"TRANSPORT is not set", "KAFKA_BOOTSTRAP_SERVERS is not set", "COMMANDS_TOPIC is not set", "EVENTS_TOPIC is not set", "TOPIC_PARTITIONS is not set"}},
		"no partitions":          {map[string]string{"TOPIC_PARTITIONS": "0"}, withCredentials, []string{`TOPIC_PARTITIONS="0" is not an integer in [1, 100000]`}},
		"too many partitions":    {map[string]string{"TOPIC_PARTITIONS": "100001"}, withCredentials, []string{`TOPIC_PARTITIONS="100001" is not an integer in [1, 100000]`}},
		"partitions not a count": {map[string]string{"TOPIC_PARTITIONS": "six"}, withCredentials, []string{`TOPIC_PARTITIONS="six" is not an integer`}},
		"SQS's transport": {map[string]string{"TRANSPORT": "sqs"}, withCredentials,
			[]string{`TRANSPORT: "sqs", but this bootstrap's wiring is Kafka's: build it without the kafka tag`}},
		"a broker without a port": {map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092,broker-2"}, withCredentials,
			[]string{`KAFKA_BOOTSTRAP_SERVERS: outbox: invalid configuration: Brokers: "broker-2" is not host:port`}},
		"an empty broker": {map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092,,127.0.0.1:9093"}, withCredentials,
			[]string{`KAFKA_BOOTSTRAP_SERVERS: outbox: invalid configuration: Brokers: "" is not host:port`}},
		"a commands topic Kafka refuses": {map[string]string{"COMMANDS_TOPIC": "commands/v1"}, withCredentials,
			[]string{`COMMANDS_TOPIC: outbox: invalid configuration: CommandsTopic "commands/v1" is not a Kafka topic name`}},
		"an events topic Kafka refuses": {map[string]string{"EVENTS_TOPIC": ".."}, withCredentials,
			[]string{`EVENTS_TOPIC: outbox: invalid configuration: EventsTopic ".." is not a Kafka topic name`}},
		"one topic for both": {map[string]string{"EVENTS_TOPIC": "fifoworker-commands"}, withCredentials,
			[]string{"COMMANDS_TOPIC or EVENTS_TOPIC: outbox: invalid configuration: EventsTopic \"fifoworker-commands\" is CommandsTopic too"}},
		"an unknown mechanism": {map[string]string{"KAFKA_SASL_MECHANISM": "PLAIN"}, withCredentials,
			[]string{`KAFKA_SASL_MECHANISM: "PLAIN" is none of AWS_MSK_IAM, SCRAM-SHA-512 (or unset: no authentication)`}},
		"SCRAM without its secret": {map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "COMMANDS_TOPIC": ""}, withCredentials,
			[]string{"KAFKA_SECRET_ARN is not set", "COMMANDS_TOPIC is not set"}},
		"SCRAM with a secret that is not one": {map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:parameter:kafka", "EVENTS_TOPIC": ""}, withCredentials,
			[]string{`KAFKA_SECRET_ARN: kafkarelay: SCRAM secret: "arn:aws:secretsmanager:eu-west-1:123456789012:parameter:kafka" is not a Secrets Manager secret's ARN`, "EVENTS_TOPIC is not set"}},
		"MSK IAM without credentials": {map[string]string{"KAFKA_SASL_MECHANISM": "AWS_MSK_IAM"}, aws.Config{Region: "eu-west-1"},
			[]string{"KAFKA_SASL_MECHANISM: outbox: invalid configuration: Credentials is nil"}},
	} {
		err := build(with(tc.change), tc.cfg)
		require.ErrorContains(t, err, "lambdawire: misconfigured function: ", name)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, name)
		}
	}
}

// The wired relay on a broker (kfake, franz-go's in-process broker, on
// 127.0.0.1): a job's creation and start are published, the command to
// the commands topic and the event to the events topic, each keyed by the
// job id.
func TestTheWiredRelayPublishesToItsTopics(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "fifoworker-commands", "fifoworker-events"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	for _, a := range addrs {
		require.Regexp(t, `^127\.0\.0\.1:\d+$`, a)
	}
	handle, err := kafkarelay.Relay(startup.NewEnvFrom(with(map[string]string{"KAFKA_BOOTSTRAP_SERVERS": " " + addrs[0] + " "})), withCredentials, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	resp, err := handle(ctx, events.DynamoDBEvent{Records: outboxtest.History("job-1", jobs.EventStarted)})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)

	for topic, want := range map[string]string{"fifoworker-commands": "job-1/v0", "fifoworker-events": "job-1/v1"} {
		recs := consume(ctx, t, addrs, topic, 1)
		require.Len(t, recs, 1, topic)
		require.Equal(t, "job-1", string(recs[0].Key), topic)
		var id string
		for _, h := range recs[0].Headers {
			if h.Key == kafkaout.HeaderOutboxID {
				id = string(h.Value)
			}
		}
		require.Equal(t, want, id, topic)
		if topic == "fifoworker-commands" {
			cmd, err := outbox.DecodeCommand(string(recs[0].Value))
			require.NoError(t, err)
			require.Equal(t, "job-1", cmd.JobID)
		}
	}
}

// The wired relay produces only while the brokers show the topics with
// TOPIC_PARTITIONS partitions: with 3 of the broker's 2, nothing.
func TestTheWiredRelayProducesOnlyOverTopicPartitions(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "fifoworker-commands", "fifoworker-events"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	handle, err := kafkarelay.Relay(startup.NewEnvFrom(with(map[string]string{"KAFKA_BOOTSTRAP_SERVERS": c.ListenAddrs()[0], "TOPIC_PARTITIONS": "3"})),
		withCredentials, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	recs := outboxtest.History("job-1", jobs.EventStarted)
	resp, err := handle(ctx, events.DynamoDBEvent{Records: recs})
	require.NoError(t, err)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: recs[0].Change.SequenceNumber}}, resp.BatchItemFailures)
}

// consume reads n records of topic from its start.
func consume(ctx context.Context, t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records of %s", len(recs), n, topic)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		recs = append(recs, fs.Records()...)
	}
	return recs
}
