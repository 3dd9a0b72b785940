package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// apiBundle is an HTTPAPI on an httptest server in front of a fake intake
// that records what it is sent and answers with respond.
type apiBundle struct {
	srv     *httptest.Server
	id      *Identity
	now     time.Time
	mu      sync.Mutex
	events  []events.APIGatewayV2HTTPRequest
	respond func(events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

func setupAPI(t *testing.T) *apiBundle {
	t.Helper()
	b := &apiBundle{now: issuedAt}
	b.id = newTestIdentity(t, &b.now)
	b.respond = func(events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{}`}, nil
	}
	fake := func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		b.mu.Lock()
		b.events = append(b.events, ev)
		b.mu.Unlock()
		return b.respond(ev)
	}
	api, err := NewHTTPAPI(HTTPAPIConfig{Handler: fake, Identity: b.id})
	require.NoError(t, err)
	b.srv = httptest.NewServer(api)
	t.Cleanup(b.srv.Close)
	return b
}

func (b *apiBundle) token(t *testing.T, tenant string) string {
	t.Helper()
	tok, err := b.id.Token(tenant)
	require.NoError(t, err)
	return tok
}

func (b *apiBundle) sent() []events.APIGatewayV2HTTPRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]events.APIGatewayV2HTTPRequest(nil), b.events...)
}

// do sends req and returns the status, headers and body of the answer.
func do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	require.NoError(t, err)
	return req
}

func TestTheEventIsWhatAPIGatewaySendsForTheRequest(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	req := newRequest(t, http.MethodPost, b.srv.URL+"/jobs?b=2&a=1&a=3", strings.NewReader(`{"spec":{}}`))
	req.Header.Set("Authorization", "Bearer "+b.token(t, "t-1"))
	req.Header.Set("Idempotency-Key", "k1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "curl/8.5.0")
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Add("Cookie", "a=1; b=2")
	req.Header.Add("Cookie", "c=3")
	status, header, _ := do(t, req)
	require.Equal(t, http.StatusOK, status)

	sent := b.sent()
	require.Len(t, sent, 1)
	ev := sent[0]
	require.Equal(t, "2.0", ev.Version)
	require.Equal(t, "$default", ev.RouteKey)
	require.Equal(t, "/jobs", ev.RawPath)
	require.Equal(t, "b=2&a=1&a=3", ev.RawQueryString)
	require.Equal(t, map[string]string{"a": "1,3", "b": "2"}, ev.QueryStringParameters)
	require.Equal(t, []string{"a=1", "b=2", "c=3"}, ev.Cookies)
	require.Equal(t, `{"spec":{}}`, ev.Body)
	require.False(t, ev.IsBase64Encoded)
	for name := range ev.Headers {
		require.Equal(t, strings.ToLower(name), name, "header names are lower case")
	}
	require.NotContains(t, ev.Headers, "cookie", "cookies travel in Cookies")
	require.Equal(t, "one,two", ev.Headers["x-multi"])
	require.Equal(t, "k1", ev.Headers["idempotency-key"])
	require.Equal(t, "application/json", ev.Headers["content-type"])
	require.Equal(t, "11", ev.Headers["content-length"])
	require.Equal(t, strings.TrimPrefix(b.srv.URL, "http://"), ev.Headers["host"])
	require.Equal(t, "127.0.0.1", ev.Headers["x-forwarded-for"])
	require.Equal(t, "http", ev.Headers["x-forwarded-proto"])
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b.srv.URL, "http://"))
	require.Equal(t, port, ev.Headers["x-forwarded-port"])

	rc := ev.RequestContext
	require.Equal(t, "$default", rc.RouteKey)
	require.Equal(t, "$default", rc.Stage)
	require.Equal(t, events.APIGatewayV2HTTPRequestContextHTTPDescription{
		Method: http.MethodPost, Path: "/jobs", Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "curl/8.5.0",
	}, rc.HTTP)
	require.Regexp(t, `^[A-Za-z0-9+/]{15}=$`, rc.RequestID)
	require.Equal(t, rc.RequestID, header.Get("Apigw-Requestid"), "the answer names the request as API Gateway's does")
	require.Equal(t, issuedAt.UnixMilli(), rc.TimeEpoch)
	require.Equal(t, "30/Nov/2026:09:00:00 +0000", rc.Time)
	require.NotNil(t, rc.Authorizer)
	require.NotNil(t, rc.Authorizer.JWT)
	require.Equal(t, "t-1", rc.Authorizer.JWT.Claims["tenant"])
	require.Equal(t, LocalIssuer, rc.Authorizer.JWT.Claims["iss"])
	require.Equal(t, strconv.FormatInt(issuedAt.Add(LocalTokenTTL).Unix(), 10), rc.Authorizer.JWT.Claims["exp"])

	// The event is valid JSON of payload format 2.0: what an RIE receives.
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"authorizer":{"jwt":{"claims":{`)
}

func TestABodyThatIsNotTextArrivesBase64Encoded(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	tok := b.token(t, "t-1")
	for name, tc := range map[string]struct {
		contentType string
		body        []byte
		base64      bool
	}{
		"octet-stream":             {"application/octet-stream", []byte{0, 1, 2, 0xff}, true},
		"form data":                {"application/x-www-form-urlencoded", []byte("a=1"), true},
		"no content type":          {"", []byte(`{"spec":{}}`), true},
		"problem+json":             {"application/problem+json", []byte(`{}`), true},
		"json with charset":        {"application/json; charset=utf-8", []byte(`{"spec":{}}`), false},
		"text/plain":               {"text/plain", []byte("hello"), false},
		"xml":                      {"application/xml", []byte("<a/>"), false},
		"text that is not UTF-8":   {"text/plain", []byte{'a', 0xff, 'b'}, true},
		"malformed content type":   {"application/json;;", []byte(`{}`), true},
		"empty body, binary type":  {"application/octet-stream", nil, false},
		"javascript with encoding": {"application/javascript", []byte("1"), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, http.MethodPost, b.srv.URL+"/jobs", bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+tok)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			status, _, _ := do(t, req)
			require.Equal(t, http.StatusOK, status)
			var ev events.APIGatewayV2HTTPRequest
			for _, e := range b.sent() {
				if e.Headers["content-type"] == tc.contentType && e.Headers["content-length"] == strconv.Itoa(len(tc.body)) {
					ev = e
				}
			}
			require.Equal(t, tc.base64, ev.IsBase64Encoded)
			got := []byte(ev.Body)
			if ev.IsBase64Encoded {
				var err error
				got, err = base64.StdEncoding.DecodeString(ev.Body)
				require.NoError(t, err)
			}
			require.Equal(t, string(tc.body), string(got), "the function gets every byte")
		})
	}
}

