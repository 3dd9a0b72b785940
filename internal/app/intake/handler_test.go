package intake_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The jobs every row of TestRequests starts with.
const (
	pendingJob   = "job-42" // t-1's, intent export-intent-7, spec page_size=50
	completedJob = "job-43" // t-1's
	cancelledJob = "job-45" // t-1's
	foreignJob   = "job-44" // t-2's, pending
	missingJob   = "job-404"
)

var seededIDs = []string{pendingJob, completedJob, cancelledJob, foreignJob}

func seedAll(t testing.TB, b *testBundle) {
	t.Helper()
	b.seed(t, pendingJob, "t-1", "export-intent-7", map[string]string{"page_size": "50"})
	b.seed(t, completedJob, "t-1", "export-intent-8", nil)
	b.complete(t, completedJob)
	b.seed(t, cancelledJob, "t-1", "export-intent-9", nil)
	_, err := b.memory.Cancel(context.Background(), jobs.CancelRequest{JobID: cancelledJob})
	require.NoError(t, err)
	b.seed(t, foreignJob, "t-2", "export-intent-7", nil)
}

// snapshot reads the jobs of ids.
func snapshot(t testing.TB, b *testBundle, ids ...string) map[string]jobs.Job {
	t.Helper()
	m := map[string]jobs.Job{}
	for _, id := range ids {
		j, err := b.memory.Get(context.Background(), id)
		require.NoError(t, err)
		m[id] = j
	}
	return m
}

// with copies req (its headers too) and edits the copy.
func with(req events.APIGatewayV2HTTPRequest, edit func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	h := make(map[string]string, len(req.Headers))
	for k, v := range req.Headers {
		h[k] = v
	}
	req.Headers = h
	edit(&req)
	return req
}

// withHeader copies req with one header set (or removed, for "").
func withHeader(req events.APIGatewayV2HTTPRequest, name, value string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{}
	for k, v := range req.Headers {
		h[k] = v
	}
	if value == "" {
		delete(h, name)
	} else {
		h[name] = value
	}
	req.Headers = h
	return req
}

func specBody(spec map[string]string) string {
	raw, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		panic(err)
	}
	return string(raw)
}

func manyKeys(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("k%02d", i)] = "v"
	}
	return m
}

