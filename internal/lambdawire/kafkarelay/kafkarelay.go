package kafkarelay

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
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
//   - TOPIC_PARTITIONS: the partitions each topic has, in [1, 100000] as
//     the consumers read it: the count each record carries, and the one
//     the brokers must show for the relay to produce (kafkaout's
//     Config.PartitionCount);
//   - KAFKA_SASL_MECHANISM: unset for none (plain Kafka, the local
//     broker's), AWS_MSK_IAM for Amazon MSK's IAM access control (over
//     TLS, each session signed with the function's credentials, cfg's),
//     or SCRAM-SHA-512 (a self-managed cluster's SASL_SSL listener) with
//   - KAFKA_SECRET_ARN: the Secrets Manager secret of the SCRAM user,
//     {"username", "password"}, read once at init (readSCRAMUser).
//
// Every setting is checked before the secret is read. Nothing is dialled
// before the first record.
func Relay(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), error) {
	startup.CheckStore(env, startup.StoreDynamoDB)
	startup.CheckTransport(env, startup.TransportKafka)
	s := readRelaySettings(env)
	if err := env.Err(); err != nil {
		return nil, err
	}
	kc, closeProducer, err := s.config(env, cfg, log)
	if err != nil {
		return nil, err
	}
	relay, err := kafkaout.NewRelay(kc)
	if err != nil {
		closeProducer()
		return nil, env.Refused(err, topicsFields)
	}
	return relay.Handle, nil
}

// RelayPostgres publishes the PostgreSQL job store's outbox table
// (internal/app/outbox/pgsource) to the commands and events topics, as
// Relay publishes the Jobs table's stream, for each writer's nudge and for
// the schedule that backs them up (template-kafka-postgres.yaml). Settings:
// Relay's, STORE "postgres", and the database's (open:
// internal/lambdawire/pgopen.Open, which a bootstrap built with the kafka
// and postgres tags passes; this package imports no driver).
func RelayPostgres(open func(*startup.Env, aws.Config) *sql.DB) startup.Builder[json.RawMessage, pgsource.Report] {
	return func(env *startup.Env, cfg aws.Config, log *slog.Logger) (func(context.Context, json.RawMessage) (pgsource.Report, error), error) {
		startup.CheckStore(env, startup.StorePostgres)
		startup.CheckTransport(env, startup.TransportKafka)
		s := readRelaySettings(env)
		db := open(env, cfg)
		if err := env.Err(); err != nil {
			return nil, err
		}
		kc, closeProducer, err := s.config(env, cfg, log)
		if err != nil {
			return nil, err
		}
		sink, err := kafkaout.NewSink(kc)
		if err != nil {
			closeProducer()
			return nil, env.Refused(err, topicsFields)
		}
		relay, err := pgsource.New(pgsource.Config{DB: db, Sink: sink, Logger: log, FunctionName: env.StringOr("AWS_LAMBDA_FUNCTION_NAME", "")})
		if err != nil {
			closeProducer()
			return nil, err // its Config holds no setting of its own
		}
		return relay.Handle, nil
	}
}

// topicsFields are the variables behind kafkaout.Config's settings.
var topicsFields = startup.Fields{"CommandsTopic": "COMMANDS_TOPIC", "EventsTopic": "EVENTS_TOPIC", "PartitionCount": "TOPIC_PARTITIONS"}

// relaySettings are the Kafka relay's settings, on either store.
type relaySettings struct {
	producer         producerSettings
	commands, events string
	partitions       int
}

// readRelaySettings reads the producer's settings, COMMANDS_TOPIC,
// EVENTS_TOPIC and TOPIC_PARTITIONS.
func readRelaySettings(env *startup.Env) relaySettings {
	s := relaySettings{producer: readProducerSettings(env), commands: env.String("COMMANDS_TOPIC"), events: env.String("EVENTS_TOPIC")}
	if env.String("TOPIC_PARTITIONS") != "" {
		s.partitions = env.Int("TOPIC_PARTITIONS", 0, 1, 100_000)
	}
	return s
}

// config is the relay's kafkaout.Config, its producer made (with SCRAM,
// its user read from the secret) and the function that closes it, or
// every problem env has found.
func (s relaySettings) config(env *startup.Env, cfg aws.Config, log *slog.Logger) (kafkaout.Config, func(), error) {
	pc, err := s.producer.config(env, cfg, log)
	if err != nil {
		return kafkaout.Config{}, nil, err
	}
	producer, err := kafkaout.NewProducer(pc)
	if err != nil {
		return kafkaout.Config{}, nil, env.Refused(err, startup.Fields{
			"Brokers": "KAFKA_BOOTSTRAP_SERVERS", "Auth": "KAFKA_SASL_MECHANISM", "Credentials": "KAFKA_SASL_MECHANISM",
			"Username": "KAFKA_SECRET_ARN", "Password": "KAFKA_SECRET_ARN",
		})
	}
	return kafkaout.Config{Producer: producer, CommandsTopic: s.commands, EventsTopic: s.events, PartitionCount: s.partitions, Logger: log}, producer.Close, nil
}

// producerSettings are the producer's settings, as read from the
// environment: the secret is not read yet.
type producerSettings struct {
	brokers []string
	auth    kafkaout.Auth
	secret  string // KAFKA_SECRET_ARN, with SCRAM only
}

// readProducerSettings reads KAFKA_BOOTSTRAP_SERVERS, KAFKA_SASL_MECHANISM
// (template-kafka.yaml's values are the SASL mechanisms' names, which
// kafkaout's Auth values are) and, with SCRAM-SHA-512, KAFKA_SECRET_ARN,
// which must then be a secret's ARN.
func readProducerSettings(env *startup.Env) producerSettings {
	s := producerSettings{brokers: strings.Split(env.String("KAFKA_BOOTSTRAP_SERVERS"), ",")}
	for i, b := range s.brokers {
		s.brokers[i] = strings.TrimSpace(b)
	}
	switch m := kafkaout.Auth(env.StringOr("KAFKA_SASL_MECHANISM", "")); m {
	case kafkaout.AuthNone, kafkaout.AuthMSKIAM:
		s.auth = m
	case kafkaout.AuthSCRAMSHA512:
		s.auth = m
		if s.secret = env.String("KAFKA_SECRET_ARN"); s.secret != "" {
			if _, err := parseSecretARN(s.secret); err != nil {
				env.Problem("KAFKA_SECRET_ARN", err)
			}
		}
	default:
		env.Problem("KAFKA_SASL_MECHANISM", fmt.Errorf("%q is none of %s, %s (or unset: no authentication)", m, kafkaout.AuthMSKIAM, kafkaout.AuthSCRAMSHA512))
	}
	return s
}

// config is the producer's configuration: with SCRAM, its user read from
// the secret (an error under KAFKA_SECRET_ARN, with every problem env has
// found).
//
//nolint:contextcheck // the init has no context: the read has its own bound
func (s producerSettings) config(env *startup.Env, cfg aws.Config, log *slog.Logger) (kafkaout.ProducerConfig, error) {
	pc := kafkaout.ProducerConfig{Brokers: s.brokers, Auth: s.auth, Credentials: cfg.Credentials, Logger: log}
	if s.auth != kafkaout.AuthSCRAMSHA512 {
		return pc, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretTimeout)
	defer cancel()
	user, err := readSCRAMUser(ctx, cfg, s.secret)
	if err != nil {
		env.Problem("KAFKA_SECRET_ARN", err)
		return pc, env.Err()
	}
	pc.Username, pc.Password = user.Username, user.Password
	return pc, nil
}
