package startup

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"

	"github.com/fifoworker/fifoworker/internal/base/sdkhttp"
)

// AWSConfig reads the SDK configuration a function runs with from its
// settings' environment, where Lambda puts it: the region (AWS_REGION, else
// AWS_DEFAULT_REGION) and the execution role's credentials
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; also the
// SDK's alternative names AWS_ACCESS_KEY and AWS_SECRET_KEY, and
// AWS_ACCOUNT_ID). It also reads the endpoints the local stack sets
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>,
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), AWS_MAX_ATTEMPTS, AWS_RETRY_MODE
// and AWS_SDK_UA_APP_ID. For these, the result is the one
// config.LoadDefaultConfig gives (awsconfig_test.go compares the two).
//
// The SDK's loader is not used: besides the environment it reads shared
// config files and resolves profiles, SSO, sign-in, web identity, process,
// container and instance credentials. Lambda gives a function
// (provided.al2023, as template.yaml deploys it) its role's credentials in
// the environment, so none of those is needed, but they link the STS, SSO,
// SSO OIDC and sign-in clients into every bootstrap: 1.6 to 2.0 MB of each
// arm64 bootstrap (docs/BENCHMARKS.md). So no file is read, and an SDK setting of the
// environment that only the SDK's loader honours is refused, never
// silently ignored. A missing region or missing credentials fail the
// function's init, naming them, rather than its first request. Problems
// are collected with the function's other settings' (Err).
func (e *Env) AWSConfig() aws.Config {
	for _, name := range unsupportedAWSSettings {
		if v, ok := e.lookup(name); ok && v != "" {
			e.errs = append(e.errs, fmt.Errorf("%s is set: the functions' AWS configuration does not support it (internal/lambdawire/startup: Env.AWSConfig)", name))
		}
	}
	cfg := aws.Config{
		Region:        e.first("AWS_REGION", "AWS_DEFAULT_REGION"),
		Logger:        logging.NewStandardLogger(os.Stderr),
		ConfigSources: []any{endpointSource{e.lookup}},
		AppID:         e.first("AWS_SDK_UA_APP_ID"),
		// The SDK's default client, its request bodies guarded: no answer
		// is lost to a connection closed under it (sdkhttp).
		HTTPClient: sdkhttp.GuardRequestBodies(awshttp.NewBuildableClient()),
		// config.LoadDefaultConfig's defaults where nothing sets them.
		DefaultsMode:                aws.DefaultsModeLegacy,
		RequestMinCompressSizeBytes: 10240,
		AccountIDEndpointMode:       aws.AccountIDEndpointModePreferred,
		RequestChecksumCalculation:  aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation:  aws.ResponseChecksumValidationWhenSupported,
		RestrictFilePermissions:     aws.RestrictFilePermissionsUserReadWrite,
	}
	if cfg.Region == "" {
		e.errs = append(e.errs, fmt.Errorf("AWS_REGION is not set"))
	}

	creds := aws.Credentials{
		AccessKeyID:     e.first("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"),
		SecretAccessKey: e.first("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"),
		Source:          envCredentialsSource,
	}
	if creds.HasKeys() {
		creds.SessionToken = e.first("AWS_SESSION_TOKEN")
		creds.AccountID = e.first("AWS_ACCOUNT_ID")
		cfg.Credentials = aws.NewCredentialsCache(credentials.StaticCredentialsProvider{
			Value:  creds,
			Source: []aws.CredentialSource{aws.CredentialSourceEnvVars},
		})
	} else {
		e.errs = append(e.errs, fmt.Errorf("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set: Lambda sets them to the execution role's credentials on the provided.al2023 runtime; no other source of credentials is read (not the container credentials endpoint Lambda gives SnapStart functions, which this runtime does not offer)"))
	}

	ignore, err := endpointSource{e.lookup}.ignoreConfigured()
	if err != nil {
		e.errs = append(e.errs, err)
	}
	if base := e.first("AWS_ENDPOINT_URL"); base != "" && !ignore {
		cfg.BaseEndpoint = aws.String(base)
	}
	if v := e.first("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("AWS_MAX_ATTEMPTS=%q is not an integer", v))
		}
		cfg.RetryMaxAttempts = int(n)
	}
	if v := e.first("AWS_RETRY_MODE"); v != "" {
		mode, err := aws.ParseRetryMode(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("AWS_RETRY_MODE=%q is neither standard nor adaptive", v))
		}
		cfg.RetryMode = mode
	}
	return cfg
}

