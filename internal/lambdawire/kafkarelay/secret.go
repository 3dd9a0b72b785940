package kafkarelay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// ErrSecret is the error of a SCRAM secret that could not be read, or
// does not hold a user: the function's init fails with it, under
// KAFKA_SECRET_ARN. It never carries the password.
var ErrSecret = errors.New("kafkarelay: SCRAM secret")

// secretTimeout bounds the read of the secret, within Lambda's 10-second
// init: what is not answered by then fails the init, which Lambda retries
// at the next invocation.
const secretTimeout = 5 * time.Second

// scramUser is a SCRAM user, as the secret holds it.
type scramUser struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// readSCRAMUser reads the SCRAM user from the Secrets Manager secret arn,
// with one GetSecretValue request signed with cfg's credentials. The
// secret's SecretString is {"username": ..., "password": ...}, the shape
// Lambda's SASL_SCRAM_512_AUTH source access configuration reads (Amazon
// MSK's guide, "Set up SASL/SCRAM authentication": "Your sign-in
// credential data must be in the following format"; Lambda's, "Configuring
// cluster authentication methods": the secret in the function's region),
// so the relay and the consumers' mappings share one secret.
//
// The request is made here rather than with the SDK's Secrets Manager
// client, which this module does not require (a whole service client in
// the one bootstrap that carries franz-go): GetSecretValue is a JSON POST
// (AWS JSON 1.1, X-Amz-Target secretsmanager.GetSecretValue; AWS's API
// reference, "GetSecretValue" and "Common parameters") signed with
// Signature Version 4 for the service secretsmanager, which the SDK's
// signer does. It is sent once: an error fails the init, which Lambda
// retries at the next invocation, and nothing is lost meanwhile (the
// stream's records wait).
//
// The user is read once per execution environment: a password rotated
// since is not seen until the next cold start. Rotate with Secrets
// Manager's alternating-users strategy, so that the previous user stays
// valid until then.
func readSCRAMUser(ctx context.Context, cfg aws.Config, arn string) (scramUser, error) {
	s, err := parseSecretARN(arn)
	if err != nil {
		return scramUser{}, err
	}
	out, err := s.getSecretValue(ctx, cfg)
	if err != nil {
		return scramUser{}, fmt.Errorf("%w: GetSecretValue of %s: %w", ErrSecret, arn, err)
	}
	if out.SecretString == nil {
		return scramUser{}, fmt.Errorf("%w: %s holds no SecretString (a binary secret?): a SCRAM user is a SecretString {\"username\", \"password\"}", ErrSecret, arn)
	}
	var u scramUser
	if json.Unmarshal([]byte(*out.SecretString), &u) != nil {
		// The JSON error is left out: it may quote the secret.
		return scramUser{}, fmt.Errorf("%w: %s: its SecretString is not {\"username\", \"password\"}", ErrSecret, arn)
	}
	if u.Username == "" || u.Password == "" {
		return scramUser{}, fmt.Errorf("%w: %s: its username or password is empty", ErrSecret, arn)
	}
	return u, nil
}

// secretARN is what a secret's ARN says of where to ask for it:
// arn:<partition>:secretsmanager:<region>:<account>:secret:<name>.
type secretARN struct {
	arn, partition, region string
}

func parseSecretARN(arn string) (secretARN, error) {
	parts := strings.SplitN(arn, ":", 7)
	if len(parts) != 7 || parts[0] != "arn" || !strings.HasPrefix(parts[1], "aws") || parts[2] != "secretsmanager" ||
		parts[3] == "" || parts[5] != "secret" || parts[6] == "" {
		return secretARN{}, fmt.Errorf("%w: %q is not a Secrets Manager secret's ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)", ErrSecret, arn)
	}
	return secretARN{arn: arn, partition: parts[1], region: parts[3]}, nil
}

// dnsSuffixes are the partitions' domains of the regional endpoints
// (AWS's general reference, "AWS service endpoints": Secrets Manager's is
// secretsmanager.<region>.<suffix>). Other partitions are refused rather
// than guessed.
var dnsSuffixes = map[string]string{"aws": "amazonaws.com", "aws-cn": "amazonaws.com.cn", "aws-us-gov": "amazonaws.com"}

// endpoint is the URL GetSecretValue goes to: the one cfg gives Secrets
// Manager (a local stand-in), else the secret's regional endpoint. In
// the cluster's VPC that name resolves to the interface endpoint
// template-kafka.yaml makes (private DNS), or goes out through a NAT.
func (s secretARN) endpoint(cfg aws.Config) (string, error) {
	if url, ok := startup.ServiceEndpoint(cfg, "Secrets Manager"); ok {
		return strings.TrimSuffix(url, "/") + "/", nil
	}
	suffix, ok := dnsSuffixes[s.partition]
	if !ok {
		return "", fmt.Errorf("%w: %s: no endpoint known for partition %q", ErrSecret, s.arn, s.partition)
	}
	return "https://secretsmanager." + s.region + "." + suffix + "/", nil
}

// getSecretValueOutput is what is read of GetSecretValue's answer.
type getSecretValueOutput struct {
	SecretString *string
}

// getSecretValue sends the signed request and reads its answer; an
// error answer is named by its type and message.
func (s secretARN) getSecretValue(ctx context.Context, cfg aws.Config) (getSecretValueOutput, error) {
	url, err := s.endpoint(cfg)
	if err != nil {
		return getSecretValueOutput{}, err
	}
	req, err := s.request(ctx, cfg, url)
	if err != nil {
		return getSecretValueOutput{}, err
	}
	// The standard library's client, not cfg's: the SDK's buildable
	// client, never called otherwise in this bootstrap, would add its
	// code (64 KiB of the arm64 bootstrap) for one request at init.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return getSecretValueOutput{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	// A secret is at most 64 KiB (Secrets Manager's quotas); its answer
	// with the rest is well within 1 MiB.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return getSecretValueOutput{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return getSecretValueOutput{}, answerError(resp.Status, body)
	}
	var out getSecretValueOutput
	if err := json.Unmarshal(body, &out); err != nil {
		return getSecretValueOutput{}, errors.New("the answer is not GetSecretValue's JSON")
	}
	return out, nil
}

// request is GetSecretValue of s, signed with cfg's credentials.
func (s secretARN) request(ctx context.Context, cfg aws.Config, url string) (*http.Request, error) {
	if cfg.Credentials == nil {
		return nil, errors.New("no credentials to sign with")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]string{"SecretId": s.arn})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "secretsmanager.GetSecretValue")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "secretsmanager", s.region, time.Now()); err != nil {
		return nil, err
	}
	return req, nil
}

// answerError names an error answer: AWS JSON's __type (its shape name,
// after any namespace) and message, else the HTTP status alone.
func answerError(status string, body []byte) error {
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"` // or "Message": JSON's field names match regardless of case
	}
	if json.Unmarshal(body, &e) != nil || e.Type == "" {
		return errors.New(status)
	}
	code, _, _ := strings.Cut(status, " ")
	_, typ, found := strings.Cut(e.Type, "#")
	if !found {
		typ = e.Type
	}
	return fmt.Errorf("%s %s: %s", code, typ, e.Message)
}
