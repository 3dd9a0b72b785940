package nudge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
)

// LambdaConfig configures a Lambda sender.
type LambdaConfig struct {
	// Function is the relay function's name or ARN (a version or alias
	// may follow, "name:alias"). Required.
	Function string
	// Region is the function's region. Required.
	Region string
	// Credentials sign the requests (the writer function's role, which
	// needs lambda:InvokeFunction on Function). Required.
	Credentials aws.CredentialsProvider
	// HTTPClient sends the requests. Default (nil): http.DefaultClient
	// (each send is bounded by its context: the Coalescer's Timeout).
	HTTPClient *http.Client
	// Endpoint is the Lambda API's base URL. Default (""):
	// https://lambda.<Region>.amazonaws.com (.com.cn in the China
	// regions); a function in a VPC reaches it through an interface
	// endpoint for Lambda or a NAT.
	Endpoint string
	// Now is the signing clock. Default (nil): time.Now.
	Now func() time.Time
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c LambdaConfig) Validate() error {
	switch {
	case c.Function == "":
		return fmt.Errorf("%w: Function is empty", ErrInvalidConfig)
	case c.Region == "":
		return fmt.Errorf("%w: Region is empty", ErrInvalidConfig)
	case c.Credentials == nil:
		return fmt.Errorf("%w: Credentials is nil", ErrInvalidConfig)
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%w: Endpoint %q is not an http(s) URL", ErrInvalidConfig, c.Endpoint)
		}
	}
	return nil
}

// Lambda sends a nudge as an asynchronous invocation of the relay function
// (Lambda's Invoke API with InvocationType Event: POST
// /2015-03-31/functions/{name}/invocations, header X-Amz-Invocation-Type:
// Event, answered 202 once Lambda has queued the event; checked in the
// Lambda API reference, Invoke). The invocation runs after the writer's
// call returns, so the writer waits only for the queueing. Lambda retries
// a failed asynchronous invocation twice and may deliver an event more
// than once: a nudge carries no data, and a Drain too many finds nothing.
//
// It signs the request itself (Signature Version 4, the SDK's signer)
// instead of using the SDK's Lambda client, which is not a module of
// ours: one call does not justify it.
type Lambda struct {
	url    string
	region string
	creds  aws.CredentialsProvider
	client *http.Client
	now    func() time.Time
	signer *v4.Signer
}

var _ Sender = (*Lambda)(nil)

// NewLambda returns a Lambda sender, or an error wrapping ErrInvalidConfig.
func NewLambda(cfg LambdaConfig) (*Lambda, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.Endpoint
	if base == "" {
		base = "https://lambda." + cfg.Region + "." + domain(cfg.Region)
	}
	l := &Lambda{
		url:    strings.TrimSuffix(base, "/") + "/2015-03-31/functions/" + url.PathEscape(cfg.Function) + "/invocations",
		region: cfg.Region, creds: cfg.Credentials, client: cfg.HTTPClient, now: cfg.Now, signer: v4.NewSigner(),
	}
	if l.client == nil {
		l.client = http.DefaultClient
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l, nil
}

// domain is the endpoint domain of region's partition: amazonaws.com.cn
// for the China regions (Beijing and Ningxia, as AWS's China endpoint
// lists give it), amazonaws.com for the others this service deploys to.
func domain(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "amazonaws.com.cn"
	}
	return "amazonaws.com"
}

// Send invokes the relay function asynchronously with p.
func (l *Lambda) Send(ctx context.Context, p Payload) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("nudge: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("nudge: invoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Invocation-Type", "Event")
	creds, err := l.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("nudge: credentials: %w", err)
	}
	if err := l.signer.SignHTTP(ctx, creds, req, checksum.SHA256Hex(body), "lambda", l.region, l.now()); err != nil {
		return fmt.Errorf("nudge: sign: %w", err)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return fmt.Errorf("nudge: invoke: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("nudge: invoke: Lambda answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
