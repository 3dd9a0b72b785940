package lambdawire

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/kafka"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// kafkaQuarantined returns the Kafka processor's Config that puts a
// consumer under its topic's quarantine (pkg/quarantine's KafkaQuarantine),
// for consumeKafka to complete: QUARANTINE_TABLE, the topic in topicVar
// (COMMANDS_TOPIC or EVENTS_TOPIC: the mapping names the topic it reads,
// and the quarantine refuses any other), QUARANTINE_BUCKET (large values,
// under quarantine/<topic>/) and QUARANTINE_AFTER_ATTEMPTS, the attempt at
// which a record is parked before it runs (at least least, default least;
// at most the mapping's MaximumRetryAttempts + 1, the bound
// kafka.Config.QuarantineThreshold explains, which this function cannot
// check; template-kafka.yaml keeps it at most MaximumRetryAttempts, one
// invocation spare, and its tests hold that), and TOPIC_PARTITIONS, the partitions the topic was created
// with (template-kafka.yaml's TopicPartitions): a record the relay
// partitioned over another count (the topic's partitions were added to,
// so its key may have moved) holds its key instead of running
// (kafka.Config.PartitionCount). Parked and dropped records are counted in
// EMF records of the function's log, under the dimension Queue = the
// topic.
func kafkaQuarantined(env *startup.Env, cfg aws.Config, db *dynamodb.Client, log *slog.Logger, topicVar string, least int) kafka.Config {
	table := env.String("QUARANTINE_TABLE")
	var holds holdsOpener
	if table != "" {
		holds = dynamoHolds(db, table)
	}
	return kafkaQuarantinedOn(env, cfg, holds, log, topicVar, least)
}

// kafkaQuarantinedOn is kafkaQuarantined with the holds holds opens (nil:
// none, a problem env names already).
func kafkaQuarantinedOn(env *startup.Env, cfg aws.Config, holds holdsOpener, log *slog.Logger, topicVar string, least int) kafka.Config {
	topic := env.String(topicVar)
	bucket := env.String("QUARANTINE_BUCKET")
	after := env.Int("QUARANTINE_AFTER_ATTEMPTS", least, least, 1000)
	partitions := 0
	if env.String("TOPIC_PARTITIONS") != "" {
		partitions = env.Int("TOPIC_PARTITIONS", 1, 1, maxPartitions)
	}
	if holds == nil || topic == "" || bucket == "" || partitions == 0 {
		return kafka.Config{} // env.Err reports it
	}
	store := holds(env)
	if store == nil {
		return kafka.Config{}
	}
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: S3(cfg), Bucket: bucket})
	if err != nil {
		env.Refuse(err, startup.Fields{"Bucket": "QUARANTINE_BUCKET"})
		return kafka.Config{}
	}
	q, err := quarantine.NewKafka(quarantine.KafkaConfig{Store: store, Topic: topic, Bodies: bodies})
	if err != nil {
		env.Refuse(err, startup.Fields{"Topic": topicVar})
		return kafka.Config{}
	}
	return kafka.Config{Quarantine: q, QuarantineThreshold: after, PartitionCount: partitions, Metrics: quarantine.LoggedKafkaBatchMetrics(log, topic)}
}

// maxPartitions bounds TOPIC_PARTITIONS: far above any topic's (MSK
// advises at most a few thousand partitions per broker).
const maxPartitions = 100_000

// consumeKafka returns the Process of a Kafka processor of cfg (a
// consumer's quarantine, from kafkaQuarantined) calling h and logging to
// log, or every problem env has found.
func consumeKafka(env *startup.Env, cfg kafka.Config, h kafka.Handler, log *slog.Logger) (*kafka.Processor, error) {
	if err := env.Err(); err != nil {
		return nil, err
	}
	cfg.Handler, cfg.Logger = h, log
	p, err := kafka.New(cfg)
	if err != nil {
		return nil, env.Refused(err, startup.Fields{"QuarantineThreshold": "QUARANTINE_AFTER_ATTEMPTS", "PartitionCount": "TOPIC_PARTITIONS"})
	}
	return p, nil
}

// processKafka is the Process of consumeKafka's processor.
func processKafka(env *startup.Env, cfg kafka.Config, h kafka.Handler, log *slog.Logger) (func(context.Context, events.KafkaEvent) (kafka.EventResponse, error), error) {
	p, err := consumeKafka(env, cfg, h, log)
	if err != nil {
		return nil, err
	}
	return p.Process, nil
}
