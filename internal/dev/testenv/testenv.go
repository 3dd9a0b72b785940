// Package testenv gives the service's integration tests (internal/app,
// internal/lambdawire, internal/dev, cmd, test) what they need beyond
// pkg/awstest: the IAM recorder that holds template.yaml's roles to the
// requests the functions make, and a Buffer for logs. Its clients, names,
// request counter and lost-response fault are pkg/awstest's, under the
// names these tests have always used; the libraries' own tests use
// pkg/awstest directly, so that they reach no development tooling.
//
// Endpoints come from the standard variables (AWS_ENDPOINT_URL, or
// AWS_ENDPOINT_URL_SQS, _DYNAMODB, _DYNAMODB_STREAMS and _S3). Integration
// tests carry the build tag "integration"; make test starts the stack, sets
// these variables and runs them. A test that asks for a client without an
// endpoint fails: it never skips, and it never reaches a real account by
// accident.
package testenv

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// Config is awstest.Config: the SDK configuration from the environment,
// its HTTP transport owned by the test.
func Config(t testing.TB) aws.Config { t.Helper(); return awstest.Config(t) }

// SQS is awstest.SQS.
func SQS(t testing.TB, optFns ...func(*sqs.Options)) *sqs.Client {
	t.Helper()
	return awstest.SQS(t, optFns...)
}

// DynamoDB is awstest.DynamoDB.
func DynamoDB(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return awstest.DynamoDB(t, optFns...)
}

// Streams is awstest.Streams.
func Streams(t testing.TB, optFns ...func(*dynamodbstreams.Options)) *dynamodbstreams.Client {
	t.Helper()
	return awstest.Streams(t, optFns...)
}

// S3 is awstest.S3: path-style.
func S3(t testing.TB, optFns ...func(*s3.Options)) *s3.Client {
	t.Helper()
	return awstest.S3(t, optFns...)
}

// Name is awstest.Name: unique to the test and run, valid for a queue, a
// table and a bucket.
func Name(t testing.TB, prefix string) string { t.Helper(); return awstest.Name(t, prefix) }

// Requests is awstest.Requests: counts API requests per attempt.
type Requests = awstest.Requests

// LostResponses is awstest.LostResponses: loses the answer of an applied
// request.
type LostResponses = awstest.LostResponses
