package testenv

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// Stack is the local stack this test run was given through the variables
// localstack's State.Env writes (what `fifoworker local run` sets for its
// command): the endpoints, the region, the runtime interface emulator, the
// Kafka broker (KAFKA_BOOTSTRAP_SERVERS) and the PostgreSQL server
// (FIFOWORKER_POSTGRES_DSN; a test that needs it asks PostgresDSN).
// It fails the test, as awstest's clients do, without an endpoint.
func Stack(t testing.TB) *localstack.State {
	t.Helper()
	for _, id := range []string{dynamodb.ServiceID, sqs.ServiceID, s3.ServiceID} {
		awstest.RequireEndpoint(t, id)
	}
	return &localstack.State{
		Name: os.Getenv("FIFOWORKER_STACK"), Region: os.Getenv("AWS_REGION"), External: os.Getenv("AWS_ENDPOINT_URL"),
		SQS: os.Getenv("AWS_ENDPOINT_URL_SQS"), DynamoDB: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), S3: os.Getenv("AWS_ENDPOINT_URL_S3"),
		RIE: os.Getenv("FIFOWORKER_RIE"), Kafka: os.Getenv(localstack.KafkaBootstrapVar), Postgres: os.Getenv(localstack.PostgresDSNVar),
	}
}

// PostgresDSN is the connection string of the stack's PostgreSQL server
// (FIFOWORKER_POSTGRES_DSN), for a test that needs the server itself
// rather than a database of its own (pgtest.DB gives one). It fails the
// test, never skips it, without the variable: pgtest.RequireServer says
// what to set.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.RequireServer(t)
}
