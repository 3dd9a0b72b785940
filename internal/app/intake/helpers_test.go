package intake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// countingStore is a jobs.Store that counts the writes reaching the store
// it wraps, so a test can prove a refused request wrote nothing.
type countingStore struct {
	jobs.Store
	writes atomic.Int32
}

func (s *countingStore) Create(ctx context.Context, req jobs.CreateRequest) (jobs.CreateResult, error) {
	s.writes.Add(1)
	return s.Store.Create(ctx, req)
}

func (s *countingStore) Claim(ctx context.Context, req jobs.ClaimRequest) (jobs.Job, error) {
	s.writes.Add(1)
	return s.Store.Claim(ctx, req)
}

func (s *countingStore) Renew(ctx context.Context, req jobs.RenewRequest) (jobs.Job, error) {
	s.writes.Add(1)
	return s.Store.Renew(ctx, req)
}

func (s *countingStore) Accept(ctx context.Context, req jobs.AcceptRequest) (jobs.Job, error) {
	s.writes.Add(1)
	return s.Store.Accept(ctx, req)
}

func (s *countingStore) Fail(ctx context.Context, req jobs.FailRequest) (jobs.Job, error) {
	s.writes.Add(1)
	return s.Store.Fail(ctx, req)
}

func (s *countingStore) Cancel(ctx context.Context, req jobs.CancelRequest) (jobs.Job, error) {
	s.writes.Add(1)
	return s.Store.Cancel(ctx, req)
}

// fakePresigner returns a URL that spells out what it was asked to sign.
type fakePresigner struct {
	mu    sync.Mutex
	calls []presignCall
}

type presignCall struct {
	Key string
	TTL time.Duration
}

func (p *fakePresigner) PresignGet(_ context.Context, r jobs.Result, ttl time.Duration) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, presignCall{Key: r.Key, TTL: ttl})
	return fakeResultURL(r, ttl), nil
}

func (p *fakePresigner) Calls() []presignCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]presignCall(nil), p.calls...)
}

type testBundle struct {
	clock     *jobstest.Clock
	memory    *jobs.MemoryStore
	store     *countingStore
	presigner *fakePresigner
	handler   *intake.Handler
	logs      *testenv.Buffer
}

// setup returns a handler on a memory store, a fake presigner and a JSON
// log in memory; edit adjusts the config before New.
func setup(t testing.TB, edit ...func(*intake.Config)) *testBundle {
	t.Helper()
	clock := jobstest.NewClock(jobstest.Start)
	memory, err := jobs.NewMemoryStore(jobs.Config{Now: clock.Now})
	require.NoError(t, err)
	b := &testBundle{
		clock:     clock,
		memory:    memory,
		presigner: &fakePresigner{},
		logs:      &testenv.Buffer{},
	}
	b.store = &countingStore{Store: b.memory}
	cfg := intake.Config{
		Store:     b.store,
		Presigner: b.presigner,
		Logger:    slog.New(slog.NewJSONHandler(b.logs, nil)),
		Now:       clock.Now,
	}
	for _, e := range edit {
		e(&cfg)
	}
	h, err := intake.New(cfg)
	require.NoError(t, err)
	b.handler = h
	return b
}

// do runs a request through the handler, which must not return an error.
func (b *testBundle) do(t testing.TB, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := b.handler.Handle(context.Background(), req)
	require.NoError(t, err, "Handle answers every failure itself")
	return resp
}

// seed creates a job directly in the store (not counted as a request's
// write).
func (b *testBundle) seed(t testing.TB, id, tenant, intent string, spec map[string]string) jobs.Job {
	t.Helper()
	res, err := b.memory.Create(context.Background(), jobs.CreateRequest{JobID: id, IntentID: intent, Tenant: tenant, Spec: spec})
	require.NoError(t, err)
	return res.Job
}

// complete claims and accepts the job as worker B of the running example.
func (b *testBundle) complete(t testing.TB, id string) jobs.Job {
	t.Helper()
	ctx := context.Background()
	c, err := b.memory.Claim(ctx, jobs.ClaimRequest{JobID: id, AttemptID: "worker-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	j, err := b.memory.Accept(ctx, jobs.AcceptRequest{JobID: id, AttemptID: "worker-b", Generation: c.Generation, Version: c.Version,
		Result: jobs.Result{Key: "candidates/" + id + "/g0000000001/worker-b.json", SHA256: strings.Repeat("5e", 32), Size: 2048}, Progress: 120})
	require.NoError(t, err)
	return j
}

// request builds an HTTP API request authenticated as tenant; an empty
// tenant means no authorizer context at all.
func request(method, path, tenant string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "$default",
		RawPath:  path,
		Headers:  map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  "$default",
			Stage:     "$default",
			RequestID: "req-1",
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1"},
		},
	}
	if tenant != "" {
		req.RequestContext.Authorizer = jwt(map[string]string{"sub": "user-1", "tenant": tenant})
	}
	return req
}

func jwt(claims map[string]string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
	return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	}
}

func post(tenant, key, body string) events.APIGatewayV2HTTPRequest {
	req := request(http.MethodPost, "/jobs", tenant)
	req.Headers["content-type"] = "application/json"
	if key != "" {
		req.Headers["idempotency-key"] = key
	}
	req.Body = body
	return req
}

func get(tenant, id string) events.APIGatewayV2HTTPRequest {
	return request(http.MethodGet, "/jobs/"+id, tenant)
}

func del(tenant, id string) events.APIGatewayV2HTTPRequest {
	return request(http.MethodDelete, "/jobs/"+id, tenant)
}

// errorOf checks that resp is an error answer of exactly the documented
// shape and returns it.
func errorOf(t testing.TB, resp events.APIGatewayV2HTTPResponse) intake.ErrorDetail {
	t.Helper()
	require.GreaterOrEqual(t, resp.StatusCode, 400, "an error status: %s", resp.Body)
	require.Equal(t, "application/json", resp.Headers["Content-Type"])
	var shape map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &shape), "body %q", resp.Body)
	require.Len(t, shape, 1, "only \"error\" at the top: %s", resp.Body)
	detail, ok := shape["error"]
	require.True(t, ok, "an \"error\" object: %s", resp.Body)
	for k, v := range detail {
		require.Contains(t, []string{"code", "message", "status"}, k, "field of error: %s", resp.Body)
		s, isString := v.(string)
		require.True(t, isString, "%s is a string: %s", k, resp.Body)
		require.NotEmpty(t, s, "%s is not empty: %s", k, resp.Body)
	}
	require.Contains(t, detail, "code")
	require.Contains(t, detail, "message")
	var e intake.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &e))
	return e.Error
}

// viewOf decodes a job view, refusing fields the type does not have.
func viewOf(t testing.TB, resp events.APIGatewayV2HTTPResponse) intake.JobView {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	var v intake.JobView
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v))
	return v
}

func createdOf(t testing.TB, resp events.APIGatewayV2HTTPResponse) intake.CreatedView {
	t.Helper()
	var v intake.CreatedView
	dec := json.NewDecoder(strings.NewReader(resp.Body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), resp.Body)
	require.Equal(t, v.Location, resp.Headers["Location"])
	return v
}

// fakeResultURL is the URL fakePresigner signs: like S3Presigner's, pinned
// to a version of the object (here named after the accepted SHA-256).
func fakeResultURL(r jobs.Result, ttl time.Duration) string {
	return fmt.Sprintf("https://candidates.example/%s?versionId=v-%.8s&X-Amz-Expires=%d", r.Key, r.SHA256, int(ttl.Seconds()))
}
