package lambdawire

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// TestClientsKnowALocalEndpointFromTheirConfiguration: DynamoDB and S3
// take a local emulator from the configuration they are built from
// (startup.ServiceEndpoint, which finds the endpoint the SDK's clients
// resolve: its own test), not from this process's environment. DynamoDB
// then skips the CRC32 check that DynamoDB Local's error answers fail, and
// S3 addresses buckets by path.
func TestClientsKnowALocalEndpointFromTheirConfiguration(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		ddb, s3 bool
	}{
		{name: "AWS", env: base},
		{name: "one endpoint for all", env: with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}), ddb: true, s3: true},
		{name: "DynamoDB's own", env: with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}), ddb: true},
		{name: "S3's own", env: with(map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}), s3: true},
		{name: "S3's own, ignored", env: with(map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"})},
	} {
		e := startup.NewEnvFrom(tc.env)
		cfg := e.AWSConfig()
		require.NoError(t, e.Err())
		require.Equal(t, tc.ddb, DynamoDB(cfg).Options().DisableValidateResponseChecksum, "%s: DynamoDB skips the CRC32 check", tc.name)
		require.Equal(t, tc.s3, S3(cfg).Options().UsePathStyle, "%s: S3 by path", tc.name)
	}
}
