package kafkaout_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
)

// mskBroker is an MSK broker's IAM listener; the mechanism takes the
// region from the host name.
const mskBroker = "b-1.fifoworker.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"

func newProducer(t *testing.T, cfg kafkaout.ProducerConfig) *kgo.Client {
	t.Helper()
	cl, err := kafkaout.NewProducer(cfg)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// Whatever the authentication, the producer is idempotent, waits for all
// in-sync replicas, does not linger (the relay waits for each round's
// acknowledgements), hashes keys as Kafka's own client does, and the relay
// takes it.
func TestTheProducerIsIdempotentAndWaitsForAllReplicas(t *testing.T) {
	t.Parallel()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, nil
	})
	for name, cfg := range map[string]kafkaout.ProducerConfig{
		"no authentication": {Brokers: []string{"127.0.0.1:9092"}},
		"MSK IAM":           {Brokers: []string{mskBroker}, Auth: kafkaout.AuthMSKIAM, Credentials: creds},
		"SCRAM-SHA-512":     {Brokers: []string{"kafka-1.example.internal:9096"}, Auth: kafkaout.AuthSCRAMSHA512, Username: "relay", Password: "pw"},
	} {
		cl := newProducer(t, cfg)
		require.Equal(t, false, cl.OptValue(kgo.DisableIdempotentWrite), name)
		require.Equal(t, kgo.AllISRAcks(), cl.OptValue(kgo.RequiredAcks), name)
		require.Equal(t, time.Duration(0), cl.OptValue(kgo.ProducerLinger), name)
		_, err := kafkaout.NewRelay(kafkaout.Config{Producer: cl, CommandsTopic: commandsTopic, EventsTopic: eventsTopic, PartitionCount: partitions})
		require.NoError(t, err, name)
	}
}

// Without authentication the producer speaks plain Kafka: no SASL, no TLS
// (a broker on 127.0.0.1, a self-managed cluster's plaintext listener).
func TestTheProducerWithoutAuthenticationHasNoSASLNorTLS(t *testing.T) {
	t.Parallel()
	cl := newProducer(t, kafkaout.ProducerConfig{Brokers: []string{"127.0.0.1:9092"}, Auth: kafkaout.AuthNone})
	require.Empty(t, cl.OptValue(kgo.SASL))
	require.Nil(t, cl.OptValue(kgo.DialTLSConfig))
}

// With MSK IAM the producer authenticates with AWS_MSK_IAM over TLS (MSK's
// IAM listener, port 9098, takes nothing else), and signs each session
// with the credentials the SDK's provider gives at that moment: the
// session token included, so the function's role credentials work and
// their rotation is picked up.
func TestTheProducerWithMSKIAMSignsWithTheSDKsCredentials(t *testing.T) {
	t.Parallel()
	calls := 0
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		calls++
		return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", SessionToken: "token-1"}, nil
	})
	cl := newProducer(t, kafkaout.ProducerConfig{Brokers: []string{mskBroker}, Auth: kafkaout.AuthMSKIAM, Credentials: creds})
	tlsCfg, ok := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	require.True(t, ok)
	require.NotNil(t, tlsCfg, "MSK's IAM listener is TLS only")
	require.GreaterOrEqual(t, tlsCfg.MinVersion, uint16(tls.VersionTLS12))
	mechs, ok := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	require.True(t, ok)
	require.Len(t, mechs, 1)
	require.Equal(t, "AWS_MSK_IAM", mechs[0].Name())
	require.Equal(t, string(kafkaout.AuthMSKIAM), mechs[0].Name(), "Auth is the mechanism's name, as the template's KAFKA_SASL_MECHANISM")

	_, first, err := mechs[0].Authenticate(t.Context(), mskBroker)
	require.NoError(t, err)
	require.Equal(t, 1, calls, "one retrieval per session")
	var challenge map[string]string
	require.NoError(t, json.Unmarshal(first, &challenge))
	require.Equal(t, "kafka-cluster:Connect", challenge["action"])
	require.Equal(t, "b-1.fifoworker.abc123.c2.kafka.eu-west-1.amazonaws.com", challenge["host"])
	cred, err := url.QueryUnescape(challenge["x-amz-credential"])
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(cred, "AKIDTEST/"), cred)
	require.True(t, strings.HasSuffix(cred, "/eu-west-1/kafka-cluster/aws4_request"), cred)
	require.Equal(t, "token-1", challenge["x-amz-security-token"])
	require.NotEmpty(t, challenge["x-amz-signature"])

	// Credentials the provider cannot give fail the session, saying so.
	broken := newProducer(t, kafkaout.ProducerConfig{Brokers: []string{mskBroker}, Auth: kafkaout.AuthMSKIAM,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no role")
		})})
	mechs, ok = broken.OptValue(kgo.SASL).([]sasl.Mechanism)
	require.True(t, ok)
	_, _, err = mechs[0].Authenticate(t.Context(), mskBroker)
	require.ErrorContains(t, err, "no role")
	require.ErrorContains(t, err, "credentials")
}

