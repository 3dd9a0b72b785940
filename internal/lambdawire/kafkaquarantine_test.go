package lambdawire

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The Kafka consumers' quarantine settings: each missing or malformed one
// is named, QUARANTINE_AFTER_ATTEMPTS is taken at exactly its least and
// refused one below, and the Config carries the topic's quarantine.
func TestKafkaQuarantineSettingsAreEachNamed(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1"}
	log := slog.New(slog.DiscardHandler)
	full := map[string]string{"QUARANTINE_TABLE": "q", "QUARANTINE_BUCKET": "b", "COMMANDS_TOPIC": "commands", "TOPIC_PARTITIONS": "6"}
	env := startup.NewEnvFrom(full)
	got := kafkaQuarantined(env, cfg, DynamoDB(cfg), log, "COMMANDS_TOPIC", 5)
	require.NoError(t, env.Err())
	require.IsType(t, &quarantine.KafkaQuarantine{}, got.Quarantine)
	require.Equal(t, 5, got.QuarantineThreshold, "the least is the default")
	require.Equal(t, 6, got.PartitionCount)
	require.NotNil(t, got.Metrics)

	for name := range full {
		m := maps.Clone(full)
		delete(m, name)
		env := startup.NewEnvFrom(m)
		require.Zero(t, kafkaQuarantined(env, cfg, DynamoDB(cfg), log, "COMMANDS_TOPIC", 5))
		require.ErrorContains(t, env.Err(), name+" is not set")
	}
	bad := maps.Clone(full)
	bad["COMMANDS_TOPIC"] = "commands#1"
	env = startup.NewEnvFrom(bad)
	require.Zero(t, kafkaQuarantined(env, cfg, DynamoDB(cfg), log, "COMMANDS_TOPIC", 5))
	require.ErrorContains(t, env.Err(), `COMMANDS_TOPIC`)
	require.ErrorContains(t, env.Err(), `"commands#1" is not a Kafka topic name`)

	for v, problem := range map[string]string{"4": `QUARANTINE_AFTER_ATTEMPTS="4" is not an integer in [5, 1000]`, "5": "", "1000": "", "1001": "[5, 1000]"} {
		m := maps.Clone(full)
		m["QUARANTINE_AFTER_ATTEMPTS"] = v
		env := startup.NewEnvFrom(m)
		got := kafkaQuarantined(env, cfg, DynamoDB(cfg), log, "COMMANDS_TOPIC", 5)
		if problem == "" {
			require.NoError(t, env.Err(), v)
			require.Equal(t, v, strconv.Itoa(got.QuarantineThreshold))
		} else {
			require.ErrorContains(t, env.Err(), problem, v)
		}
	}
	for v, problem := range map[string]string{"0": `TOPIC_PARTITIONS="0" is not an integer in [1, 100000]`, "1": "", "100000": "", "100001": "[1, 100000]", "x": "TOPIC_PARTITIONS"} {
		m := maps.Clone(full)
		m["TOPIC_PARTITIONS"] = v
		env := startup.NewEnvFrom(m)
		got := kafkaQuarantined(env, cfg, DynamoDB(cfg), log, "COMMANDS_TOPIC", 5)
		if problem == "" {
			require.NoError(t, env.Err(), v)
			require.Equal(t, v, strconv.Itoa(got.PartitionCount))
		} else {
			require.ErrorContains(t, env.Err(), problem, v)
		}
	}
	// The worker's least is MAX_GENERATIONS + 2.
	w := maps.Clone(kafkaWorkerEnv)
	w["MAX_GENERATIONS"], w["QUARANTINE_AFTER_ATTEMPTS"] = "4", "5"
	require.ErrorContains(t, buildWorkerKafka(w), `QUARANTINE_AFTER_ATTEMPTS="5" is not an integer in [6, 1000]`)
	w["QUARANTINE_AFTER_ATTEMPTS"] = "6"
	require.NoError(t, buildWorkerKafka(w))
}

// The wired consumers run under their topic's quarantine: with the
// quarantine table out of reach, no keyed record runs (the batch's check
// failed), and each is reported; a null-key record is not quarantined.
func TestTheKafkaConsumersRunUnderTheQuarantine(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "eu-west-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), RetryMaxAttempts: 1}
	for name, tc := range map[string]struct {
		env   map[string]string
		topic string
	}{
		"worker":    {kafkaWorkerEnv, kafkaWorkerEnv["COMMANDS_TOPIC"]},
		"projector": {kafkaProjectorEnv, kafkaProjectorEnv["EVENTS_TOPIC"]},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			var process func(context.Context, events.KafkaEvent) (kafka.EventResponse, error)
			if name == "worker" {
				h, err := WorkerKafka(startup.NewEnvFrom(tc.env), cfg, log)
				require.NoError(t, err)
				process = h
			} else {
				h, err := ProjectorKafka(startup.NewEnvFrom(tc.env), cfg, log)
				require.NoError(t, err)
				process = h
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			tp := tc.topic + "-0"
			resp, err := process(ctx, events.KafkaEvent{Records: map[string][]events.KafkaRecord{tp: {
				{Topic: tc.topic, Partition: 0, Offset: 1, Key: base64.StdEncoding.EncodeToString([]byte("job-1")), Value: base64.StdEncoding.EncodeToString([]byte("{}"))},
			}}})
			require.NoError(t, err)
			require.Len(t, resp.BatchItemFailures, 1)
			require.Contains(t, logs.String(), "kafka: quarantine check")
		})
	}
}
