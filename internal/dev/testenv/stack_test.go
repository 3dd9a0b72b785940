package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// Stack reads back what localstack's Env writes (what `fifoworker local
// run` sets for its command).
func TestStackReadsWhatEnvWrites(t *testing.T) {
	s := &localstack.State{Name: "x", Region: "eu-west-1", SQS: "http://127.0.0.1:1", DynamoDB: "http://127.0.0.1:2", S3: "http://127.0.0.1:3", Kafka: "127.0.0.1:4", RIE: "/bin/rie"}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")
	require.Equal(t, s, Stack(t))
}