// TestRequests runs every route and every bad input through the handler:
// its status, its error code and headers, and what reached the store. A
// refused request reaches the store with no write, and no job changes.
func TestRequests(t *testing.T) {
	t.Parallel()
	const key = "intent-new"
	okBody := `{"spec":{"page_size":"50"}}`
	exactly16KiB := `{"spec":{"page_size":"50"}}` + strings.Repeat(" ", intake.MaxBodyBytes-len(okBody))

	type row struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
		code   string            // error code, for a 4xx or 5xx
		header map[string]string // headers the answer must carry
		writes int32             // writes reaching the store
		// changed is the seeded job the request may change; every other
		// stays as it was.
		changed string
		check   func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse)
	}
	created := func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
		v := createdOf(t, resp)
		require.Equal(t, jobs.DeriveJobID("t-1", key), v.JobID)
		require.Equal(t, "pending", v.Status)
		require.Equal(t, "/jobs/"+v.JobID, v.Location)
		j, err := b.memory.Get(context.Background(), v.JobID)
		require.NoError(t, err)
		require.Equal(t, "t-1", j.Tenant, "the tenant comes from the token")
		require.Equal(t, key, j.IntentID)
	}
	createdWith := func(spec map[string]string) func(*testing.T, *testBundle, events.APIGatewayV2HTTPResponse) {
		return func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
			created(t, b, resp)
			j, err := b.memory.Get(context.Background(), createdOf(t, resp).JobID)
			require.NoError(t, err)
			if len(spec) == 0 {
				require.Empty(t, j.Spec)
			} else {
				require.Equal(t, spec, j.Spec)
			}
		}
	}
	unauthorized := func(name string, req events.APIGatewayV2HTTPRequest) row {
		return row{name: name, req: req, status: 401, code: intake.CodeUnauthorized, header: map[string]string{"WWW-Authenticate": "Bearer"}}
	}
	badBody := func(name, body string) row {
		return row{name: name, req: post("t-1", key, body), status: 400, code: intake.CodeInvalidBody}
	}
	badSpec := func(name string, spec map[string]string) row {
		return row{name: name, req: post("t-1", key, specBody(spec)), status: 400, code: intake.CodeInvalidSpec}
	}
	withClaims := func(req events.APIGatewayV2HTTPRequest, claims map[string]string) events.APIGatewayV2HTTPRequest {
		req.RequestContext.Authorizer = jwt(claims)
		return req
	}

	rows := []row{
		// The routes.
		{name: "POST creates", req: post("t-1", key, okBody), status: 202, writes: 1,
			header: map[string]string{"Location": "/jobs/" + jobs.DeriveJobID("t-1", key)}, check: createdWith(map[string]string{"page_size": "50"})},
		{name: "POST with the same key and spec answers the same job", req: post("t-1", "export-intent-7", okBody), status: 200, writes: 1,
			header: map[string]string{"Location": "/jobs/" + pendingJob},
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				require.Equal(t, intake.CreatedView{JobID: pendingJob, Status: "pending", Location: "/jobs/" + pendingJob}, createdOf(t, resp))
			}},
		{name: "POST with an empty object", req: post("t-1", key, `{}`), status: 202, writes: 1, check: createdWith(nil)},
		{name: "POST with an empty spec", req: post("t-1", key, `{"spec":{}}`), status: 202, writes: 1, check: createdWith(nil)},
		{name: "POST with charset=utf-8", req: withHeader(post("t-1", key, okBody), "content-type", "application/json; charset=UTF-8"),
			status: 202, writes: 1, check: created},
		{name: "POST with mixed-case header names", req: with(post("t-1", "", okBody), func(r *events.APIGatewayV2HTTPRequest) {
			delete(r.Headers, "content-type")
			r.Headers["Content-Type"] = "Application/JSON"
			r.Headers["Idempotency-Key"] = key
		}), status: 202, writes: 1, check: created},
		{name: "POST with a base64 body", req: with(post("t-1", key, ""), func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["content-type"] = "application/json"
			r.Headers["idempotency-key"] = key
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(okBody)), true
		}), status: 202, writes: 1, check: createdWith(map[string]string{"page_size": "50"})},
		{name: "POST with a body of exactly 16 KiB", req: post("t-1", key, exactly16KiB), status: 202, writes: 1, check: created},
		{name: "POST with 32 keys, a 64-byte key and a 1024-byte value", req: post("t-1", key, specBody(func() map[string]string {
			m := manyKeys(30)
			m[strings.Repeat("k", 64)] = "v"
			m["page_size"] = strings.Repeat("9", 1024)
			return m
		}())), status: 202, writes: 1, check: created},
		{name: "POST with a 512-byte key", req: post("t-1", strings.Repeat("k", 512), okBody), status: 202, writes: 1},
		{name: "POST with a unicode key", req: post("t-1", "exportação 7", okBody), status: 202, writes: 1},
		{name: "GET a pending job", req: get("t-1", pendingJob), status: 200,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				v := viewOf(t, resp)
				require.Equal(t, intake.JobView{JobID: pendingJob, Status: "pending", CreatedAt: "2026-11-04T09:00:00.000Z", UpdatedAt: "2026-11-04T09:00:00.000Z"}, v)
				require.Empty(t, b.presigner.Calls())
			}},
		{name: "GET a completed job", req: get("t-1", completedJob), status: 200,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				v := viewOf(t, resp)
				require.Equal(t, "completed", v.Status)
				require.NotNil(t, v.Result)
				require.Equal(t, "candidates/job-43/g0000000001/worker-b.json", v.Result.Key)
				require.NotEmpty(t, v.Result.URL)
			}},
		{name: "GET a cancelled job", req: get("t-1", cancelledJob), status: 200,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				v := viewOf(t, resp)
				require.Equal(t, "cancelled", v.Status)
				require.Equal(t, &intake.FailureView{Code: jobs.CodeCancelled}, v.Failure)
				require.Nil(t, v.Result)
			}},
		{name: "DELETE a pending job", req: del("t-1", pendingJob), status: 200, writes: 1, changed: pendingJob,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				v := viewOf(t, resp)
				require.Equal(t, "cancelled", v.Status)
				require.Equal(t, jobs.CodeCancelled, v.Failure.Code)
				j, err := b.memory.Get(context.Background(), pendingJob)
				require.NoError(t, err)
				require.Equal(t, jobs.StatusCancelled, j.Status)
				require.Equal(t, j.Version, v.Version)
			}},

		// Identity: the JWT authorizer's tenant claim, nothing else.
		unauthorized("POST without an authorizer context", post("", key, okBody)),
		unauthorized("GET without an authorizer context", get("", pendingJob)),
		unauthorized("DELETE without an authorizer context", del("", pendingJob)),
		unauthorized("unknown route without an authorizer context", request(http.MethodGet, "/nowhere", "")),
		unauthorized("an authorizer context without a JWT", with(get("", pendingJob), func(r *events.APIGatewayV2HTTPRequest) {
			r.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}
		})),
		unauthorized("a JWT without claims", withClaims(get("t-1", pendingJob), nil)),
		unauthorized("a JWT without a tenant claim", withClaims(get("t-1", pendingJob), map[string]string{"sub": "user-1"})),
		unauthorized("an empty tenant claim", withClaims(get("t-1", pendingJob), map[string]string{"tenant": ""})),
		unauthorized("a tenant with '#'", withClaims(get("t-1", pendingJob), map[string]string{"tenant": "t#1"})),
		unauthorized("a tenant of 257 bytes", withClaims(get("t-1", pendingJob), map[string]string{"tenant": strings.Repeat("t", 257)})),
		unauthorized("a tenant with a control character", withClaims(get("t-1", pendingJob), map[string]string{"tenant": "t-1\n"})),
		unauthorized("a tenant that is not UTF-8", withClaims(get("t-1", pendingJob), map[string]string{"tenant": "t-\xff"})),
		unauthorized("a tenant in another claim", withClaims(get("t-1", pendingJob), map[string]string{"custom:tenant": "t-1"})),
		unauthorized("an IAM authorizer context", with(get("", pendingJob), func(r *events.APIGatewayV2HTTPRequest) {
			r.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserID: "t-1", AccountID: "123456789012"},
			}
		})),
		unauthorized("a Lambda authorizer context", with(get("", pendingJob), func(r *events.APIGatewayV2HTTPRequest) {
			r.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"tenant": "t-1"}}
		})),
		unauthorized("a tenant header without a JWT", with(get("", pendingJob), func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["x-tenant"] = "t-1"
			r.Headers["tenant"] = "t-1"
			r.Headers["x-fifoworker-tenant"] = "t-1"
		})),
		{name: "a tenant header does not override the token", req: withHeader(get("t-2", pendingJob), "x-tenant", "t-1"),
			status: 404, code: intake.CodeJobNotFound},
		{name: "a tenant field in the body is refused", req: post("t-2", key, `{"spec":{},"tenant":"t-1"}`),
			status: 400, code: intake.CodeInvalidBody},

		// Routes and methods.
		{name: "unknown path", req: request(http.MethodGet, "/nowhere", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "root", req: request(http.MethodGet, "/", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "empty path", req: request(http.MethodGet, "", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "/jobs/ with no id", req: request(http.MethodGet, "/jobs/", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "/jobs/{id}/more", req: request(http.MethodGet, "/jobs/job-42/result", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "/jobs/ with a trailing slash", req: request(http.MethodPost, "/jobs/", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "paths are case-sensitive", req: request(http.MethodGet, "/JOBS/job-42", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "a stage prefix is not stripped", req: request(http.MethodGet, "/prod/jobs/job-42", "t-1"), status: 404, code: intake.CodeRouteNotFound},
		{name: "GET /jobs", req: request(http.MethodGet, "/jobs", "t-1"), status: 405, code: intake.CodeMethodNotAllowed,
			header: map[string]string{"Allow": "POST"}},
		{name: "PUT /jobs", req: with(post("t-1", key, okBody), func(r *events.APIGatewayV2HTTPRequest) {
			r.RequestContext.HTTP.Method = http.MethodPut
		}), status: 405, code: intake.CodeMethodNotAllowed,
			header: map[string]string{"Allow": "POST"}},
		{name: "POST /jobs/{id}", req: request(http.MethodPost, "/jobs/job-42", "t-1"), status: 405, code: intake.CodeMethodNotAllowed,
			header: map[string]string{"Allow": "GET, HEAD, DELETE"}},
		{name: "PATCH /jobs/{id}", req: request(http.MethodPatch, "/jobs/job-42", "t-1"), status: 405, code: intake.CodeMethodNotAllowed,
			header: map[string]string{"Allow": "GET, HEAD, DELETE"}},
		{name: "lower-case method", req: request("get", "/jobs/job-42", "t-1"), status: 405, code: intake.CodeMethodNotAllowed},

		// POST: media type.
		{name: "no Content-Type", req: withHeader(post("t-1", key, okBody), "content-type", ""), status: 415, code: intake.CodeUnsupportedMediaType},
		{name: "text/plain", req: withHeader(post("t-1", key, okBody), "content-type", "text/plain"), status: 415, code: intake.CodeUnsupportedMediaType},
		{name: "a JSON subtype", req: withHeader(post("t-1", key, okBody), "content-type", "application/merge-patch+json"),
			status: 415, code: intake.CodeUnsupportedMediaType},
		{name: "charset latin1", req: withHeader(post("t-1", key, okBody), "content-type", "application/json; charset=iso-8859-1"),
			status: 415, code: intake.CodeUnsupportedMediaType},
		{name: "a malformed Content-Type", req: withHeader(post("t-1", key, okBody), "content-type", "application/json; charset"),
			status: 415, code: intake.CodeUnsupportedMediaType},

		// POST: size and encoding.
		{name: "a body of 16 KiB + 1", req: post("t-1", key, exactly16KiB+" "), status: 413, code: intake.CodePayloadTooLarge},
		{name: "a base64 body of 16 KiB + 1 once decoded", req: with(post("t-1", key, ""), func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["content-type"], r.Headers["idempotency-key"] = "application/json", key
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(exactly16KiB+" ")), true
		}), status: 413, code: intake.CodePayloadTooLarge},
		{name: "a 1 MiB body", req: post("t-1", key, strings.Repeat("{", 1<<20)), status: 413, code: intake.CodePayloadTooLarge},
		{name: "a body marked base64 that is not", req: with(post("t-1", key, okBody), func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers["content-type"], r.Headers["idempotency-key"] = "application/json", key
			r.Body, r.IsBase64Encoded = okBody, true
		}), status: 400, code: intake.CodeInvalidBody},

		// POST: the Idempotency-Key.
		{name: "no Idempotency-Key", req: post("t-1", "", okBody), status: 400, code: intake.CodeMissingIdempotencyKey},
		{name: "an empty Idempotency-Key", req: withHeader(post("t-1", "", okBody), "idempotency-key", ""), status: 400, code: intake.CodeMissingIdempotencyKey},
		{name: "an Idempotency-Key of 513 bytes", req: post("t-1", strings.Repeat("k", 513), okBody), status: 400, code: intake.CodeInvalidIdempotencyKey},
		{name: "an Idempotency-Key with a control character", req: post("t-1", "intent\x007", okBody), status: 400, code: intake.CodeInvalidIdempotencyKey},
		{name: "an Idempotency-Key with a tab", req: post("t-1", "intent\t7", okBody), status: 400, code: intake.CodeInvalidIdempotencyKey},
		{name: "an Idempotency-Key that is not UTF-8", req: post("t-1", "intent-\xff", okBody), status: 400, code: intake.CodeInvalidIdempotencyKey},
		{name: "an Idempotency-Key with a line separator", req: post("t-1", "intent\u20287", okBody), status: 400, code: intake.CodeInvalidIdempotencyKey},

		// POST: the body.
		badBody("an empty body", ""),
		badBody("whitespace", "  \n"),
		badBody("invalid JSON", `{"spec":`),
		badBody("a syntax error", `{"spec" {}}`),
		badBody("a trailing comma", `{"spec":{},}`),
		badBody("a spec value holding NUL", `{"spec":{"page_size":"5\u0000"}}`),
		badBody("a spec key holding NUL", `{"spec":{"a\u0000":"5"}}`),
		badBody("null", `null`),
		badBody("an array", `[]`),
		badBody("a string", `"spec"`),
		badBody("a number", `7`),
		badBody("trailing data", `{"spec":{}} {}`),
		badBody("trailing garbage", `{"spec":{}}x`),
		badBody("an unknown field", `{"spec":{},"priority":"high"}`),
		badBody("a field name in another case", `{"Spec":{"page_size":"50"}}`),
		badBody("spec twice", `{"spec":{"page_size":"50"},"spec":{"page_size":"10"}}`),
		badBody("spec is a string", `{"spec":"page_size=50"}`),
		badBody("spec is an array", `{"spec":["page_size"]}`),
		badBody("spec is null", `{"spec":null}`),
		badBody("a number value", `{"spec":{"page_size":50}}`),
		badBody("a boolean value", `{"spec":{"page_size":true}}`),
		badBody("a null value", `{"spec":{"page_size":null}}`),
		badBody("an object value", `{"spec":{"page_size":{"n":"50"}}}`),
		badBody("an array value", `{"spec":{"page_size":["50"]}}`),
		badBody("a key twice", `{"spec":{"page_size":"50","page_size":"10"}}`),
		badBody("a body that is not UTF-8", "{\"spec\":{\"page_size\":\"\xff\"}}"),

		// POST: the spec's limits.
		badSpec("33 keys", manyKeys(33)),
		badSpec("an upper-case key", map[string]string{"Page_size": "50"}),
		badSpec("a key with a dash", map[string]string{"page-size": "50"}),
		badSpec("an empty key", map[string]string{"": "50"}),
		badSpec("a key of 65 bytes", map[string]string{strings.Repeat("k", 65): "50"}),
		badSpec("a non-ASCII key", map[string]string{"größe": "50"}),
		badSpec("a value of 1025 bytes", map[string]string{"page_size": strings.Repeat("9", 1025)}),

		// POST: the intent's other spec.
		{name: "the same key with another spec", req: post("t-1", "export-intent-7", `{"spec":{"page_size":"10"}}`), writes: 1,
			status: 409, code: intake.CodeIntentConflict},
		{name: "the same key with an empty spec", req: post("t-1", "export-intent-7", `{}`), writes: 1,
			status: 409, code: intake.CodeIntentConflict},

		// GET and DELETE: the id and the owner.
		{name: "GET an id with a dot", req: get("t-1", "job.42"), status: 400, code: intake.CodeInvalidJobID},
		{name: "GET an id of 129 bytes", req: get("t-1", strings.Repeat("j", 129)), status: 400, code: intake.CodeInvalidJobID},
		{name: "GET an encoded id", req: get("t-1", "job%2D42"), status: 400, code: intake.CodeInvalidJobID},
		{name: "DELETE an id with a space", req: del("t-1", "job 42"), status: 400, code: intake.CodeInvalidJobID},
		{name: "GET a missing job", req: get("t-1", missingJob), status: 404, code: intake.CodeJobNotFound},
		{name: "GET another tenant's job", req: get("t-1", foreignJob), status: 404, code: intake.CodeJobNotFound},
		{name: "DELETE a missing job", req: del("t-1", missingJob), status: 404, code: intake.CodeJobNotFound},
		{name: "DELETE another tenant's job", req: del("t-1", foreignJob), status: 404, code: intake.CodeJobNotFound},
		{name: "DELETE a completed job", req: del("t-1", completedJob), status: 409, code: intake.CodeJobFinal,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				require.Equal(t, "completed", errorOf(t, resp).Status)
			}},
		{name: "DELETE a cancelled job", req: del("t-1", cancelledJob), status: 409, code: intake.CodeJobFinal,
			check: func(t *testing.T, b *testBundle, resp events.APIGatewayV2HTTPResponse) {
				require.Equal(t, "cancelled", errorOf(t, resp).Status)
			}},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			seedAll(t, b)
			before := snapshot(t, b, seededIDs...)

			resp := b.do(t, tc.req)

			require.Equal(t, tc.status, resp.StatusCode, "body: %s", resp.Body)
			require.Equal(t, "application/json", resp.Headers["Content-Type"])
			require.Equal(t, "no-store", resp.Headers["Cache-Control"])
			for k, v := range tc.header {
				require.Equal(t, v, resp.Headers[k], "header %s", k)
			}
			if tc.status >= 400 {
				e := errorOf(t, resp)
				require.Equal(t, tc.code, e.Code)
				require.Equal(t, tc.status == 409 && tc.code == intake.CodeJobFinal, e.Status != "", "status only with job_final")
			} else {
				require.NotContains(t, resp.Body, `"error"`, "a success has no error field")
			}
			if _, ok := tc.header["Allow"]; !ok {
				require.Equal(t, tc.status == 405, resp.Headers["Allow"] != "", "Allow exactly with 405")
			}
			require.Equal(t, tc.writes, b.store.writes.Load(), "writes that reached the store")
			after := snapshot(t, b, seededIDs...)
			for _, id := range seededIDs {
				if id != tc.changed {
					require.Equal(t, before[id], after[id], "%s is unchanged", id)
				}
			}
			if tc.status >= 400 {
				// No job for the key either (Create, when reached, refused).
				_, err := b.memory.Get(context.Background(), jobs.DeriveJobID("t-1", key))
				require.ErrorIs(t, err, jobs.ErrNotFound)
			}
			if tc.check != nil {
				tc.check(t, b, resp)
			}
		})
	}
}