// With SCRAM-SHA-512 (a self-managed cluster's listener as
// template-kafka.yaml deploys it) the producer authenticates as the user
// given, over TLS.
func TestTheProducerWithSCRAMAuthenticatesAsItsUserOverTLS(t *testing.T) {
	t.Parallel()
	cl := newProducer(t, kafkaout.ProducerConfig{Brokers: []string{"kafka-1.example.internal:9096"}, Auth: kafkaout.AuthSCRAMSHA512,
		Username: "relay-user", Password: "pw"})
	tlsCfg, ok := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	require.True(t, ok)
	require.NotNil(t, tlsCfg)
	require.GreaterOrEqual(t, tlsCfg.MinVersion, uint16(tls.VersionTLS12))
	mechs, ok := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	require.True(t, ok)
	require.Len(t, mechs, 1)
	require.Equal(t, "SCRAM-SHA-512", mechs[0].Name())
	require.Equal(t, string(kafkaout.AuthSCRAMSHA512), mechs[0].Name())
	_, first, err := mechs[0].Authenticate(t.Context(), "kafka-1.example.internal:9096")
	require.NoError(t, err)
	require.Contains(t, string(first), "n=relay-user,", "the client's first message names the user")
}

// TestNewProducerRefusesAnInvalidConfig: each field that cannot work is an
// error naming it.
func TestNewProducerRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return aws.Credentials{}, nil })
	valid := kafkaout.ProducerConfig{Brokers: []string{"127.0.0.1:9092"}}
	for _, tc := range []struct {
		name  string
		edit  func(*kafkaout.ProducerConfig)
		field string
	}{
		{"valid", func(*kafkaout.ProducerConfig) {}, ""},
		{"MSK IAM with credentials", func(c *kafkaout.ProducerConfig) {
			c.Brokers, c.Auth, c.Credentials = []string{mskBroker}, kafkaout.AuthMSKIAM, creds
		}, ""},
		{"no brokers", func(c *kafkaout.ProducerConfig) { c.Brokers = nil }, "Brokers"},
		{"a broker without a port", func(c *kafkaout.ProducerConfig) { c.Brokers = []string{"127.0.0.1"} }, "Brokers"},
		{"an empty broker", func(c *kafkaout.ProducerConfig) { c.Brokers = []string{"127.0.0.1:9092", ""} }, "Brokers"},
		{"an unknown authentication", func(c *kafkaout.ProducerConfig) { c.Auth = "SCRAM-SHA-256" }, "Auth"},
		{"an authentication in lower case", func(c *kafkaout.ProducerConfig) { c.Auth = "aws_msk_iam" }, "Auth"},
		{"none spelled out", func(c *kafkaout.ProducerConfig) { c.Auth = "none" }, "Auth"},
		{"MSK IAM without credentials", func(c *kafkaout.ProducerConfig) { c.Auth = kafkaout.AuthMSKIAM }, "Credentials"},
		{"SCRAM with a user", func(c *kafkaout.ProducerConfig) { c.Auth, c.Username, c.Password = kafkaout.AuthSCRAMSHA512, "u", "p" }, ""},
		{"SCRAM without a user", func(c *kafkaout.ProducerConfig) { c.Auth, c.Password = kafkaout.AuthSCRAMSHA512, "p" }, "Username"},
		{"SCRAM without a password", func(c *kafkaout.ProducerConfig) { c.Auth, c.Username = kafkaout.AuthSCRAMSHA512, "u" }, "Password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid
			tc.edit(&cfg)
			cl, err := kafkaout.NewProducer(cfg)
			if tc.field == "" {
				require.NoError(t, err)
				require.NotNil(t, cl)
				cl.Close()
				return
			}
			require.ErrorIs(t, err, kafkaout.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
			require.Nil(t, cl)
		})
	}
}
