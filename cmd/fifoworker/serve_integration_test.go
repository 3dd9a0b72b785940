//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// startServe runs serve with o, on a listener of its own and with its
// output in a buffer, until stop (or the end of the test, which logs the
// output): out, the API's base URL, and stop, which returns serve's error
// and fails the test if serve takes more than a minute to stop.
func startServe(t *testing.T, o serveOptions) (out *testenv.Buffer, base string, stop func() error) {
	t.Helper()
	ln, err := pipeline.ListenLoopback("127.0.0.1:0")
	require.NoError(t, err)
	out = &testenv.Buffer{}
	o.Listener, o.Out, o.Setenv = ln, out, t.Setenv
	o.Root, o.LogDir = "../..", t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, o) }()
	var once sync.Once
	var serveErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-served:
			case <-time.After(time.Minute):
				serveErr = errors.New("serve did not stop within a minute of its context's end")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		t.Logf("serve's output:\n%s", out.String())
	})
	return out, "http://" + ln.Addr().String(), stop
}

// call sends a request to the served API and decodes its JSON answer.
func call(t *testing.T, method, url, token, key, body string, out any) int {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "%s", raw)
	require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
	return resp.StatusCode
}

// `local serve` on the test stack: a job posted over real HTTP with a
// printed token runs through the five functions to completion, and its
// presigned result downloads as the tenant's articles in NDJSON; no token
// is a 401 and another tenant's job a 404. Not parallel: serve sets the
// endpoint variables of this process.
func TestServeRunsAJobPostedOverHTTP(t *testing.T) {
	state := testenv.Stack(t)
	tpl, deployed, stack := deployTest(t, "serve")

	out, base, stop := startServe(t, serveOptions{State: state, Template: tpl, Deployed: deployed, StackName: stack})

	tokenLine := regexp.MustCompile(`(?m)^export (TOKEN_T[12])='([^']+)'   # tenant (t-[12])$`)
	require.Eventually(t, func() bool { return len(tokenLine.FindAllString(out.String(), -1)) == 2 }, 60*time.Second, 50*time.Millisecond,
		"serve prints a token per tenant")
	tokens := map[string]string{}
	for _, m := range tokenLine.FindAllStringSubmatch(out.String(), -1) {
		tokens[m[3]] = m[2]
	}
	require.Contains(t, out.String(), "the jobs API: "+base)
	require.Contains(t, out.String(), "seeded articles to export: t-1 120, t-2 40")
	require.Contains(t, out.String(), `curl -H "Authorization: Bearer $TOKEN_T1" -H 'Idempotency-Key: k1' -H 'Content-Type: application/json' -d '{"spec":{}}' `+base+"/jobs")

	var created intake.CreatedView
	key := awstest.Name(t, "k")
	require.Equal(t, http.StatusAccepted, call(t, http.MethodPost, base+"/jobs", tokens["t-1"], key, `{"spec":{}}`, &created))
	require.Equal(t, "pending", created.Status)
	require.Equal(t, "/jobs/"+created.JobID, created.Location)

	var view intake.JobView
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, call(t, http.MethodGet, base+created.Location, tokens["t-1"], "", "", &view))
		require.NotContains(t, []string{"failed", "cancelled"}, view.Status, "%+v", view)
		return view.Status == "completed"
	}, 90*time.Second, 250*time.Millisecond, "the job completes through relay, worker and projector")
	require.EqualValues(t, 120, view.Progress)
	require.NotNil(t, view.Result)
	require.NotEmpty(t, view.Result.URL)

	// The presigned URL, fetched as a client would: no credentials.
	resp, err := http.Get(view.Result.URL)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var article map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &article), "line %d is JSON: %s", lines+1, sc.Text())
		lines++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 120, lines, "one NDJSON line per article of t-1")
	require.EqualValues(t, view.Result.Size, resp.ContentLength)

	var refused intake.ErrorBody
	require.Equal(t, http.StatusUnauthorized, call(t, http.MethodPost, base+"/jobs", "", key+"-anon", `{"spec":{}}`, &refused))
	require.Equal(t, intake.CodeUnauthorized, refused.Error.Code)
	require.Equal(t, http.StatusNotFound, call(t, http.MethodGet, base+created.Location, tokens["t-2"], "", "", &refused))
	require.Equal(t, intake.CodeJobNotFound, refused.Error.Code)

	require.NoError(t, stop())
	require.Contains(t, out.String(), "stopping: the server")
	_, err = http.Get(base + "/jobs/x") //nolint:bodyclose // the server is gone: there is no response
	require.Error(t, err, "the listener is closed")
}