// TestTenantIsolation: tenant B can neither see nor cancel tenant A's job,
// and the answers are byte for byte those for a job that does not exist.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, post("tenant-a", "export-intent-7", `{"spec":{"page_size":"50"}}`))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	id := createdOf(t, resp).JobID
	before, err := b.memory.Get(t.Context(), id)
	require.NoError(t, err)
	writes := b.store.writes.Load()

	for _, mk := range []func(tenant, id string) events.APIGatewayV2HTTPRequest{get, del} {
		foreign := b.do(t, mk("tenant-b", id))
		// A missing id of the same length, so the messages compare.
		missing := b.do(t, mk("tenant-b", "job-"+strings.Repeat("0", len(id)-4)))
		require.Equal(t, 404, foreign.StatusCode)
		require.Equal(t, intake.CodeJobNotFound, errorOf(t, foreign).Code)
		require.Equal(t, strings.ReplaceAll(missing.Body, "job-"+strings.Repeat("0", len(id)-4), id), foreign.Body,
			"another tenant's job is answered like a missing one")
		require.Equal(t, missing.Headers, foreign.Headers)
	}
	require.Equal(t, writes, b.store.writes.Load(), "B's DELETE wrote nothing")
	after, err := b.memory.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, before, after, "A's job is unchanged")

	// B using A's key gets a job of its own.
	resp = b.do(t, post("tenant-b", "export-intent-7", `{"spec":{"page_size":"10"}}`))
	require.Equal(t, 202, resp.StatusCode, resp.Body)
	require.NotEqual(t, id, createdOf(t, resp).JobID)

	// A still sees and cancels its own.
	require.Equal(t, "pending", viewOf(t, b.do(t, get("tenant-a", id))).Status)
	require.Equal(t, "cancelled", viewOf(t, b.do(t, del("tenant-a", id))).Status)
}

