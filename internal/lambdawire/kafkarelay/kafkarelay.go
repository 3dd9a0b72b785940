package kafkarelay

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// Relay publishes the Jobs table's stream (internal/app/outbox) to the
// commands and events topics (internal/app/outbox/kafkaout): each job's
// records keyed by its id and in its order, from an idempotent producer
// that waits for all in-sync replicas. Settings, template-kafka.yaml's:
//   - TRANSPORT: "kafka" (startup.CheckTransport);
//   - KAFKA_BOOTSTRAP_SERVERS: the brokers, host:port, comma-separated
//     (spaces around each are dropped);
//   - COMMANDS_TOPIC and EVENTS_TOPIC: two Kafka topic names;
//   - KAFKA_SASL_MECHANISM: unset for none (plain Kafka, the local
//     broker's), AWS_MSK_IAM for Amazon MSK's IAM access control (over
//     TLS, each session signed with the function's credentials, cfg's),
//     or SCRAM-SHA-512, which is not wired yet: its user is in the Secrets
//     Manager secret KAFKA_SECRET_ARN names, and reading it needs the
//     SDK's Secrets Manager client, which this module does not require
//     yet. Such a function fails its init, saying so, rather than
//     connect without its user.
//
// Nothing is dialled before the first record.
func Relay(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), error) {
	startup.CheckTransport(env, startup.TransportKafka)
	brokers := strings.Split(env.String("KAFKA_BOOTSTRAP_SERVERS"), ",")
	for i, b := range brokers {
		brokers[i] = strings.TrimSpace(b)
	}
	commands := env.String("COMMANDS_TOPIC")
	evts := env.String("EVENTS_TOPIC")
	auth := producerAuth(env)
	if err := env.Err(); err != nil {
		return nil, err
	}
	producer, err := kafkaout.NewProducer(kafkaout.ProducerConfig{Brokers: brokers, Auth: auth, Credentials: cfg.Credentials, Logger: log})
	if err != nil {
		return nil, env.Refused(err, map[string]string{
			"Brokers": "KAFKA_BOOTSTRAP_SERVERS", "Auth": "KAFKA_SASL_MECHANISM", "Credentials": "KAFKA_SASL_MECHANISM",
		})
	}
	relay, err := kafkaout.NewRelay(kafkaout.Config{Producer: producer, CommandsTopic: commands, EventsTopic: evts, Logger: log})
	if err != nil {
		producer.Close()
		return nil, env.Refused(err, map[string]string{"CommandsTopic": "COMMANDS_TOPIC", "EventsTopic": "EVENTS_TOPIC"})
	}
	return relay.Handle, nil
}

// producerAuth is KAFKA_SASL_MECHANISM as the producer's authentication:
// template-kafka.yaml's values are the SASL mechanisms' names, which
// kafkaout's Auth values are.
func producerAuth(env *startup.Env) kafkaout.Auth {
	switch m := kafkaout.Auth(env.StringOr("KAFKA_SASL_MECHANISM", "")); m {
	case kafkaout.AuthNone, kafkaout.AuthMSKIAM:
		return m
	case kafkaout.AuthSCRAMSHA512:
		env.Problem("KAFKA_SASL_MECHANISM", fmt.Errorf("%s is not wired yet: its user is in the secret KAFKA_SECRET_ARN names, "+
			"and reading it needs github.com/aws/aws-sdk-go-v2/service/secretsmanager, which go.mod does not require", m))
	default:
		env.Problem("KAFKA_SASL_MECHANISM", fmt.Errorf("%q is none of %s, %s (or unset: no authentication)", m, kafkaout.AuthMSKIAM, kafkaout.AuthSCRAMSHA512))
	}
	return kafkaout.AuthNone
}
