package lambdawire

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// TestIntakeRefusesASpecTheWorkersTaskCannotRun: the intake function is
// wired with the spec checks of the worker's tasks, and with nothing the
// tasks need to run (no ARTICLES_TABLE), so a spec the task it names can
// never run (a page_size the export refuses, fields the word count
// refuses, a key the named task does not read), or that names no task, is
// refused with nothing written: the one request sent is the read that
// looks for a replay of the same intent (the table, a stand-in on
// 127.0.0.1, holds no job).
func TestIntakeRefusesASpecTheWorkersTaskCannotRun(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	table := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Header.Get("X-Amz-Target"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`)) // GetItem's answer for an item that is not there
	}))
	t.Cleanup(table.Close)
	env := startup.NewEnvFrom(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL": table.URL,
		"JOBS_TABLE":       "jobs", "CANDIDATES_BUCKET": "candidates",
	})
	handle, err := Intake(env, env.AWSConfig(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, env.Err())
	for _, tc := range []struct{ spec, code, says string }{
		{`{"page_size":"0"}`, intake.CodeInvalidSpec, "page_size"},
		{`{"page_size":"1001"}`, intake.CodeInvalidSpec, "page_size"},
		{`{"task":"export","page_size":"0"}`, intake.CodeInvalidSpec, "page_size"},
		{`{"task":"wordcount","fields":"body,body"}`, intake.CodeInvalidSpec, "fields"},
		{`{"task":"translate"}`, intake.CodeUnknownTask, `"translate"`},
		{`{"fields":"body"}`, intake.CodeInvalidSpec, `the export does not read "fields"`},
		{`{"task":"wordcount","feilds":"body"}`, intake.CodeInvalidSpec, `"feilds"`},
		{`{"task":"wordcount","fields":"title, body"}`, intake.CodeInvalidSpec, `" body"`},
	} {
		resp, err := handle(t.Context(), events.APIGatewayV2HTTPRequest{
			RawPath: "/jobs",
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": "k1"},
			Body:    `{"spec":` + tc.spec + `}`,
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": "t-1"}},
				},
			},
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, resp.Body)
		var body intake.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
		require.Equal(t, tc.code, body.Error.Code, tc.spec)
		require.Contains(t, body.Error.Message, tc.says, tc.spec)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 8, "one read a refused spec")
	for _, c := range calls {
		require.Equal(t, "DynamoDB_20120810.GetItem", c, "nothing but reads")
	}
}
