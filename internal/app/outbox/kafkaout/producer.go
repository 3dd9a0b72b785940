package kafkaout

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	awssasl "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Auth is how the producer authenticates to the brokers: the SASL
// mechanism's name, as template-kafka.yaml's KAFKA_SASL_MECHANISM gives it,
// or "" for none.
type Auth string

// The producer's authentications.
const (
	// AuthNone is plain Kafka: no SASL, no TLS (the local broker, a
	// self-managed cluster's plaintext listener). The zero value.
	AuthNone Auth = ""
	// AuthMSKIAM is Amazon MSK's IAM access control: SASL mechanism
	// AWS_MSK_IAM over TLS, each session signed (SigV4, service
	// kafka-cluster, the region from the broker's host name: franz-go's
	// pkg/sasl/aws) with the credentials ProducerConfig.Credentials gives
	// at that moment. MSK serves it on the brokers' port 9098 from within
	// AWS (MSK developer guide, "Port information"). The relay's role
	// needs kafka-cluster:Connect on the cluster and
	// kafka-cluster:DescribeTopic and kafka-cluster:WriteData on the two
	// topics; on Kafka before 2.8.0 the idempotent producer also needs
	// kafka-cluster:WriteDataIdempotently on the cluster, which MSK
	// deprecates from 2.8.0 (KIP-679; "Create authorization policies for
	// the IAM role").
	AuthMSKIAM Auth = "AWS_MSK_IAM"
	// AuthSCRAMSHA512 is SASL/SCRAM-SHA-512 over TLS with
	// ProducerConfig.Username and Password: a self-managed cluster's
	// listener as template-kafka.yaml deploys it (the user in a Secrets
	// Manager secret, which the wiring reads). The user needs Describe and
	// Write on both topics and IdempotentWrite on the cluster.
	AuthSCRAMSHA512 Auth = "SCRAM-SHA-512"
)

// ProducerConfig configures NewProducer.
type ProducerConfig struct {
	// Brokers are the bootstrap brokers, each host:port. Required.
	Brokers []string
	// Auth is how the producer authenticates. Default (""): AuthNone.
	Auth Auth
	// Credentials sign AuthMSKIAM's sessions: the SDK's provider, as
	// aws.Config.Credentials has it (the function's role). Required with
	// AuthMSKIAM; not used otherwise.
	Credentials aws.CredentialsProvider
	// Username and Password are AuthSCRAMSHA512's user. Required with it;
	// not used otherwise.
	Username, Password string
	// ClientID names the producer to the brokers (their logs, quotas).
	// Default (""): "fifoworker-relay".
	ClientID string
	// Logger receives the client's own warnings and errors (a broker that
	// cannot be dialled, a partition without a leader). Default (nil):
	// nothing is logged.
	Logger *slog.Logger
}

// DefaultClientID is ProducerConfig.ClientID's default.
const DefaultClientID = "fifoworker-relay"

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c ProducerConfig) Validate() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: Brokers is empty", ErrInvalidConfig)
	}
	for _, b := range c.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			return fmt.Errorf("%w: Brokers: %q is not host:port", ErrInvalidConfig, b)
		}
	}
	switch c.Auth {
	case AuthNone:
	case AuthMSKIAM:
		if c.Credentials == nil {
			return fmt.Errorf("%w: Credentials is nil, and Auth %q signs with them", ErrInvalidConfig, c.Auth)
		}
	case AuthSCRAMSHA512:
		if c.Username == "" || c.Password == "" {
			return fmt.Errorf("%w: Username or Password is empty, and Auth %q needs both", ErrInvalidConfig, c.Auth)
		}
	default:
		return fmt.Errorf("%w: Auth %q is none of %q, %q and %q (none)", ErrInvalidConfig, c.Auth, AuthMSKIAM, AuthSCRAMSHA512, AuthNone)
	}
	return nil
}

// NewProducer returns the relay's Kafka client: idempotent, as kgo is by
// default (the brokers drop a retried batch they already wrote, and keep
// each partition's batches in order), acks from all in-sync replicas, no
// linger (the relay waits for each round's acknowledgements, so lingering
// would only delay them), record keys hashed to partitions with murmur2
// as Kafka's own client does (kgo's default partitioner), each keyed record
// carrying the partition count it was partitioned over in its
// kafka.PartitionCountHeader (countingPartitioner), and the authentication
// cfg.Auth names. It connects to nothing until the first
// record. The caller closes it; in Lambda it lives as long as the
// execution environment.
func NewProducer(cfg ProducerConfig) (*kgo.Client, error) {
	return newClient(cfg, DefaultClientID, kgo.RecordPartitioner(countingPartitioner{inner: kgo.StickyKeyPartitioner(nil)}))
}

// newClient is a client with NewProducer's settings and options more,
// named id unless cfg names it.
func newClient(cfg ProducerConfig, id string, more ...kgo.Opt) (*kgo.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ClientID != "" {
		id = cfg.ClientID
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(id),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	}
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(kgoLogger{cfg.Logger}))
	}
	if mech := mechanism(cfg); mech != nil {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}), kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(append(opts, more...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkaout: the producer: %w", err)
	}
	return cl, nil
}

// mechanism is cfg.Auth's SASL mechanism, nil for none. Each is spoken
// over TLS: MSK's IAM listener takes nothing else, and SCRAM sends its
// proof where a plaintext listener would expose the exchange.
func mechanism(cfg ProducerConfig) sasl.Mechanism {
	switch cfg.Auth {
	case AuthMSKIAM:
		creds := cfg.Credentials
		return awssasl.ManagedStreamingIAM(func(ctx context.Context) (awssasl.Auth, error) {
			c, err := creds.Retrieve(ctx)
			if err != nil {
				return awssasl.Auth{}, fmt.Errorf("kafkaout: the credentials to sign the MSK IAM session: %w", err)
			}
			return awssasl.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
		})
	case AuthSCRAMSHA512:
		return scram.Auth{User: cfg.Username, Pass: cfg.Password}.AsSha512Mechanism()
	}
	return nil
}

// kgoLogger passes the client's warnings and errors to a slog.Logger.
type kgoLogger struct{ log *slog.Logger }

func (kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	if level == kgo.LogLevelError {
		lvl = slog.LevelError
	}
	l.log.Log(context.Background(), lvl, "kafkaout: producer: "+msg, keyvals...)
}
