package intake_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// examplePresigner stands in for NewS3Presigner, which pins the URL to
// the accepted version.
type examplePresigner struct{}

func (examplePresigner) PresignGet(_ context.Context, r jobs.Result, ttl time.Duration) (string, error) {
	return fmt.Sprintf("https://candidates.s3.example/%s?X-Amz-Expires=%.0f", r.Key, ttl.Seconds()), nil
}

// A client creates a job, retries the same request, and reads the job; the
// tenant is the JWT authorizer's claim, so another tenant's caller finds
// nothing. In a function: lambda.Start(h.Handle).
func Example() {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 11, 4, 9, 0, 0, 0, time.UTC) }
	store, err := jobs.NewMemoryStore(jobs.Config{Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := intake.New(intake.Config{
		Store:     store,
		Presigner: examplePresigner{},
		Logger:    slog.New(slog.DiscardHandler),
		Now:       now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := func(method, path, tenant, body string) events.APIGatewayV2HTTPResponse {
		req := events.APIGatewayV2HTTPRequest{
			RawPath: path,
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": "export-intent-7"},
			Body:    body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": tenant}},
				},
			},
		}
		resp, _ := h.Handle(ctx, req) // never an error: failures are answered
		fmt.Println(method, path, "→", resp.StatusCode, resp.Body)
		return resp
	}

	created := call("POST", "/jobs", "t-1", `{"spec":{"page_size":"50"}}`)
	call("POST", "/jobs", "t-1", `{"spec":{"page_size":"50"}}`)
	call("POST", "/jobs", "t-1", `{"spec":{"page_size":"10"}}`)
	loc := created.Headers["Location"]
	call("GET", loc, "t-1", "")
	call("GET", loc, "t-2", "")
	call("DELETE", loc, "t-1", "")
	call("DELETE", loc, "t-1", "")
	call("PUT", "/jobs", "t-1", "")
	// Output:
	// POST /jobs → 202 {"job_id":"job-57db35131f4c8c8d336aa01d7f8d7f6b","status":"pending","location":"/jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b"}
	// POST /jobs → 200 {"job_id":"job-57db35131f4c8c8d336aa01d7f8d7f6b","status":"pending","location":"/jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b"}
	// POST /jobs → 409 {"error":{"code":"intent_conflict","message":"this Idempotency-Key already created a job with another spec; use a new key for a new job"}}
	// GET /jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b → 200 {"job_id":"job-57db35131f4c8c8d336aa01d7f8d7f6b","status":"pending","generation":0,"version":0,"progress":0,"created_at":"2026-11-04T09:00:00.000Z","updated_at":"2026-11-04T09:00:00.000Z"}
	// GET /jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b → 404 {"error":{"code":"job_not_found","message":"job job-57db35131f4c8c8d336aa01d7f8d7f6b not found"}}
	// DELETE /jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b → 200 {"job_id":"job-57db35131f4c8c8d336aa01d7f8d7f6b","status":"cancelled","generation":1,"version":1,"progress":0,"created_at":"2026-11-04T09:00:00.000Z","updated_at":"2026-11-04T09:00:00.000Z","failure":{"code":"cancelled","message":"cancelled by the client (DELETE /jobs/{id})"}}
	// DELETE /jobs/job-57db35131f4c8c8d336aa01d7f8d7f6b → 409 {"error":{"code":"job_final","message":"job job-57db35131f4c8c8d336aa01d7f8d7f6b is already cancelled","status":"cancelled"}}
	// PUT /jobs → 405 {"error":{"code":"method_not_allowed","message":"method \"PUT\" is not allowed here; allowed: POST"}}
}