func TestTheFunctionsResponseIsWrittenBack(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	b.respond = func(events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{
			StatusCode: http.StatusCreated,
			Headers:    map[string]string{"Content-Type": "application/octet-stream", "Location": "/jobs/x", "X-Two": "a,b"},
			Cookies:    []string{"s=1; HttpOnly", "t=2"},
			Body:       base64.StdEncoding.EncodeToString([]byte{0, 0xff, 'x'}), IsBase64Encoded: true,
		}, nil
	}
	req := newRequest(t, http.MethodGet, b.srv.URL+"/jobs/x", nil)
	req.Header.Set("Authorization", "Bearer "+b.token(t, "t-1"))
	status, header, body := do(t, req)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, []byte{0, 0xff, 'x'}, body)
	require.Equal(t, "application/octet-stream", header.Get("Content-Type"))
	require.Equal(t, "/jobs/x", header.Get("Location"))
	require.Equal(t, "a,b", header.Get("X-Two"))
	require.Equal(t, []string{"s=1; HttpOnly", "t=2"}, header.Values("Set-Cookie"))
	require.Equal(t, "3", header.Get("Content-Length"))

	for name, resp := range map[string]events.APIGatewayV2HTTPResponse{
		"a body marked base64 that is not": {StatusCode: 200, Body: "***", IsBase64Encoded: true},
		"no status code":                   {Body: "{}"},
	} {
		b.respond = func(events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) { return resp, nil }
		status, _, body := do(t, req)
		require.Equal(t, http.StatusInternalServerError, status, name)
		requireErrorBody(t, body, intake.CodeInternal)
	}
}

