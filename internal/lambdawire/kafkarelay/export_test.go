package kafkarelay

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// ReadSCRAMUser is readSCRAMUser, for the tests of package kafkarelay_test.
var ReadSCRAMUser = readSCRAMUser

// ProducerConfig is the producer's configuration Relay builds from env
// and cfg, its secret read, or every problem found.
func ProducerConfig(env *startup.Env, cfg aws.Config, log *slog.Logger) (kafkaout.ProducerConfig, error) {
	s := readProducerSettings(env)
	if err := env.Err(); err != nil {
		return kafkaout.ProducerConfig{}, err
	}
	return s.config(env, cfg, log)
}

// SecretEndpoint is the endpoint GetSecretValue of arn goes to with cfg.
func SecretEndpoint(arn string, cfg aws.Config) (string, error) {
	s, err := parseSecretARN(arn)
	if err != nil {
		return "", err
	}
	return s.endpoint(cfg)
}
