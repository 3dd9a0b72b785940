package localesm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// rieInvokePath is where the runtime interface emulator accepts invocations
// (the Lambda Invoke API's path, with the fixed function name "function").
const rieInvokePath = "/2015-03-31/functions/function/invocations"

// DefaultRIEGrace is how long past the invocation's Timeout, counted from
// when its request is sent, the RIE invoker waits for the emulator's answer
// before it calls the invocation timed out.
// The emulator enforces the function timeout itself (start it with
// AWS_LAMBDA_FUNCTION_TIMEOUT equal to the mapping's FunctionTimeout) and
// answers "Task timed out after ..." on its own; the grace only covers an
// emulator that never answers.
const DefaultRIEGrace = 2 * time.Second

// RIE invokes a bootstrap running under the Lambda runtime interface
// emulator (aws-lambda-rie) over HTTP. It runs one invocation at a time, as
// the emulator can only handle one: concurrent Invoke calls queue, and an
// invocation's Timeout starts only when its turn comes, as the emulator's
// own timeout does. MaxConcurrency reports 1, so an SQSMapping runs one
// invocation at a time and receives no batch that would have to queue.
// Give each mapping its own emulator: mappings sharing one still get each
// invocation's full time budget, but their invocations wait for each
// other, and SQS messages received meanwhile wait while their visibility
// timeout runs. The emulator assigns the function its own request id; the
// mapping's RequestID appears only in the mapping's logs and results.
type RIE struct {
	url    string
	client *http.Client
	grace  time.Duration
	slot   chan struct{}
}

// RIEConfig configures an RIE.
type RIEConfig struct {
	// Addr is where the emulator listens, as host:port (its
	// --runtime-interface-emulator-address) or as a base URL. Required.
	Addr string
}

// base is Addr as a base URL.
func (c RIEConfig) base() string {
	if !strings.Contains(c.Addr, "://") {
		return "http://" + c.Addr
	}
	return c.Addr
}

// Validate reports an Addr that names no host, wrapping ErrInvalidConfig.
func (c RIEConfig) Validate() error {
	if c.Addr == "" {
		return fmt.Errorf("%w: Addr is empty", ErrInvalidConfig)
	}
	if u, err := url.Parse(c.base()); err != nil || u.Host == "" {
		return fmt.Errorf("%w: Addr %q is neither host:port nor a base URL", ErrInvalidConfig, c.Addr)
	}
	return nil
}

// NewRIE returns an invoker for the emulator listening at cfg.Addr, or an
// error wrapping ErrInvalidConfig.
func NewRIE(cfg RIEConfig) (*RIE, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &RIE{
		url:    strings.TrimRight(cfg.base(), "/") + rieInvokePath,
		client: &http.Client{},
		grace:  DefaultRIEGrace,
		slot:   make(chan struct{}, 1),
	}, nil
}

// URL is the address invocations are posted to.
func (r *RIE) URL() string { return r.url }

// MaxConcurrency is 1: the emulator runs one invocation at a time. It makes
// RIE a ConcurrencyLimiter.
func (r *RIE) MaxConcurrency() int { return cap(r.slot) }

var _ ConcurrencyLimiter = (*RIE)(nil)

// Invoke posts the payload and classifies the answer. Unlike Lambda, the
// emulator sets no X-Amz-Function-Error header (checked against
// aws-lambda-rie). It answers 200 for whatever the function returned, its
// error included: a function error is recognised by its body, the
// runtime's error document, and a timeout by the emulator's "Task timed
// out after" message. When the invocation failed in the emulator itself
// (the runtime exited, or its response was over the limit) it answers 502
// with an error document; that too is a function error, as Lambda reports
// it. The header is honoured when present.
//
// A response longer than MaxResponseSize is a function error of type
// Function.ResponseSizeTooLarge, never a response cut short: aws-lambda-rie
// refuses one itself (502; its message names the limit but not the size),
// and one an emulator passes on gets the same error from Invoke, with the
// size.
func (r *RIE) Invoke(ctx context.Context, inv Invocation) (Result, error) {
	select {
	case r.slot <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("localesm: invoke %s: waiting for the emulator: %w", r.url, ctx.Err())
	}
	defer func() { <-r.slot }()

	// The function's time budget starts now that it is its turn, not when
	// Invoke was called.
	timeout := inv.timeout()
	hctx, cancel := context.WithDeadline(ctx, time.Now().Add(timeout+r.grace))
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodPost, r.url, bytes.NewReader(inv.Payload))
	if err != nil {
		return Result{}, fmt.Errorf("localesm: invoke %s: %w", r.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
			return timeoutResult(timeout), nil
		}
		return Result{}, fmt.Errorf("localesm: invoke %s: %w", r.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	// Read one byte past the limit to tell a response of exactly
	// MaxResponseSize from a longer one, then count (and drop) the rest.
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseSize+1))
	size := int64(len(body))
	if err == nil && size > MaxResponseSize {
		var rest int64
		rest, err = io.Copy(io.Discard, resp.Body)
		size += rest
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded) {
			return timeoutResult(timeout), nil
		}
		return Result{}, fmt.Errorf("localesm: invoke %s: read response: %w", r.url, err)
	}
	if resp.StatusCode == http.StatusBadGateway && size <= MaxResponseSize && isErrorDocument(body) {
		return Result{Status: StatusFunctionError, Payload: body}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return Result{}, fmt.Errorf("localesm: invoke %s: status %d: %s", r.url, resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 4096)]))
	}
	if size > MaxResponseSize {
		return responseTooLarge(size), nil
	}
	return classifyRIE(resp.Header.Get("X-Amz-Function-Error"), body), nil
}

// classifyRIE tells a response from a function error and a timeout.
func classifyRIE(functionError string, body []byte) Result {
	switch {
	case functionError != "":
		return Result{Status: StatusFunctionError, Payload: body}
	case bytes.HasPrefix(bytes.TrimSpace(body), []byte("Task timed out after")):
		return Result{Status: StatusTimeout, Payload: body}
	case isErrorDocument(body):
		return Result{Status: StatusFunctionError, Payload: body}
	}
	return Result{Status: StatusOK, Payload: body}
}

// isErrorDocument reports whether body is a runtime's error document: a
// JSON object with errorType or errorMessage and no key a runtime does not
// put there. A function that returns such an object as its response is
// indistinguishable from a failing one behind the emulator.
func isErrorDocument(body []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil || len(doc) == 0 {
		return false
	}
	_, hasType := doc["errorType"]
	_, hasMessage := doc["errorMessage"]
	if !hasType && !hasMessage {
		return false
	}
	for k := range doc {
		switch k {
		case "errorType", "errorMessage", "stackTrace", "cause", "requestId":
		default:
			return false
		}
	}
	return true
}
