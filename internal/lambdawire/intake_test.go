package lambdawire

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
)

// TestIntakeRefusesASpecTheWorkersTaskCannotRun: the intake function is
// wired with the registry of the worker's tasks, so a spec the task it
// names can never run (a page_size the export refuses, fields the word
// count refuses), or that names no task, is refused before any request is
// sent.
func TestIntakeRefusesASpecTheWorkersTaskCannotRun(t *testing.T) {
	t.Parallel()
	env := NewEnvFrom(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		// Nothing listens there: a request that reached the store would fail.
		"AWS_ENDPOINT_URL": "http://127.0.0.1:1",
		"JOBS_TABLE":       "jobs", "CANDIDATES_BUCKET": "candidates", "ARTICLES_TABLE": "articles",
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
}