// envCredentialsSource is the name the SDK gives credentials read from the
// environment (config.CredentialsSourceName).
const envCredentialsSource = "EnvConfigCredentials"

// unsupportedAWSSettings are the SDK's environment settings that
// config.LoadDefaultConfig would honour for a function and AWSConfig does
// not. (The other credential sources' variables, e.g.
// AWS_WEB_IDENTITY_TOKEN_FILE or AWS_CONTAINER_CREDENTIALS_FULL_URI, are
// not here: with the credentials Lambda sets in the environment, the SDK's
// loader does not read them either.)
var unsupportedAWSSettings = []string{
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_CA_BUNDLE", "AWS_DEFAULTS_MODE",
	"AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENABLE_ENDPOINT_DISCOVERY",
	"AWS_ACCOUNT_ID_ENDPOINT_MODE", "AWS_AUTH_SCHEME_PREFERENCE",
	"AWS_DISABLE_REQUEST_COMPRESSION", "AWS_REQUEST_MIN_COMPRESSION_SIZE_BYTES",
	"AWS_DISABLE_CLOCK_SKEW_CORRECTION",
	"AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION",
	"AWS_S3_USE_ARN_REGION", "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS", "AWS_S3_DISABLE_EXPRESS_SESSION_AUTH",
	"AWS_RESTRICT_FILE_PERMISSIONS",
}

// first returns the first of names that is set and not empty, or "".
func (e *Env) first(names ...string) string {
	for _, n := range names {
		if v, ok := e.lookup(n); ok && v != "" {
			return v
		}
	}
	return ""
}

// ServiceEndpoint is the endpoint cfg gives the service whose SDK id is
// sdkID (e.g. dynamodb.ServiceID, "Secrets Manager"), if it gives one:
// the one a configuration source names for the service
// (AWS_ENDPOINT_URL_<SERVICE>, from AWSConfig's endpointSource or the SDK
// loader's environment and shared config), unless a source says to ignore
// those (AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), else the base endpoint
// (AWS_ENDPOINT_URL): the SDK's clients resolve theirs that way
// (internal/configsources.ResolveServiceBaseEndpoint, then each client's
// resolveBaseEndpoint, v1.48.0). Here that is a local emulator. It reads
// the configuration, not this process's environment, so that a
// configuration built from other settings (a function's in the local
// pipeline, the CLI's --stack) is judged by what it says. The sources
// read settings and send no request, so no caller's context is needed.
//
//nolint:contextcheck // see above: the context it makes cancels nothing
func ServiceEndpoint(cfg aws.Config, sdkID string) (string, bool) {
	type serviceEndpoint interface {
		GetServiceBaseEndpoint(ctx context.Context, sdkID string) (string, bool, error)
	}
	type ignoreEndpoints interface {
		GetIgnoreConfiguredEndpoints(ctx context.Context) (bool, bool, error)
	}
	ctx := context.Background()
	ignored := false
	for _, src := range cfg.ConfigSources {
		if p, ok := src.(ignoreEndpoints); ok {
			if v, found, err := p.GetIgnoreConfiguredEndpoints(ctx); err == nil && found {
				ignored = v
				break
			}
		}
	}
	for _, src := range cfg.ConfigSources {
		if p, ok := src.(serviceEndpoint); ok && !ignored {
			if v, found, err := p.GetServiceBaseEndpoint(ctx, sdkID); err != nil || found {
				return v, err == nil && v != ""
			}
		}
	}
	base := aws.ToString(cfg.BaseEndpoint)
	return base, base != ""
}

// endpointSource gives the service clients their endpoints from
// AWS_ENDPOINT_URL_<SERVICE> (the service's SDK id in capitals, spaces as
// underscores: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3), unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. It implements the
// interfaces each client looks for in aws.Config.ConfigSources.
type endpointSource struct {
	lookup func(string) (string, bool)
}

// GetServiceBaseEndpoint is configsources.ServiceBaseEndpointProvider's.
func (s endpointSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, _ := s.lookup("AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_"))
	return v, v != "", nil
}

// GetIgnoreConfiguredEndpoints is
// configsources.IgnoreConfiguredEndpointsProvider's.
func (s endpointSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	v, ok := s.lookup("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	if !ok || v == "" {
		return false, false, nil
	}
	ignore, err := s.ignoreConfigured()
	return ignore, err == nil, err
}

func (s endpointSource) ignoreConfigured() (bool, error) {
	v, _ := s.lookup("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
	switch {
	case v == "", strings.EqualFold(v, "false"):
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	}
	return false, fmt.Errorf("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=%q is neither true nor false", v)
}
