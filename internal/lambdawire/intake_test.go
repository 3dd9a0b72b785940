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
// wired with the reference task's own spec validator, so a page_size the
// export can never run is refused before any request is sent.
func TestIntakeRefusesASpecTheWorkersTaskCannotRun(t *testing.T) {
	t.Parallel()
	env := NewEnvFrom(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		// Nothing listens there: a request that reached the store would fail.
		"AWS_ENDPOINT_URL": "http://127.0.0.1:1",
		"JOBS_TABLE":       "jobs", "CANDIDATES_BUCKET": "candidates",
	})
	handle, err := Intake(env, env.AWSConfig(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, env.Err())
	for _, pageSize := range []string{"0", "1001"} {
		resp, err := handle(t.Context(), events.APIGatewayV2HTTPRequest{
			RawPath: "/jobs",
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": "k1"},
			Body:    `{"spec":{"page_size":"` + pageSize + `"}}`,
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
		require.Equal(t, intake.CodeInvalidSpec, body.Error.Code)
		require.Contains(t, body.Error.Message, "page_size")
	}
}
