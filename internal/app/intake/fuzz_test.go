package intake_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// FuzzHandle sends arbitrary requests — method, path, Content-Type,
// Idempotency-Key, tenant claim and body, base64-encoded or not — to a
// handler on a memory store that holds t-1's completed job-42 and t-2's
// pending job-44. Whatever the input, Handle answers (it returns no error,
// and a panic would be answered 500, so no 500 may appear: the memory store
// never fails, and refuses nothing intake accepted), with a status of the
// API, JSON with the error shape for every 4xx, and a refused request
// writes nothing. A 202 created the job for the claim's tenant and the
// key, and nobody sees or cancels another tenant's job.
func FuzzHandle(f *testing.F) {
	f.Add("POST", "/jobs", "application/json", "export-intent-7", "t-1", []byte(`{"spec":{"page_size":"50"}}`), false)
	f.Add("POST", "/jobs", "application/json; charset=utf-8", "k", "t-2", []byte(`{}`), false)
	f.Add("POST", "/jobs", "application/json", "k", "t-1", []byte(`{"spec":{"page_size":50}}`), false)
	f.Add("POST", "/jobs", "application/json", "k", "t-1", []byte(`{"spec":{"a":"1","a":"2"}}`), false)
	f.Add("POST", "/jobs", "application/json", "k", "t-1", []byte(`{"spec":{}} x`), false)
	f.Add("POST", "/jobs", "application/json", "k", "t-1", []byte(`null`), false)
	f.Add("POST", "/jobs", "application/json", "k", "t-1", []byte(`{"spec":{"page_size":"50"}}`), true)
	f.Add("POST", "/jobs", "text/plain", "k", "t-1", []byte(`{}`), false)
	f.Add("POST", "/jobs", "application/json", "", "t-1", []byte(`{}`), false)
	f.Add("POST", "/jobs", "application/json", "k\x00", "t#1", []byte("{\"spec\":{\"\xff\":\"1\"}}"), false)
	f.Add("GET", "/jobs/job-42", "", "", "t-1", []byte(nil), false)
	f.Add("GET", "/jobs/job-44", "", "", "t-1", []byte(nil), false)
	f.Add("DELETE", "/jobs/job-44", "", "", "t-1", []byte(nil), false)
	f.Add("DELETE", "/jobs/job-42", "", "", "t-1", []byte(nil), false)
	f.Add("GET", "/jobs/../jobs", "", "", "", []byte(nil), false)
	f.Add("PUT", "/jobs/a/b", "", "", "t-1", []byte(nil), false)
	f.Fuzz(func(t *testing.T, method, path, contentType, key, tenant string, body []byte, b64 bool) {
		b := setup(t)
		b.seed(t, "job-42", "t-1", "export-intent-7", nil)
		b.complete(t, "job-42")
		b.seed(t, "job-44", "t-2", "export-intent-7", nil)
		before := snapshot(t, b, "job-42", "job-44")
		writes := b.store.writes.Load()

		req := request(method, path, tenant)
		if contentType != "" {
			req.Headers["content-type"] = contentType
		}
		if key != "" {
			req.Headers["idempotency-key"] = key
		}
		req.Body = string(body)
		if b64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}

		resp := b.do(t, req)

		allowed := []int{200, 202, 400, 401, 404, 405, 409, 413, 415}
		require.Contains(t, allowed, resp.StatusCode, "status; body %s", resp.Body)
		require.Equal(t, "application/json", resp.Headers["Content-Type"])
		require.True(t, json.Valid([]byte(resp.Body)), "JSON body: %q", resp.Body)
		if resp.StatusCode >= 400 {
			errorOf(t, resp)
		} else {
			var top map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(resp.Body), &top))
			require.NotContains(t, top, "error")
		}
		if resp.StatusCode >= 400 && resp.StatusCode != http.StatusConflict {
			require.Equal(t, writes, b.store.writes.Load(), "a refused request reaches no write")
		}
		after := snapshot(t, b, "job-42", "job-44")
		if resp.StatusCode != http.StatusOK || method != http.MethodDelete {
			require.Equal(t, before, after, "only a successful DELETE changes a job")
		}
		if tenant != "t-2" {
			require.Equal(t, before["job-44"], after["job-44"], "t-2's job is t-2's alone")
			require.NotContains(t, resp.Body, `"job_id":"job-44"`)
		}
		if resp.StatusCode == http.StatusAccepted {
			v := createdOf(t, resp)
			j, err := b.memory.Get(t.Context(), v.JobID)
			require.NoError(t, err)
			require.Equal(t, tenant, j.Tenant)
			require.Equal(t, key, j.IntentID)
			require.Equal(t, jobs.DeriveJobID(tenant, key), v.JobID)
		}
		if resp.StatusCode == http.StatusMethodNotAllowed {
			require.True(t, slices.Contains([]string{"POST", "GET, DELETE"}, resp.Headers["Allow"]))
		}
	})
}
