// Package testenv gives integration tests their AWS clients for the local
// stack (or LocalStack, or a real account) named by the standard endpoint
// variables: AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_SQS, _DYNAMODB,
// _DYNAMODB_STREAMS and _S3. Integration tests carry the build tag
// "integration"; make test starts the stack, sets these variables and runs
// them. A test that asks for a client without an endpoint fails: it never
// skips, and it never reaches a real account by accident.
package testenv

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

// endpointVars are the variables of which one must be set per service.
var endpointVars = map[string]string{
	"SQS":              "AWS_ENDPOINT_URL_SQS",
	"DynamoDB":         "AWS_ENDPOINT_URL_DYNAMODB",
	"DynamoDB Streams": "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
	"S3":               "AWS_ENDPOINT_URL_S3",
}

func requireEndpoint(t testing.TB, service string) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv(endpointVars[service]) != "" {
		return
	}
	t.Fatalf("integration test needs a %s endpoint: neither AWS_ENDPOINT_URL nor %s is set. "+
		"Run make test (it starts the local stack), or: eval \"$(go run ./cmd/fifoworker local up)\"",
		service, endpointVars[service])
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
		t.Fatalf("testenv: load AWS config: %v", err)
	}
	if cfg.Region == "" {
		t.Fatal("testenv: AWS_REGION is not set")
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

// SQS returns an SQS client for the configured endpoint.
func SQS(t testing.TB) *sqs.Client {
	t.Helper()
	requireEndpoint(t, "SQS")
	return sqs.NewFromConfig(Config(t))
}

// DynamoDB returns a DynamoDB client for the configured endpoint.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	requireEndpoint(t, "DynamoDB")
	return dynamodb.NewFromConfig(Config(t))
}

// Streams returns a DynamoDB Streams client for the configured endpoint.
func Streams(t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	requireEndpoint(t, "DynamoDB Streams")
	return dynamodbstreams.NewFromConfig(Config(t))
}

// S3 returns a path-style S3 client for the configured endpoint (emulators
// on 127.0.0.1 have no virtual-host names).
func S3(t testing.TB) *s3.Client {
	t.Helper()
	requireEndpoint(t, "S3")
	return s3.NewFromConfig(Config(t), func(o *s3.Options) { o.UsePathStyle = true })
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
