package lambdawire

import (
	"context"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/stretchr/testify/require"
)

// TestClientsKnowALocalEndpointFromTheirConfiguration: DynamoDB and S3
// take a local emulator from the configuration they are built from, not
// from this process's environment: a configuration read from a local
// stack's env file (the CLI's --stack), or by the SDK's loader, or by
// AWSConfig. DynamoDB then skips the CRC32 check that DynamoDB Local's
// error answers fail, and S3 addresses buckets by path. Not parallel: it
// sets the process environment.
func TestClientsKnowALocalEndpointFromTheirConfiguration(t *testing.T) {
	base := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	onlyEnv(t, nil) // the process has no endpoint: only the configuration may tell
	for _, tc := range []struct {
		name    string
		env     map[string]string
		ddb, s3 bool
	}{
		{name: "AWS", env: base},
		{name: "one endpoint for all", env: with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}), ddb: true, s3: true},
		{name: "DynamoDB's own", env: with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}), ddb: true},
		{name: "S3's own", env: with(map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}), s3: true},
	} {
		e := NewEnvFrom(tc.env)
		cfg := e.AWSConfig()
		require.NoError(t, e.Err())
		require.Equal(t, tc.ddb, DynamoDB(cfg).Options().DisableValidateResponseChecksum, "%s: DynamoDB skips the CRC32 check", tc.name)
		require.Equal(t, tc.s3, S3(cfg).Options().UsePathStyle, "%s: S3 by path", tc.name)

		// The SDK's loader reads the environment when a client is built.
		onlyEnv(t, tc.env)
		loaded, err := config.LoadDefaultConfig(context.Background())
		require.NoError(t, err)
		require.Equal(t, tc.ddb, DynamoDB(loaded).Options().DisableValidateResponseChecksum, "%s, the SDK's loader: DynamoDB", tc.name)
		require.Equal(t, tc.s3, S3(loaded).Options().UsePathStyle, "%s, the SDK's loader: S3", tc.name)
		onlyEnv(t, nil)
	}
}
