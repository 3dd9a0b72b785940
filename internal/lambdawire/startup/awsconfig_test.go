package startup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
)

// onlyEnv leaves the process exactly the AWS_ variables of env (the test's
// own are restored afterwards) and a HOME without shared config files.
func onlyEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "") // restored at the end of the test
			require.NoError(t, os.Unsetenv(k))
		}
	}
	t.Setenv("HOME", t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// AWSConfig gives what the SDK's own loader gives, for the environments a
// function meets: Lambda's, the local stack's (per-service endpoints, or
// one endpoint for all), and with the settings it supports. Not parallel:
// it sets the process environment, which the SDK's loader reads.
func TestAWSConfigIsTheSDKLoadersForTheFunctionsEnvironments(t *testing.T) {
	lambda := map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
		"AWS_ACCESS_KEY_ID": "ASIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token",
		"AWS_LAMBDA_FUNCTION_NAME": "stack-worker", "AWS_EXECUTION_ENV": "AWS_Lambda_provided.al2023",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range lambda {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for name, env := range map[string]map[string]string{
		"lambda": lambda,
		"local stack": with(map[string]string{
			"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": "http://127.0.0.1:8000",
			"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
			"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		}),
		"one endpoint":               with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324"}),
		"endpoints ignored":          with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "TRUE"}),
		"endpoints not ignored":      with(map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false"}),
		"retries and app id":         with(map[string]string{"AWS_MAX_ATTEMPTS": "7", "AWS_RETRY_MODE": "adaptive", "AWS_SDK_UA_APP_ID": "fifoworker"}),
		"default region only":        with(map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "us-east-2"}),
		"older key names":            with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_ACCESS_KEY": "AKIDOLD", "AWS_SECRET_KEY": "old-secret"}),
		"account id":                 with(map[string]string{"AWS_ACCOUNT_ID": "123456789012"}),
		"other credential sources":   with(map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:9/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "x", "AWS_WEB_IDENTITY_TOKEN_FILE": "/nonexistent", "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/r"}),
		"instance metadata settings": with(map[string]string{"AWS_EC2_METADATA_DISABLED": "true"}),
	} {
		t.Run(name, func(t *testing.T) {
			onlyEnv(t, env)
			want, err := config.LoadDefaultConfig(t.Context())
			require.NoError(t, err)
			e := NewEnv()
			got := e.AWSConfig()
			require.NoError(t, e.Err())

			// The functions' HTTP client is the one the SDK's clients make
			// when the loader leaves it unset, its request bodies guarded
			// (internal/base/sdkhttp).
			require.Nil(t, want.HTTPClient)
			require.Equal(t, "sdkhttp.guardedClient", fmt.Sprintf("%T", got.HTTPClient))
			require.Equal(t, sdkhttp.GuardRequestBodies(awshttp.NewBuildableClient()), got.HTTPClient)
			plain := func(c aws.Config) aws.Config {
				c.Credentials, c.Logger, c.ConfigSources, c.HTTPClient = nil, nil, nil, nil
				// The SDK's loader gives empty lists of interceptors, not nil ones.
				r := reflect.ValueOf(c.Interceptors)
				for i := range r.NumField() {
					require.Zero(t, r.Field(i).Len(), "interceptors")
				}
				c.Interceptors = smithyhttp.InterceptorRegistry{}
				return c
			}
			require.Equal(t, plain(want), plain(got), "every other field")
			require.IsType(t, want.Logger, got.Logger)

			wantCreds, err := want.Credentials.Retrieve(t.Context())
			require.NoError(t, err)
			gotCreds, err := got.Credentials.Retrieve(t.Context())
			require.NoError(t, err)
			require.Equal(t, wantCreds, gotCreds)
			require.Equal(t, want.Credentials.(*aws.CredentialsCache).ProviderSources(), got.Credentials.(*aws.CredentialsCache).ProviderSources())

			// Each client the functions make has the same endpoint.
			require.Equal(t, dynamodb.NewFromConfig(want).Options().BaseEndpoint, dynamodb.NewFromConfig(got).Options().BaseEndpoint, "DynamoDB")
			require.Equal(t, sqs.NewFromConfig(want).Options().BaseEndpoint, sqs.NewFromConfig(got).Options().BaseEndpoint, "SQS")
			require.Equal(t, s3.NewFromConfig(want).Options().BaseEndpoint, s3.NewFromConfig(got).Options().BaseEndpoint, "S3")
		})
	}

	// A value the SDK's loader refuses, AWSConfig refuses too.
	for _, bad := range []map[string]string{
		{"AWS_MAX_ATTEMPTS": "many"},
		{"AWS_RETRY_MODE": "eager"},
		{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "yes"},
	} {
		onlyEnv(t, with(bad))
		_, err := config.LoadDefaultConfig(t.Context())
		require.Error(t, err, "%v", bad)
		e := NewEnv()
		e.AWSConfig()
		for k, v := range bad {
			require.ErrorContains(t, e.Err(), k+`="`+v+`"`)
		}
	}
}

func TestAWSConfigNamesEveryProblem(t *testing.T) {
	t.Parallel()
	e := NewEnvFrom(map[string]string{"AWS_MAX_ATTEMPTS": "x", "AWS_PROFILE": "dev"})
	e.AWSConfig()
	err := e.Err()
	require.ErrorContains(t, err, "AWS_REGION is not set")
	require.ErrorContains(t, err, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")
	require.ErrorContains(t, err, `AWS_MAX_ATTEMPTS="x" is not an integer`)
	require.ErrorContains(t, err, "AWS_PROFILE is set")

	// Each setting only the SDK's loader would honour is refused.
	ok := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}
	e = NewEnvFrom(ok)
	e.AWSConfig()
	require.NoError(t, e.Err())
	for _, name := range unsupportedAWSSettings {
		env := map[string]string{name: "x"}
		for k, v := range ok {
			env[k] = v
		}
		e := NewEnvFrom(env)
		e.AWSConfig()
		require.ErrorContains(t, e.Err(), name+" is set", name)
	}

	// With the function's own settings, in one error.
	e = NewEnvFrom(map[string]string{"COMMANDS_QUEUE_URL": "https://sqs/q.fifo"})
	e.AWSConfig()
	e.String("EVENTS_QUEUE_URL")
	err = e.Err()
	require.ErrorContains(t, err, "EVENTS_QUEUE_URL is not set")
	require.ErrorContains(t, err, "AWS_REGION is not set")
}

// The functions, as the Lambda build builds them, do not link the SDK's
// configuration loader, nor the clients of the credential sources only it
// uses: together 1.6 to 2.0 MB of each bootstrap (docs/BENCHMARKS.md). A function that
// calls config.LoadDefaultConfig again fails here.
// Both transports' builds are checked: the kafka tag picks other wiring.
func TestTheFunctionsDoNotLinkTheSDKsConfigLoader(t *testing.T) {
	t.Parallel()
	for _, tags := range []string{"lambda.norpc", "lambda.norpc,kafka"} {
		args := []string{"list", "-deps", "-tags", tags, "./functions/..."}
		cmd := exec.CommandContext(context.Background(), "go", args...)
		cmd.Dir = "../../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, exit.Stderr)
		}
		require.NoError(t, err)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, "github.com/fifoworker/fifoworker/internal/lambdawire", "the list is the functions' build")
		require.Contains(t, deps, "github.com/aws/aws-sdk-go-v2/service/dynamodb")
		if strings.Contains(tags, "kafka") {
			require.Contains(t, deps, "github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay", "the list is the Kafka build")
		}
		for _, pkg := range []string{
			"github.com/aws/aws-sdk-go-v2/config",
			"github.com/aws/aws-sdk-go-v2/service/sts",
			"github.com/aws/aws-sdk-go-v2/service/sso",
			"github.com/aws/aws-sdk-go-v2/service/ssooidc",
			"github.com/aws/aws-sdk-go-v2/service/signin",
			"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
		} {
			require.NotContains(t, deps, pkg, tags)
		}
	}
}

