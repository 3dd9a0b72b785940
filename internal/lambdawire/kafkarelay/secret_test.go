package kafkarelay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/kafkaout"
	"github.com/fifoworker/fifoworker/internal/lambdawire/kafkarelay"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

const (
	secretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-relay-AbCdEf"
	// password is the secret's: no error may name it.
	password = "s3cr3t-Pa55w0rd"
)

// secretsManager is a stand-in for Secrets Manager's GetSecretValue on
// 127.0.0.1 that checks the shape of each request (AWS's API reference:
// a POST of {"SecretId"} as application/x-amz-json-1.1 with X-Amz-Target
// secretsmanager.GetSecretValue, signed with Signature Version 4 for the
// service secretsmanager in the secret's region) and its signature, and
// answers with answer's status and body. It counts the requests it
// received.
type secretsManager struct {
	t        *testing.T
	srv      *httptest.Server
	requests atomic.Int32
	status   int
	answer   string
}

func newSecretsManager(t *testing.T, status int, answer string) *secretsManager {
	t.Helper()
	sm := &secretsManager{t: t, status: status, answer: answer}
	sm.srv = httptest.NewServer(http.HandlerFunc(sm.serve))
	t.Cleanup(sm.srv.Close)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, sm.srv.URL)
	return sm
}

// answerSecret is GetSecretValue's answer for a secret holding s.
func answerSecret(s string) string {
	b, _ := json.Marshal(map[string]any{"ARN": secretARN, "Name": "kafka-relay", "VersionId": "v1", "SecretString": s, "VersionStages": []string{"AWSCURRENT"}})
	return string(b)
}

var (
	authorization = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDRELAY/(\d{8})/eu-west-1/secretsmanager/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)
)