func TestAFailedInvocationIsA500InTheAPIsShape(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	b.respond = func(events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("pipeline: intake failed (timeout)")
	}
	req := newRequest(t, http.MethodGet, b.srv.URL+"/jobs/x", nil)
	req.Header.Set("Authorization", "Bearer "+b.token(t, "t-1"))
	status, header, body := do(t, req)
	require.Equal(t, http.StatusInternalServerError, status)
	require.Equal(t, "application/json", header.Get("Content-Type"))
	e := requireErrorBody(t, body, intake.CodeInternal)
	require.NotContains(t, e.Message, "timeout", "the cause goes to the log only")
}

func requireErrorBody(t *testing.T, body []byte, code string) intake.ErrorDetail {
	t.Helper()
	var e intake.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), "%s", body)
	require.Equal(t, code, e.Error.Code, "%s", body)
	require.NotEmpty(t, e.Error.Message)
	return e.Error
}

// No token or a bad one is answered 401 before the function, as API
// Gateway's JWT authorizer answers it, in the API's error shape.
func TestARequestWithoutAValidTokenNeverReachesTheFunction(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	good := b.token(t, "t-1")
	parts := strings.Split(good, ".")
	sign := func(edit func(map[string]any)) string {
		c := validClaims(issuedAt)
		edit(c)
		tok, err := b.id.sign(c)
		require.NoError(t, err)
		return tok
	}
	other, err := NewIdentity(IdentityConfig{TenantClaim: "tenant", Now: func() time.Time { return issuedAt }})
	require.NoError(t, err)
	foreign, err := other.Token("t-1")
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		authorization []string
		challenge     string
	}{
		"missing":         {nil, `Bearer`},
		"empty":           {[]string{""}, `Bearer`},
		"Bearer only":     {[]string{"Bearer "}, `Bearer`},
		"expired":         {[]string{"Bearer " + sign(func(c map[string]any) { c["exp"] = issuedAt.Add(-time.Second).Unix() })}, `error_description="the token has expired"`},
		"wrong signature": {[]string{"Bearer " + foreign}, `error_description="the token's signature is not valid"`},
		"wrong audience":  {[]string{"Bearer " + sign(func(c map[string]any) { c["aud"] = "x" })}, `error_description="the token does not have a valid audience"`},
		"wrong issuer":    {[]string{"Bearer " + sign(func(c map[string]any) { c["iss"] = "x" })}, `error_description="the token does not have a valid issuer"`},
		"alg none":        {[]string{"Bearer " + b64(`{"alg":"none"}`) + "." + parts[1] + "."}, `error_description="signing method \"none\" is not accepted; tokens are HS256"`},
		"malformed":       {[]string{"Bearer not-a-jwt"}, `error="invalid_token"`},
		"another scheme":  {[]string{"Basic dTpw"}, `error="invalid_token"`},
		"two headers":     {[]string{"Bearer " + good, "Bearer " + good}, `error="invalid_token"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := newRequest(t, http.MethodPost, b.srv.URL+"/jobs", strings.NewReader(`{"spec":{}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "k-"+name)
			for _, v := range tc.authorization {
				req.Header.Add("Authorization", v)
			}
			status, header, body := do(t, req)
			require.Equal(t, http.StatusUnauthorized, status)
			require.Equal(t, "application/json", header.Get("Content-Type"))
			require.Equal(t, "no-store", header.Get("Cache-Control"))
			require.Contains(t, header.Get("WWW-Authenticate"), tc.challenge)
			require.True(t, strings.HasPrefix(header.Get("WWW-Authenticate"), "Bearer"))
			requireErrorBody(t, body, intake.CodeUnauthorized)
			for _, ev := range b.sent() {
				require.NotEqual(t, "k-"+name, ev.Headers["idempotency-key"], "the function was invoked")
			}
		})
	}
}

// API Gateway takes the token with or without its Bearer prefix, the
// scheme in any case.
func TestTheTokenIsTakenWithOrWithoutItsBearerPrefix(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	tok := b.token(t, "t-2")
	for _, v := range []string{tok, "Bearer " + tok, "bearer " + tok} {
		req := newRequest(t, http.MethodGet, b.srv.URL+"/jobs/x", nil)
		req.Header.Set("Authorization", v)
		status, _, _ := do(t, req)
		require.Equal(t, http.StatusOK, status, v)
	}
	for _, ev := range b.sent() {
		require.Equal(t, "t-2", ev.RequestContext.Authorizer.JWT.Claims["tenant"])
	}
}

