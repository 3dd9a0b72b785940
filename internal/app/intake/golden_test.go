package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

var update = flag.Bool("update", false, "rewrite the golden responses in events/")

// readRequest reads a golden request: every field of the file is one
// aws-lambda-go knows (no typo passes silently), and encoding the decoded
// request again loses nothing and invents nothing but empty fields (the
// library always writes a few, such as "authentication", which API Gateway
// sends only with mutual TLS).
func readRequest(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "events", name))
	require.NoError(t, err)
	var req events.APIGatewayV2HTTPRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&req), name)

	again, err := json.Marshal(req)
	require.NoError(t, err)
	var want, got any
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NoError(t, json.Unmarshal(again, &got))
	sameFacts(t, name, want, got)
	return req
}

// sameFacts requires got to hold every non-empty value of want, and
// nothing else but empty values.
func sameFacts(t *testing.T, path string, want, got any) {
	t.Helper()
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if !wok || !gok {
		require.Equal(t, want, got, path)
		return
	}
	for k, w := range wm {
		g, ok := gm[k]
		if !ok {
			require.True(t, empty(w), "%s.%s was lost in the round trip", path, k)
			continue
		}
		sameFacts(t, path+"."+k, w, g)
	}
	for k, g := range gm {
		if _, ok := wm[k]; !ok {
			require.True(t, empty(g), "%s.%s was added in the round trip: %v", path, k, g)
		}
	}
}

func empty(v any) bool {
	if m, ok := v.(map[string]any); ok {
		for _, e := range m {
			if !empty(e) {
				return false
			}
		}
		return true
	}
	return v == nil || reflect.ValueOf(v).IsZero() || reflect.ValueOf(v).Kind() == reflect.Slice && reflect.ValueOf(v).Len() == 0
}

// goldenResponse compares resp with events/<name>, or rewrites it with
// -update.
func goldenResponse(t *testing.T, name string, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	got, err := json.MarshalIndent(resp, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("..", "..", "..", "events", name)
	if *update {
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "%s (go test -update rewrites it)", name)
}

// TestGoldenRequests runs the golden HTTP API requests, as API Gateway
// delivers them with a JWT authorizer, through the handler. The POST
// creates the intent's job and, replayed, answers the same job; the GET
// shows job-42 of the running example (worker B's result, generation 2)
// with its URL; the DELETE cancels the pending job-43.
func TestGoldenRequests(t *testing.T) {
	t.Parallel()
	postReq := readRequest(t, "http-post-job.json")
	getReq := readRequest(t, "http-get-job.json")
	deleteReq := readRequest(t, "http-delete-job.json")
	for _, r := range []events.APIGatewayV2HTTPRequest{postReq, getReq, deleteReq} {
		require.Equal(t, "t-1", r.RequestContext.Authorizer.JWT.Claims["tenant"])
		require.Equal(t, "$default", r.RequestContext.Stage)
	}

	t.Run("POST", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := b.do(t, postReq)
		goldenResponse(t, "http-post-job-response.json", first)
		require.Equal(t, 202, first.StatusCode)
		created := createdOf(t, first)
		j, err := b.memory.Get(t.Context(), created.JobID)
		require.NoError(t, err)
		require.Equal(t, "t-1", j.Tenant)
		require.Equal(t, "export-intent-7", j.IntentID)
		require.Equal(t, map[string]string{"page_size": "50"}, j.Spec)

		b.clock.Advance(time.Minute)
		again := b.do(t, postReq)
		require.Equal(t, 200, again.StatusCode, "the retried intent answers its job")
		require.Equal(t, created, createdOf(t, again))
		require.Equal(t, int32(2), b.store.writes.Load())
		after, err := b.memory.Get(t.Context(), created.JobID)
		require.NoError(t, err)
		require.Equal(t, j, after)
	})

	t.Run("GET and DELETE", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		b.seed(t, "job-42", "t-1", "export-intent-7", map[string]string{"page_size": "50"})
		b.seed(t, "job-43", "t-1", "export-intent-8", nil)
		a, err := b.memory.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "worker-a", LeaseUntil: b.clock.Now().Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, int64(1), a.Generation)
		b.clock.Advance(2 * time.Minute) // A stalls; its lease ends
		w, err := b.memory.Claim(ctx, jobs.ClaimRequest{JobID: "job-42", AttemptID: "worker-b", LeaseUntil: b.clock.Now().Add(time.Minute)})
		require.NoError(t, err)
		b.clock.Advance(20 * time.Second)
		_, err = b.memory.Accept(ctx, jobs.AcceptRequest{JobID: "job-42", AttemptID: "worker-b", Generation: w.Generation, Version: w.Version,
			Result: jobs.Result{Key: "candidates/job-42/g0000000002/worker-b.json", SHA256: strings.Repeat("5e", 32), Size: 2048}, Progress: 120})
		require.NoError(t, err)
		b.clock.Advance(time.Minute)

		resp := b.do(t, getReq)
		goldenResponse(t, "http-get-job-response.json", resp)
		v := viewOf(t, resp)
		require.Equal(t, int64(2), v.Generation)
		require.Equal(t, []presignCall{{Key: "candidates/job-42/g0000000002/worker-b.json", TTL: 5 * time.Minute}}, b.presigner.Calls())

		resp = b.do(t, deleteReq)
		goldenResponse(t, "http-delete-job-response.json", resp)
		require.Equal(t, "cancelled", viewOf(t, resp).Status)
		j, err := b.memory.Get(ctx, "job-43")
		require.NoError(t, err)
		require.Equal(t, jobs.StatusCancelled, j.Status)
	})
}
