package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// relayStub is a pipeline whose relay hands each event it is invoked with
// to got.
func relayStub(t *testing.T, got chan<- json.RawMessage) *Pipeline {
	t.Helper()
	relay := func(_ context.Context, ev json.RawMessage) (struct{}, error) { got <- ev; return struct{}{}, nil }
	return &Pipeline{cfg: Config{StackName: "fw", Region: "eu-west-1", Logger: slog.New(slog.DiscardHandler)},
		invokers: map[string]localesm.Invoker{"relay": localesm.Func(relay)}, timeouts: map[string]time.Duration{"relay": 30 * time.Second}}
}

// A writer's nudge, as pgsource's nudge.Lambda sends it (Invoke,
// InvocationType Event, signed), is answered 202 by the pipeline's Lambda
// API and reaches the relay with its payload; a request that is not a
// signed asynchronous Invoke of the stack's relay is refused and invokes
// nothing.
func TestTheLocalLambdaAPIInvokesTheRelayForANudge(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 4)
	p := relayStub(t, got)
	a, err := startLambdaAPI(t.Context(), p)
	require.NoError(t, err)
	p.lambda = a
	require.True(t, strings.HasPrefix(a.url(), "http://127.0.0.1:"), a.url())

	send := func(function string) error {
		l, err := nudge.NewLambda(nudge.LambdaConfig{Function: function, Region: "eu-west-1",
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), Endpoint: a.url()})
		require.NoError(t, err)
		return l.Send(t.Context(), nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Unix(1_764_650_000, 0).UTC(), Commits: 3})
	}
	require.NoError(t, send("fw-relay"))
	var p1 nudge.Payload
	require.NoError(t, json.Unmarshal(<-got, &p1))
	require.Equal(t, nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Unix(1_764_650_000, 0).UTC(), Commits: 3}, p1)

	require.ErrorContains(t, send("fw-worker"), "404", "another function")
	for name, req := range map[string]func() *http.Request{
		"synchronous": func() *http.Request {
			r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url()+"/2015-03-31/functions/fw-relay/invocations", strings.NewReader(`{}`))
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test")
			return r
		},
		"unsigned": func() *http.Request {
			r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url()+"/2015-03-31/functions/fw-relay/invocations", strings.NewReader(`{}`))
			r.Header.Set("X-Amz-Invocation-Type", "Event")
			return r
		},
		"not JSON": func() *http.Request {
			r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.url()+"/2015-03-31/functions/fw-relay/invocations", strings.NewReader(`{`))
			r.Header.Set("X-Amz-Invocation-Type", "Event")
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test")
			return r
		},
	} {
		resp, err := http.DefaultClient.Do(req())
		require.NoError(t, err, name)
		_ = resp.Body.Close()
		require.GreaterOrEqual(t, resp.StatusCode, 400, name)
	}
	require.NoError(t, a.stop())
	require.Empty(t, got, "nothing but the nudge reached the relay")
	require.Equal(t, RelayStats{Nudges: 1, Runs: 1}, p.RelayStats())
}