// TestIdempotency: a retried POST answers the job its key created (200),
// however its spec's keys are ordered; another spec is a 409; neither
// creates a second job or command.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"50","format":"csv"}}`))
	require.Equal(t, 202, first.StatusCode, first.Body)
	created := createdOf(t, first)
	j, err := b.memory.Get(t.Context(), created.JobID)
	require.NoError(t, err)

	b.clock.Advance(time.Minute)
	again := b.do(t, post("t-1", "export-intent-7", `{"spec":{"format":"csv","page_size":"50"}}`))
	require.Equal(t, 200, again.StatusCode, again.Body)
	require.Equal(t, created, createdOf(t, again))
	require.Equal(t, first.Headers["Location"], again.Headers["Location"])

	conflict := b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"10","format":"csv"}}`))
	require.Equal(t, 409, conflict.StatusCode)
	require.Equal(t, intake.CodeIntentConflict, errorOf(t, conflict).Code)

	after, err := b.memory.Get(t.Context(), created.JobID)
	require.NoError(t, err)
	require.Equal(t, j, after, "one job, one command: nothing rewritten")

	// A retry after the job has moved on still answers it, with its status.
	b.complete(t, created.JobID)
	later := b.do(t, post("t-1", "export-intent-7", `{"spec":{"page_size":"50","format":"csv"}}`))
	require.Equal(t, 200, later.StatusCode)
	require.Equal(t, intake.CreatedView{JobID: created.JobID, Status: "completed", Location: created.Location}, createdOf(t, later))
}

// TestCompletedJobHasPresignedURL: a completed job's view has its result
// and a URL signed for exactly the result's key with the configured TTL.
func TestCompletedJobHasPresignedURL(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{0, 90 * time.Second, time.Hour} {
		t.Run(fmt.Sprint(ttl), func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *intake.Config) { c.ResultURLTTL = ttl })
			want := ttl
			if want == 0 {
				want = intake.DefaultResultURLTTL
			}
			b.seed(t, "job-42", "t-1", "export-intent-7", nil)
			done := b.complete(t, "job-42")
			b.clock.Advance(time.Minute)

			v := viewOf(t, b.do(t, get("t-1", "job-42")))
			require.Equal(t, []presignCall{{Key: done.Result.Key, TTL: want}}, b.presigner.Calls())
			require.Equal(t, intake.JobView{
				JobID: "job-42", Status: "completed", Generation: 1, Version: 2, Progress: 120,
				CreatedAt: "2026-11-04T09:00:00.000Z", UpdatedAt: "2026-11-04T09:00:01.000Z",
				Result: &intake.ResultView{
					Key: done.Result.Key, Size: 2048, SHA256: strings.Repeat("5e", 32),
					URL:          fakeResultURL(done.Result, want),
					URLExpiresAt: jobsTime(b.clock.Now().Add(want)),
				},
			}, v)
		})
	}
}

func jobsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// TestTenantClaimIsConfigurable: with Cognito's "custom:tenant", that
// claim and no other names the tenant.
func TestTenantClaimIsConfigurable(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *intake.Config) { c.TenantClaim = "custom:tenant" })
	b.seed(t, "job-42", "t-1", "export-intent-7", nil)

	req := get("", "job-42")
	req.RequestContext.Authorizer = jwt(map[string]string{"custom:tenant": "t-1", "tenant": "t-2"})
	require.Equal(t, "job-42", viewOf(t, b.do(t, req)).JobID)

	req.RequestContext.Authorizer = jwt(map[string]string{"tenant": "t-1"})
	resp := b.do(t, req)
	require.Equal(t, 401, resp.StatusCode)
	require.Contains(t, errorOf(t, resp).Message, `"custom:tenant"`)
}

// failingStore fails every call the way an unreachable table does, or
// panics.
type failingStore struct {
	jobs.Store
	err   error
	panic bool
}

func (s *failingStore) fail() error {
	if s.panic {
		panic("store exploded")
	}
	return s.err
}

func (s *failingStore) Create(context.Context, jobs.CreateRequest) (jobs.CreateResult, error) {
	return jobs.CreateResult{}, s.fail()
}
func (s *failingStore) Get(context.Context, string) (jobs.Job, error) { return jobs.Job{}, s.fail() }

type failingPresigner struct{}

func (failingPresigner) PresignGet(context.Context, jobs.Result, time.Duration) (string, error) {
	return "", errors.New("no credentials: secret detail")
}

// TestInternalErrors: a store or signing failure, or a panic, is a 500 in
// the error shape with a generic message; the detail is in the log only, and
// Handle returns no error.
func TestInternalErrors(t *testing.T) {
	t.Parallel()
	detail := errors.New("dial tcp 10.0.0.1:443: secret detail")
	cases := []struct {
		name string
		edit func(*intake.Config)
		req  events.APIGatewayV2HTTPRequest
		log  string
	}{
		{"create fails", func(c *intake.Config) { c.Store = &failingStore{err: detail} }, post("t-1", "k", `{}`), "secret detail"},
		{"get fails", func(c *intake.Config) { c.Store = &failingStore{err: detail} }, get("t-1", "job-42"), "secret detail"},
		{"delete's read fails", func(c *intake.Config) { c.Store = &failingStore{err: detail} }, del("t-1", "job-42"), "secret detail"},
		{"the store rejects what intake accepted", func(c *intake.Config) {
			c.Store = &failingStore{err: fmt.Errorf("jobs: %w: secret detail", jobs.ErrInvalid)}
		}, post("t-1", "k", `{}`), "secret detail"},
		{"the store panics", func(c *intake.Config) { c.Store = &failingStore{panic: true} }, get("t-1", "job-42"), "store exploded"},
		{"signing fails", func(c *intake.Config) { c.Presigner = failingPresigner{} }, get("t-1", "job-42"), "secret detail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.edit)
			b.seed(t, "job-42", "t-1", "export-intent-7", nil)
			b.complete(t, "job-42")
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-req-7"})

			resp, err := b.handler.Handle(ctx, tc.req)
			require.NoError(t, err)
			require.Equal(t, 500, resp.StatusCode)
			e := errorOf(t, resp)
			require.Equal(t, intake.CodeInternal, e.Code)
			require.NotContains(t, resp.Body, "secret")
			require.NotContains(t, resp.Body, "goroutine")
			require.NotContains(t, resp.Body, ".go:")

			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(b.logs.String())), &line), b.logs.String())
			require.Equal(t, "ERROR", line["level"])
			require.Equal(t, "lambda-req-7", line["aws_request_id"])
			require.Equal(t, "t-1", line["tenant"])
			require.Contains(t, line["error"], tc.log)
		})
	}
}

// TestLogLine: one line per request with the house fields.
func TestLogLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, "job-42", "t-1", "export-intent-7", nil)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "lambda-req-7"})
	_, err := b.handler.Handle(ctx, get("t-1", "job-42"))
	require.NoError(t, err)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.logs.String()), &line))
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "request", line["msg"])
	require.Equal(t, "lambda-req-7", line["aws_request_id"])
	require.Equal(t, "req-1", line["api_request_id"])
	require.Equal(t, "t-1", line["tenant"])
	require.Equal(t, "job-42", line["job_id"])
	require.Equal(t, float64(200), line["status"])
	require.Equal(t, "GET", line["method"])
	require.Equal(t, "/jobs/job-42", line["path"])
}

// TestANilLoggerLogsNothing: a nil Logger discards, as every other
// component's does; it does not write to slog.Default(). Not parallel: it
// replaces the process's default logger while it runs (Go resumes the
// package's parallel tests only after the sequential ones have ended).
func TestANilLoggerLogsNothing(t *testing.T) {
	var def testenv.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&def, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	b := setup(t, func(c *intake.Config) { c.Logger = nil })
	b.seed(t, "job-42", "t-1", "export-intent-7", nil)
	require.Equal(t, http.StatusOK, b.do(t, get("t-1", "job-42")).StatusCode)
	require.Empty(t, def.String(), "a nil Logger wrote to slog.Default()")
	require.Empty(t, b.logs.String())
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	store, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(t, err)
	ok := intake.Config{Store: store, Presigner: &fakePresigner{}}
	require.NoError(t, ok.Validate(), "zero values are defaults")
	_, err = intake.New(ok)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		edit  func(*intake.Config)
		field string
	}{
		"no store":            {func(c *intake.Config) { c.Store = nil }, "Store"},
		"no presigner":        {func(c *intake.Config) { c.Presigner = nil }, "Presigner"},
		"a negative TTL":      {func(c *intake.Config) { c.ResultURLTTL = -time.Second }, "ResultURLTTL"},
		"a TTL under 1s":      {func(c *intake.Config) { c.ResultURLTTL = intake.MinResultURLTTL - time.Nanosecond }, "ResultURLTTL"},
		"a TTL over an hour":  {func(c *intake.Config) { c.ResultURLTTL = intake.MaxResultURLTTL + time.Nanosecond }, "ResultURLTTL"},
		"a control character": {func(c *intake.Config) { c.TenantClaim = "ten\nant" }, "TenantClaim"},
	} {
		c := ok
		tc.edit(&c)
		require.ErrorIs(t, c.Validate(), intake.ErrInvalidConfig, name)
		require.ErrorContains(t, c.Validate(), tc.field, name)
		h, err := intake.New(c)
		require.ErrorIs(t, err, intake.ErrInvalidConfig, name)
		require.Nil(t, h, name)
	}
	for _, ttl := range []time.Duration{intake.MinResultURLTTL, intake.MaxResultURLTTL} {
		c := ok
		c.ResultURLTTL = ttl
		_, err := intake.New(c)
		require.NoError(t, err, "a TTL of %v", ttl)
	}
}

// staleReadStore answers Get with the job as it was before someone else
// cancelled it: the read of a DELETE that races another cancel.
type staleReadStore struct {
	jobs.Store
	before jobs.Job
}

func (s *staleReadStore) Get(context.Context, string) (jobs.Job, error) { return s.before, nil }

// TestDeleteOfAJobCancelledAfterItsRead: a job cancelled by someone else
// between DELETE's read and its cancel answers 200 with the cancelled job,
// as internal/app/intake's doc says (the store's cancel is not strict), not 409.
func TestDeleteOfAJobCancelledAfterItsRead(t *testing.T) {
	t.Parallel()
	stale := &staleReadStore{}
	b := setup(t, func(c *intake.Config) { stale.Store = c.Store; c.Store = stale })
	b.seed(t, pendingJob, "t-1", "export-intent-7", nil)
	before, err := b.memory.Get(context.Background(), pendingJob)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, before.Status)
	stale.before = before
	_, err = b.memory.Cancel(context.Background(), jobs.CancelRequest{JobID: pendingJob, Reason: "someone else"})
	require.NoError(t, err)

	resp, err := b.handler.Handle(context.Background(), del("t-1", pendingJob))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &view))
	require.Equal(t, pendingJob, view["job_id"])
	require.Equal(t, string(jobs.StatusCancelled), view["status"])
}