func TestABodyOverAPIGatewaysLimitIsA413(t *testing.T) {
	t.Parallel()
	b := setupAPI(t)
	tok := b.token(t, "t-1")
	for name, body := range map[string]io.Reader{
		"with its length": bytes.NewReader(make([]byte, MaxRequestBodyBytes+1)),
		// An io.Reader of unknown length: sent chunked, read up to the limit.
		"chunked": io.LimitReader(zeros{}, MaxRequestBodyBytes+1),
	} {
		req := newRequest(t, http.MethodPost, b.srv.URL+"/jobs", body)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		status, _, got := do(t, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, status, name)
		requireErrorBody(t, got, intake.CodePayloadTooLarge)
	}
	require.Empty(t, b.sent())

	req := newRequest(t, http.MethodPost, b.srv.URL+"/jobs", bytes.NewReader(make([]byte, MaxRequestBodyBytes)))
	req.Header.Set("Authorization", "Bearer "+tok)
	status, _, _ := do(t, req)
	require.Equal(t, http.StatusOK, status, "exactly the limit is passed on")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// fakePresigner signs nothing: the URL names the key.
type fakePresigner struct{}

func (fakePresigner) PresignGet(_ context.Context, r jobs.Result, _ time.Duration) (string, error) {
	return "http://s3.local/" + r.Key, nil
}

// Through the adapter to the real intake: the claims land where intake
// reads the tenant, and intake's own answers come back unchanged.
func TestTheRealIntakeBehindTheAdapter(t *testing.T) {
	t.Parallel()
	now := issuedAt
	id := newTestIdentity(t, &now)
	store, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(t, err)
	h, err := intake.New(intake.Config{
		Store: store, Presigner: fakePresigner{}, TenantClaim: id.TenantClaim(), Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	api, err := NewHTTPAPI(HTTPAPIConfig{Handler: h.Handle, Identity: id})
	require.NoError(t, err)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	tok := func(tenant string) string {
		s, err := id.Token(tenant)
		require.NoError(t, err)
		return "Bearer " + s
	}

	post := newRequest(t, http.MethodPost, srv.URL+"/jobs", strings.NewReader(`{"spec":{}}`))
	post.Header.Set("Authorization", tok("t-1"))
	post.Header.Set("Idempotency-Key", "k1")
	post.Header.Set("Content-Type", "application/json")
	status, header, body := do(t, post)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var created intake.CreatedView
	require.NoError(t, json.Unmarshal(body, &created))
	require.Equal(t, "/jobs/"+created.JobID, header.Get("Location"))
	require.Equal(t, jobs.DeriveJobID("t-1", "k1"), created.JobID, "the tenant is the token's")

	get := func(authorization string) (int, []byte) {
		req := newRequest(t, http.MethodGet, srv.URL+"/jobs/"+created.JobID, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		status, _, body := do(t, req)
		return status, body
	}
	status, body = get(tok("t-1"))
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Contains(t, string(body), `"status":"pending"`)
	status, body = get(tok("t-2"))
	require.Equal(t, http.StatusNotFound, status)
	requireErrorBody(t, body, intake.CodeJobNotFound)
	status, body = get("")
	require.Equal(t, http.StatusUnauthorized, status)
	requireErrorBody(t, body, intake.CodeUnauthorized)
}

func TestOnlyALoopbackAddressIsServed(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		ln, err := ListenLoopback(addr)
		require.Error(t, err, addr)
		require.Nil(t, ln)
		if addr != "127.0.0.1" {
			require.ErrorIs(t, err, ErrNotLoopback, addr)
			require.ErrorContains(t, err, "127.0.0.1, ::1 or localhost only")
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.2:0"} {
		ln, err := ListenLoopback(addr)
		require.NoError(t, err, addr)
		require.True(t, ln.Addr().(*net.TCPAddr).IP.IsLoopback(), addr)
		require.NoError(t, ln.Close())
	}
}