// A service's own endpoint is named by its SDK id in capitals with spaces
// as underscores (Secrets Manager's AWS_ENDPOINT_URL_SECRETS_MANAGER, which
// the Kafka relay's secret read asks for), and
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is read whatever its case, as the
// SDK's loader reads booleans.
func TestServiceEndpointsNamesAndTheIgnoreSettingsCase(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:4566"}
	for ignore, want := range map[string]string{"": "http://127.0.0.1:4566", "FALSE": "http://127.0.0.1:4566", "False": "http://127.0.0.1:4566", "TRUE": "", "True": ""} {
		env := maps.Clone(base)
		if ignore != "" {
			env["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = ignore
		}
		e := NewEnvFrom(env)
		cfg := e.AWSConfig()
		require.NoError(t, e.Err(), ignore)
		got, ok := ServiceEndpoint(cfg, "Secrets Manager")
		require.Equal(t, want, got, ignore)
		require.Equal(t, want != "", ok, ignore)
	}

	// The ignore setting is looked for in every source until one has it,
	// as the SDK's clients look (its loader's sources are the environment,
	// then the shared config): a source without it decides nothing.
	none := endpointSource{NewEnvFrom(nil).lookup}
	later := endpointSource{NewEnvFrom(map[string]string{
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:4566",
	}).lookup}
	got, ok := ServiceEndpoint(aws.Config{ConfigSources: []any{none, later}, BaseEndpoint: aws.String("http://127.0.0.1:9999")}, "Secrets Manager")
	require.True(t, ok)
	require.Equal(t, "http://127.0.0.1:9999", got, "the later source's ignore applies: the base endpoint")
}

// ServiceEndpoint finds the endpoint each SDK client resolves from the
// same configuration, AWSConfig's or the SDK loader's: a service's own,
// the base one, none, and neither of the configured ones when they are
// to be ignored. Not parallel: it sets the process environment, which the
// SDK's loader reads.
func TestServiceEndpointIsTheOneTheSDKsClientsResolve(t *testing.T) {
	base := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	for name, env := range map[string]map[string]string{
		"AWS":                  base,
		"one endpoint for all": with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}),
		"DynamoDB's own":       with(map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}),
		"S3's own beside all":  with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}),
		"ignored":              with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}),
		"not ignored":          with(map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false"}),
	} {
		onlyEnv(t, env)
		loaded, err := config.LoadDefaultConfig(t.Context())
		require.NoError(t, err)
		e := NewEnvFrom(env)
		ours := e.AWSConfig()
		require.NoError(t, e.Err())
		for from, cfg := range map[string]aws.Config{"AWSConfig": ours, "the SDK's loader": loaded} {
			for id, resolved := range map[string]*string{
				dynamodb.ServiceID: dynamodb.NewFromConfig(cfg).Options().BaseEndpoint,
				s3.ServiceID:       s3.NewFromConfig(cfg).Options().BaseEndpoint,
				sqs.ServiceID:      sqs.NewFromConfig(cfg).Options().BaseEndpoint,
			} {
				got, ok := ServiceEndpoint(cfg, id)
				require.Equal(t, aws.ToString(resolved), got, "%s, %s: %s", name, from, id)
				require.Equal(t, resolved != nil, ok, "%s, %s: %s", name, from, id)
			}
		}
	}
}
