package intake_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

type apiErr struct{ code string }

func (e apiErr) Error() string     { return e.code }
func (e apiErr) ErrorCode() string { return e.code }

// failingCreate is a store whose Create fails with an AWS error code, as
// DynamoDB's client returns it once its own retries are spent.
type failingCreate struct {
	jobs.Store
	code string
}

func (s failingCreate) Create(context.Context, jobs.CreateRequest) (jobs.CreateResult, error) {
	return jobs.CreateResult{}, fmt.Errorf("operation error DynamoDB: TransactWriteItems, exceeded maximum number of attempts, 4: %w", apiErr{s.code})
}

// A throttled database is a 503 with Retry-After (come back later), not a
// 500 (a bug); every other failure stays a 500 that tells nothing.
func TestThrottlingIsA503WithRetryAfter(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{
		"ProvisionedThroughputExceededException": http.StatusServiceUnavailable,
		"ThrottlingException":                    http.StatusServiceUnavailable,
		"RequestLimitExceeded":                   http.StatusServiceUnavailable,
		"ValidationException":                    http.StatusInternalServerError,
		"TransactionCanceledException":           http.StatusInternalServerError,
	} {
		store, err := jobs.NewMemoryStore(jobs.Config{})
		require.NoError(t, err)
		b := setup(t, func(c *intake.Config) { c.Store = failingCreate{Store: store, code: code} })
		resp := b.do(t, post("t-1", "k-1", `{"spec":{}}`))
		require.Equal(t, want, resp.StatusCode, code)
		if want == http.StatusServiceUnavailable {
			require.Equal(t, intake.RetryAfterSeconds, resp.Headers["Retry-After"], code)
			require.JSONEq(t, `{"error":{"code":"unavailable","message":"the service is busy; retry after a moment"}}`, resp.Body)
		} else {
			require.NotContains(t, resp.Headers, "Retry-After", code)
			require.Contains(t, resp.Body, `"code":"internal"`, code)
			require.NotContains(t, resp.Body, code, "the cause stays in the log")
		}
	}
}
