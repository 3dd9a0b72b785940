package intake_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
)

// TestHeadIsGetWithoutABody: HEAD is answered wherever GET is, with the
// status and headers GET would get and no body (RFC 9110, 9.3.2); every
// Allow header that lists GET lists HEAD. It writes nothing.
func TestHeadIsGetWithoutABody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		path   string
		tenant string
		status int
	}{
		{"a pending job", "/jobs/" + pendingJob, "t-1", 200},
		{"a completed job, whose GET signs a URL", "/jobs/" + completedJob, "t-1", 200},
		{"a cancelled job", "/jobs/" + cancelledJob, "t-1", 200},
		{"another tenant's job", "/jobs/" + foreignJob, "t-1", 404},
		{"no such job", "/jobs/" + missingJob, "t-1", 404},
		{"an invalid id", "/jobs/job%2042", "t-1", 400},
		{"no authorizer context", "/jobs/" + pendingJob, "", 401},
		{"the collection, which has no GET", "/jobs", "t-1", 405},
		{"no such route", "/nowhere", "t-1", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			seedAll(t, b)
			getResp := b.do(t, request(http.MethodGet, tc.path, tc.tenant))
			before := snapshot(t, b, seededIDs...)
			headResp := b.do(t, request(http.MethodHead, tc.path, tc.tenant))
			require.Equal(t, tc.status, getResp.StatusCode, getResp.Body)
			require.Equal(t, getResp.StatusCode, headResp.StatusCode)
			require.Equal(t, getResp.Headers, headResp.Headers)
			require.NotEmpty(t, getResp.Body)
			require.Empty(t, headResp.Body, "a HEAD answer has no body")
			require.False(t, headResp.IsBase64Encoded)
			require.Zero(t, b.store.writes.Load())
			require.Equal(t, before, snapshot(t, b, seededIDs...))
		})
	}
}

// TestAllowListsHead: the 405 of a route that has GET lists HEAD beside it.
func TestAllowListsHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodOptions} {
		resp := b.do(t, request(method, "/jobs/"+pendingJob, "t-1"))
		require.Equal(t, 405, resp.StatusCode)
		require.Equal(t, "GET, HEAD, DELETE", resp.Headers["Allow"])
		require.Contains(t, errorOf(t, resp).Message, "GET, HEAD, DELETE")
	}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodDelete} {
		resp := b.do(t, request(method, "/jobs", "t-1"))
		require.Equal(t, 405, resp.StatusCode)
		require.Equal(t, "POST", resp.Headers["Allow"], "the collection has no GET, so no HEAD")
	}
}

// TestHeadOfAFailedSigningIsGets500: HEAD of a completed job does what GET
// does, signing included, so a signing failure is the same 500.
func TestHeadOfAFailedSigningIsGets500(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *intake.Config) { c.Presigner = failingPresigner{} })
	seedAll(t, b)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp := b.do(t, request(method, "/jobs/"+completedJob, "t-1"))
		require.Equal(t, 500, resp.StatusCode, method)
	}
}
