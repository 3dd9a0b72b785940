package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
)

// endpointVars are the per-service variables, by the service's SDK id
// (sqs.ServiceID and friends): config.LoadDefaultConfig reads
// AWS_ENDPOINT_URL_ followed by the id in upper case, spaces as
// underscores (aws-sdk-go-v2/config's EnvConfig.GetServiceBaseEndpoint).
var endpointVars = map[string]string{
	sqs.ServiceID:             "AWS_ENDPOINT_URL_SQS",
	dynamodb.ServiceID:        "AWS_ENDPOINT_URL_DYNAMODB",
	dynamodbstreams.ServiceID: "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
	s3.ServiceID:              "AWS_ENDPOINT_URL_S3",
}

// RequireEndpoint fails the test unless an endpoint is configured for the
// service (its SDK id, such as sqs.ServiceID): AWS_ENDPOINT_URL or the
// service's own variable.
func RequireEndpoint(t testing.TB, serviceID string) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv(endpointVars[serviceID]) != "" {
		return
	}
	t.Fatalf("integration test needs a %s endpoint: neither AWS_ENDPOINT_URL nor %s is set. "+
		"Point them at a local stack; in this repository, make test starts one, "+
		"or: eval \"$(go run ./cmd/fifoworker local up)\"", serviceID, endpointVars[serviceID])
}

// Config loads the SDK configuration from the environment. Its HTTP
// transport belongs to the test and its idle connections are closed when the
// test ends, so goleak sees no keep-alive goroutines (but still sees a
// response body left open). Its client guards request bodies (see
// sdkhttp.GuardRequestBodies), as the functions' clients do, so that no
// answer is lost to a connection the transport closes under it.
func Config(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("awstest: load AWS config: %v", err)
	}
	if cfg.Region == "" {
		t.Fatal("awstest: AWS_REGION is not set")
	}
	// The configured client's transport (with any CA bundle applied), owned
	// by this test from here on.
	transport := awshttp.NewBuildableClient().GetTransport()
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		transport = bc.GetTransport()
	}
	t.Cleanup(transport.CloseIdleConnections)
	cfg.HTTPClient = sdkhttp.GuardRequestBodies(&http.Client{Transport: transport})
	return cfg
}

// SQS returns an SQS client for the configured endpoint, with optFns
// applied.
func SQS(t testing.TB, optFns ...func(*sqs.Options)) *sqs.Client {
	t.Helper()
	RequireEndpoint(t, sqs.ServiceID)
	return sqs.NewFromConfig(Config(t), optFns...)
}

// DynamoDB returns a DynamoDB client for the configured endpoint, with
// optFns applied.
func DynamoDB(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	RequireEndpoint(t, dynamodb.ServiceID)
	return dynamodb.NewFromConfig(Config(t), optFns...)
}

// Streams returns a DynamoDB Streams client for the configured endpoint,
// with optFns applied.
func Streams(t testing.TB, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	t.Helper()
	RequireEndpoint(t, dynamodbstreams.ServiceID)
	return dynamodbstreams.NewFromConfig(Config(t), optFns...)
}

// S3 returns a path-style S3 client for the configured endpoint (emulators
// on 127.0.0.1 have no virtual-host names); optFns are applied after that.
func S3(t testing.TB, optFns ...func(*s3.Options)) *s3.Client {
	t.Helper()
	RequireEndpoint(t, s3.ServiceID)
	return s3.NewFromConfig(Config(t), append([]func(*s3.Options){func(o *s3.Options) { o.UsePathStyle = true }}, optFns...)...)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a name unique to this test and run, valid for a queue, a
// table and a bucket: lower-case letters, digits and dashes, at most 48
// characters (a ".fifo" suffix still fits every limit).
func Name(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	base := unsafeName.ReplaceAllString(strings.ToLower(prefix+"-"+t.Name()), "-")
	base = strings.Trim(base, "-")
	if len(base) > 39 {
		base = base[:39]
	}
	return strings.Trim(base, "-") + "-" + hex.EncodeToString(b[:])
}
