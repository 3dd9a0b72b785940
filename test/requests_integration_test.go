//go:build integration

package test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/capacity"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The requests one job costs on the happy path, end to end through the five
// functions, counted per function by SDK middleware: the Jobs table sees
// the lower bound (create, claim, accept) and S3 one put, when the task's
// export fits one page. Not parallel: it sets the endpoint variables.
func TestRequestsPerJobOnTheHappyPath(t *testing.T) {
	state, tpl, deployed, stack := deployWithArticles(t, "cost", nil)
	counts := map[string]*awstest.Requests{}
	for _, fn := range pipeline.Functions {
		counts[fn] = &awstest.Requests{}
	}
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		APIOptions: func(fn string) []func(*middleware.Stack) error {
			return []func(*middleware.Stack) error{counts[fn].CountExcept("", perProcess)}
		},
	})
	require.NoError(t, err)
	p.Run(t.Context())
	defer func() { require.NoError(t, p.Stop()) }()

	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/jobs", Body: `{"spec":{"page_size":"100"}}`,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": "export-intent-7"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/jobs"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": "t-1"}}},
		},
	}
	resp, err := p.HTTP(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, resp.Body)

	id := jobs.DeriveJobID("t-1", "export-intent-7")
	views, err := projection.NewDynamoStore(projection.DynamoConfig{Client: state.DynamoDBClient(), Tables: projection.Tables{Views: deployed.Resources["ViewsTable"], Totals: deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, err := views.View(t.Context(), id)
		if err == nil && v.Status == jobs.StatusCompleted {
			require.Equal(t, int64(5), v.Progress)
			break
		}
		require.True(t, time.Now().Before(deadline), "job %s not projected as completed within 2 minutes", id)
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last batches' deletes are settled; nothing else is in flight
	got := map[string]map[string]int{}
	for _, fn := range pipeline.Functions {
		got[fn] = counts[fn].Take()
	}
	logCounts(t, "happy", got)
	requireCounted(t, capacity.PathHappy, got)
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, got["intake"], "create: the job and its intent marker")
	// The quarantine reads the holds once per batch (BatchGetItem): one
	// here, where the job's command is a batch of its own; amortised over
	// up to ten commands in a busy queue.
	require.Equal(t, map[string]int{"UpdateItem": 2, "Query": 1, "PutObject": 1, "BatchGetItem": 1}, got["worker"], "claim, one page, the candidate, accept; the batch's holds")
	// Three messages: the command (v0), job.started (v1), job.completed (v2),
	// in three SendMessageBatch calls however the stream batched the
	// records: a call holds at most one message per job (up to ten jobs'
	// messages when the relay has more jobs in its batch).
	require.Equal(t, map[string]int{"SendMessageBatch": 3}, got["relay"])
	// The events' batches: one or two (the stream and the relay decide),
	// each with one read of its holds.
	// Two events: a view update each; job.started adds nothing (skipped),
	// job.completed one totals transaction (its cursor and its shard's
	// total).
	requireProjector(t, got["projector"], 2, 1, 0)
	require.Empty(t, got["sweeper"])
}
