package nudge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

var creds = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "token")

// A nudge is Lambda's Invoke of the function, asynchronous (Event), its
// payload the body, signed for the lambda service in the region; a 202 is
// success and anything else an error carrying Lambda's answer.
func TestLambdaInvokesTheRelayAsynchronously(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body []byte
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"Type":"User","message":"no"}`))
	}))
	defer srv.Close()
	l, err := nudge.NewLambda(nudge.LambdaConfig{Function: "fifoworker-outbox-relay:live", Region: "eu-west-1",
		Credentials: creds, Endpoint: srv.URL})
	require.NoError(t, err)
	p := nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC), Commits: 4}
	require.NoError(t, l.Send(t.Context(), p))
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/2015-03-31/functions/fifoworker-outbox-relay:live/invocations", got.URL.Path)
	require.Equal(t, "Event", got.Header.Get("X-Amz-Invocation-Type"))
	require.True(t, strings.HasPrefix(got.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), got.Header.Get("Authorization"))
	require.Contains(t, got.Header.Get("Authorization"), "/eu-west-1/lambda/aws4_request")
	require.Equal(t, "token", got.Header.Get("X-Amz-Security-Token"))
	var sent nudge.Payload
	require.NoError(t, json.Unmarshal(body, &sent))
	require.Equal(t, p, sent)

	status = http.StatusTooManyRequests
	require.ErrorContains(t, l.Send(t.Context(), p), "429")
	status = http.StatusOK // a synchronous invocation's answer: not what was asked
	require.Error(t, l.Send(t.Context(), p))
}

func TestNewLambdaRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	valid := nudge.LambdaConfig{Function: "f", Region: "eu-west-1", Credentials: creds}
	for _, tc := range []struct {
		field  string
		mutate func(*nudge.LambdaConfig)
	}{
		{"Function", func(c *nudge.LambdaConfig) { c.Function = "" }},
		{"Region", func(c *nudge.LambdaConfig) { c.Region = "" }},
		{"Credentials", func(c *nudge.LambdaConfig) { c.Credentials = nil }},
		{"Endpoint", func(c *nudge.LambdaConfig) { c.Endpoint = "lambda.local" }},
		{"Endpoint", func(c *nudge.LambdaConfig) { c.Endpoint = "ftp://x" }},
	} {
		cfg := valid
		tc.mutate(&cfg)
		l, err := nudge.NewLambda(cfg)
		require.ErrorIs(t, err, nudge.ErrInvalidConfig, tc.field)
		require.ErrorContains(t, err, tc.field)
		require.Nil(t, l)
	}
	_, err := nudge.NewLambda(valid)
	require.NoError(t, err)
}