func (sm *secretsManager) serve(w http.ResponseWriter, r *http.Request) {
	sm.requests.Add(1)
	t := sm.t
	body, err := io.ReadAll(r.Body)
	shaped := assert.NoError(t, err) &&
		assert.Equal(t, http.MethodPost, r.Method, "method") &&
		assert.Equal(t, "/", r.URL.Path, "path") &&
		assert.Equal(t, "application/x-amz-json-1.1", r.Header.Get("Content-Type"), "content type") &&
		assert.Equal(t, "secretsmanager.GetSecretValue", r.Header.Get("X-Amz-Target"), "target") &&
		assert.Equal(t, "session-token", r.Header.Get("X-Amz-Security-Token"), "the role's session token")
	if !shaped {
		w.WriteHeader(http.StatusTeapot)
		return
	}
	var in map[string]any
	if !assert.NoError(t, json.Unmarshal(body, &in)) || !assert.Equal(t, map[string]any{"SecretId": secretARN}, in, "body") {
		w.WriteHeader(http.StatusTeapot)
		return
	}
	m := authorization.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		t.Errorf("Authorization %q is not SigV4 for secretsmanager in eu-west-1 by AKIDRELAY", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusForbidden)
		return
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if !assert.NoError(t, err) || !assert.Equal(t, at.Format("20060102"), m[1], "the credential's date") {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	for _, h := range []string{"content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"} {
		if !strings.Contains(";"+m[2]+";", ";"+h+";") {
			t.Errorf("SignedHeaders %s leave out %s", m[2], h)
		}
	}
	// The signature covers what was sent: signed again from the request
	// as received, with the body's hash, it is the same.
	again, err := http.NewRequest(r.Method, sm.srv.URL+r.URL.Path, strings.NewReader(string(body)))
	assert.NoError(t, err)
	for _, h := range []string{"Content-Type", "X-Amz-Target"} {
		again.Header.Set(h, r.Header.Get(h))
	}
	sum := sha256.Sum256(body)
	assert.NoError(t, v4.NewSigner().SignHTTP(r.Context(), relayCredentials, again, hex.EncodeToString(sum[:]), "secretsmanager", "eu-west-1", at))
	if !assert.Equal(t, again.Header.Get("Authorization"), r.Header.Get("Authorization"), "signature") {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(sm.status)
	_, _ = io.WriteString(w, sm.answer)
}

var relayCredentials = aws.Credentials{AccessKeyID: "AKIDRELAY", SecretAccessKey: "relay-secret-key", SessionToken: "session-token"}

// awsConfig is the function's AWS configuration with Secrets Manager's
// endpoint at url, as AWSConfig reads it from the environment.
func awsConfig(t *testing.T, url string) aws.Config {
	t.Helper()
	env := startup.NewEnvFrom(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": relayCredentials.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": relayCredentials.SecretAccessKey, "AWS_SESSION_TOKEN": relayCredentials.SessionToken,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": url,
	})
	cfg := env.AWSConfig()
	require.NoError(t, env.Err())
	return cfg
}

// The SCRAM user is read from its secret with one signed GetSecretValue,
// and is the producer's.
func TestTheSCRAMUserIsReadFromItsSecret(t *testing.T) {
	t.Parallel()
	sm := newSecretsManager(t, http.StatusOK, answerSecret(`{"username":"relay","password":"`+password+`"}`))
	pc, err := kafkarelay.ProducerConfig(startup.NewEnvFrom(with(map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SECRET_ARN": secretARN})),
		awsConfig(t, sm.srv.URL), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, int32(1), sm.requests.Load())
	require.Equal(t, kafkaout.AuthSCRAMSHA512, pc.Auth)
	require.Equal(t, "relay", pc.Username)
	require.Equal(t, password, pc.Password)
	require.NoError(t, build(with(map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SECRET_ARN": secretARN}), awsConfig(t, sm.srv.URL)),
		"the relay builds with it")
}

// Without authentication, or with MSK IAM, no secret is read.
func TestNoSecretIsReadButSCRAMs(t *testing.T) {
	t.Parallel()
	sm := newSecretsManager(t, http.StatusOK, answerSecret(`{"username":"relay","password":"`+password+`"}`))
	for _, mech := range []string{"", "AWS_MSK_IAM"} {
		pc, err := kafkarelay.ProducerConfig(startup.NewEnvFrom(with(map[string]string{"KAFKA_SASL_MECHANISM": mech, "KAFKA_SECRET_ARN": secretARN})),
			awsConfig(t, sm.srv.URL), slog.New(slog.DiscardHandler))
		require.NoError(t, err, mech)
		require.Empty(t, pc.Username, mech)
	}
	require.Zero(t, sm.requests.Load())
}

// Each way the secret can fail to give a user fails the init, naming
// KAFKA_SECRET_ARN and what is wrong, never the password; a setting
// wrong on its face sends no request.
func TestASecretWithoutAUserFailsTheInit(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		arn      string
		status   int
		answer   string
		want     string
		requests int32
	}{
		"no ARN":     {"", http.StatusOK, "", "KAFKA_SECRET_ARN is not set", 0},
		"not an ARN": {"kafka-relay", http.StatusOK, "", `KAFKA_SECRET_ARN: kafkarelay: SCRAM secret: "kafka-relay" is not a Secrets Manager secret's ARN`, 0},
		"another service's ARN": {"arn:aws:ssm:eu-west-1:123456789012:parameter/kafka", http.StatusOK, "",
			`"arn:aws:ssm:eu-west-1:123456789012:parameter/kafka" is not a Secrets Manager secret's ARN`, 0},
		"refused": {secretARN, http.StatusBadRequest, `{"__type":"AccessDeniedException","Message":"not authorized to perform secretsmanager:GetSecretValue"}`,
			"KAFKA_SECRET_ARN: kafkarelay: SCRAM secret: GetSecretValue of " + secretARN + ": 400 AccessDeniedException: not authorized to perform secretsmanager:GetSecretValue", 1},
		"no such secret": {secretARN, http.StatusBadRequest, `{"__type":"com.amazonaws.secretsmanager#ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`,
			"400 ResourceNotFoundException: Secrets Manager can't find the specified secret.", 1},
		"a server error":     {secretARN, http.StatusInternalServerError, `oops`, "500 Internal Server Error", 1},
		"binary":             {secretARN, http.StatusOK, `{"ARN":"` + secretARN + `","SecretBinary":"e30="}`, "holds no SecretString", 1},
		"not JSON":           {secretARN, http.StatusOK, answerSecret(password), `its SecretString is not {"username", "password"}`, 1},
		"no username":        {secretARN, http.StatusOK, answerSecret(`{"user":"relay","password":"` + password + `"}`), "username or password is empty", 1},
		"no password":        {secretARN, http.StatusOK, answerSecret(`{"username":"relay","password":""}`), "username or password is empty", 1},
		"a number":           {secretARN, http.StatusOK, answerSecret(`{"username":"relay","password":7}`), `its SecretString is not {"username", "password"}`, 1},
		"an answer not JSON": {secretARN, http.StatusOK, `<html>`, "the answer is not GetSecretValue's", 1},
	} {
		sm := newSecretsManager(t, tc.status, tc.answer)
		env := with(map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SECRET_ARN": tc.arn})
		_, err := kafkarelay.ProducerConfig(startup.NewEnvFrom(env), awsConfig(t, sm.srv.URL), slog.New(slog.DiscardHandler))
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), password, name)
		require.Equal(t, tc.requests, sm.requests.Load(), name)
		if tc.requests > 0 {
			require.ErrorIs(t, err, kafkarelay.ErrSecret, name)
		}
	}
}

// An endpoint that does not answer, and a cancelled context, are errors.
func TestASecretsManagerThatCannotBeReachedIsAnError(t *testing.T) {
	t.Parallel()
	sm := newSecretsManager(t, http.StatusOK, answerSecret(`{"username":"relay","password":"`+password+`"}`))
	cfg := awsConfig(t, sm.srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := kafkarelay.ReadSCRAMUser(ctx, cfg, secretARN)
	require.ErrorIs(t, err, kafkarelay.ErrSecret)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)

	sm.srv.Close()
	_, err = kafkarelay.ReadSCRAMUser(t.Context(), cfg, secretARN)
	require.ErrorIs(t, err, kafkarelay.ErrSecret)
	require.ErrorContains(t, err, "GetSecretValue of "+secretARN)
}

// The endpoint is Secrets Manager's in the secret's region and partition
// (AWS's general reference: secretsmanager.<region>.amazonaws.com, and
// amazonaws.com.cn in China), unless the configuration names another.
func TestTheEndpointIsTheSecretsRegions(t *testing.T) {
	t.Parallel()
	for arn, want := range map[string]string{
		secretARN: "https://secretsmanager.eu-west-1.amazonaws.com/",
		"arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:k":        "https://secretsmanager.cn-north-1.amazonaws.com.cn/",
		"arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:k": "https://secretsmanager.us-gov-west-1.amazonaws.com/",
	} {
		got, err := kafkarelay.SecretEndpoint(arn, aws.Config{})
		require.NoError(t, err, arn)
		require.Equal(t, want, got, arn)
	}
	const iso = "arn:aws-iso:secretsmanager:us-iso-east-1:123456789012:secret:k"
	_, err := kafkarelay.SecretEndpoint(iso, aws.Config{})
	require.ErrorContains(t, err, `partition "aws-iso"`)
	got, err := kafkarelay.SecretEndpoint(iso, aws.Config{BaseEndpoint: aws.String("http://127.0.0.1:4566")})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4566/", got, "a configured endpoint, whatever the partition")
}
