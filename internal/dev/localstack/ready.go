package localstack

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
)

// clientConfig is the SDK configuration of the stack's clients: each its
// own transport, its request bodies guarded (sdkhttp.GuardRequestBodies).
func clientConfig(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  sdkhttp.GuardRequestBodies(awshttp.NewBuildableClient()),
	}
}

// probe makes one cheap, real API call to the service at endpoint.
func probe(ctx context.Context, service, endpoint, region string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cfg := clientConfig(region)
	cfg.RetryMaxAttempts = 1 // the caller polls
	var err error
	switch service {
	case "sqs":
		_, err = sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) }).
			ListQueues(ctx, &sqs.ListQueuesInput{})
	case "dynamodb":
		_, err = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }).
			ListTables(ctx, &dynamodb.ListTablesInput{})
	case "s3":
		_, err = s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint); o.UsePathStyle = true }).
			ListBuckets(ctx, &s3.ListBucketsInput{})
	case "kafka":
		err = probeKafka(ctx, endpoint)
	case "postgres":
		err = probePostgres(ctx, endpoint)
	default:
		err = fmt.Errorf("unknown service %q", service)
	}
	return err
}

// probeKafka asks the broker at addr for its metadata, as a client's
// first request does, and checks that it advertises addr itself: a client
// bootstraps from addr and then connects to what the broker advertises.
func probeKafka(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	var advertised []string
	for _, b := range meta.Brokers {
		hostPort := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if hostPort == addr {
			return nil
		}
		advertised = append(advertised, hostPort)
	}
	return fmt.Errorf("the broker at %s advertises %s, not itself", addr, strings.Join(advertised, ", "))
}

// probePostgres connects to the server at dsn and runs a query, as a
// client's first request does: a port that accepts is not yet a server.
// It speaks through the functions' driver, so that what it proves ready is
// what they will connect to.
func probePostgres(ctx context.Context, dsn string) error {
	db, err := pgwire.Open(dsn)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (s *State) endpoint(service string) string {
	switch service {
	case "sqs":
		return s.SQS
	case "dynamodb":
		return s.DynamoDB
	case "s3":
		return s.S3
	case "kafka":
		return s.Kafka
	case "postgres":
		return s.Postgres
	}
	return ""
}

// waitReady polls every emulator until it answers a real API call, failing
// fast, with the end of its log, when one exits.
func waitReady(ctx context.Context, o Options, s *State, exited map[string]<-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	for _, p := range s.Processes {
		start := time.Now()
		for {
			err := probe(ctx, p.Service, s.endpoint(p.Service), s.Region)
			if err == nil {
				fmt.Fprintf(o.Progress, "localstack: %s ready on 127.0.0.1:%d (pid %d) after %v\n",
					p.Service, p.Port, p.PID, time.Since(start).Round(time.Millisecond))
				break
			}
			select {
			case exitErr := <-exited[p.Service]:
				return fmt.Errorf("localstack: %s exited before it was ready (%w); end of %s:\n%s",
					p.Service, exitErr, p.Log, tail(p.Log, 20))
			case <-ctx.Done():
				return fmt.Errorf("localstack: %s did not answer on 127.0.0.1:%d within %v (last error: %w); end of %s:\n%s",
					p.Service, p.Port, o.ReadyTimeout, err, p.Log, tail(p.Log, 20))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// ServiceStatus is one line of Status.
type ServiceStatus struct {
	Service  string
	Endpoint string
	PID      int
	Running  bool  // the recorded PID still runs the emulator or broker
	Err      error // the probe's error; nil when it answered
}

// Status probes each process of the running stack: beside an external
// endpoint, its Kafka broker and PostgreSQL server.
func Status(ctx context.Context, o Options) (*State, []ServiceStatus, error) {
	s, err := Load(o)
	if err != nil {
		return nil, nil, err
	}
	var out []ServiceStatus
	for _, p := range s.Processes {
		st := ServiceStatus{Service: p.Service, Endpoint: s.endpoint(p.Service), PID: p.PID, Running: ours(p)}
		st.Err = probe(ctx, p.Service, st.Endpoint, s.Region)
		out = append(out, st)
	}
	return s, out, nil
}

// Config returns an SDK configuration for the stack. Clients made from it
// must still be pointed at the stack's endpoints: use the service helpers.
func (s *State) Config() aws.Config { return clientConfig(s.Region) }

func (s *State) endpointFor(service string) string {
	if s.External != "" {
		return s.External
	}
	return s.endpoint(service)
}

// SQSClient returns an SQS client for the stack.
func (s *State) SQSClient() *sqs.Client {
	return sqs.NewFromConfig(s.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(s.endpointFor("sqs")) })
}

// DynamoDBClient returns a DynamoDB client for the stack.
func (s *State) DynamoDBClient() *dynamodb.Client {
	return dynamodb.NewFromConfig(s.Config(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.endpointFor("dynamodb"))
		// DynamoDB Local sends no X-Amz-Crc32 with error responses.
		o.DisableValidateResponseChecksum = true
	})
}

// S3Client returns a path-style S3 client for the stack.
func (s *State) S3Client() *s3.Client {
	return s3.NewFromConfig(s.Config(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.endpointFor("s3"))
		o.UsePathStyle = true
	})
}
