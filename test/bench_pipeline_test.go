//go:build integration

package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// BenchmarkPipeline measures jobs per second end to end: a job is posted to
// intake, relayed from the Jobs table's stream to the commands queue, run
// by the worker (claim, the export of five articles, the candidate, the
// accept), and its events relayed and projected; it is done when the
// projector has consumed its job.completed event. The five functions run
// in process on the local stack with template.yaml's settings (worker
// batches of 10 and at most 20 invocations at once, projector 10; the
// relay one stream batch at a time), connected by pkg/localesm.
//
// What a "group" is here: a job's commands and events are grouped by its
// id (the job id is the FIFO MessageGroupId), so a job is one group, and
// "groups=K" is K jobs in flight at once: a closed loop of K clients, each
// posting a job and waiting for its completion before posting the next.
// That is the load SQS FIFO's ordering shapes, at most one batch per group
// in flight, and it is how the pipeline scales with the number of active
// groups. Several commands sharing one group (what ordering costs when one
// group is busy) is BenchmarkOrdering's subject.
//
// An op is one job: ns/op is the inverse of the throughput, also reported
// as jobs/s. The jobs belong to eight tenants in turn (a tenant's totals
// item is written by each of its jobs' events).
func BenchmarkPipeline(b *testing.B) {
	for _, groups := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchPipeline(b, groups) })
	}
}

var benchTenants = []string{"t-1", "t-2", "t-3", "t-4", "t-5", "t-6", "t-7", "t-8"}

func benchPipeline(b *testing.B, groups int) {
	d := benchDeploy(b, nil)
	ctx := b.Context()
	articles := map[string]int{}
	for _, t := range benchTenants {
		articles[t] = 5
	}
	require.NoError(b, demo.SeedArticles(ctx, d.state.DynamoDBClient(), d.deployed.Resources["ArticlesTable"], articles))

	requests := &requestTimes{}
	var retries atomic.Int64 // POSTs sent again after a timeout
	var mu sync.Mutex
	done := map[string]chan struct{}{} // by job id: closed when its job.completed event is consumed
	p, err := pipeline.Build(ctx, pipeline.Config{
		Template: d.tpl, Deployed: d.deployed, StackName: d.stack, Region: d.state.Region, Endpoints: d.state.Env(),
		APIOptions: func(string) []func(*middleware.Stack) error {
			return []func(*middleware.Stack) error{requests.option()}
		},
		OnSQSBatch: func(fn string, r localesm.SQSBatchResult) {
			if fn != "projector" {
				return
			}
			deleted := map[string]bool{}
			for _, id := range r.Deleted {
				deleted[id] = true
			}
			for _, rec := range r.Records {
				var ev struct {
					Type  string `json:"type"`
					JobID string `json:"job_id"`
				}
				if !deleted[rec.MessageId] || json.Unmarshal([]byte(rec.Body), &ev) != nil || ev.Type != jobs.EventCompleted {
					continue
				}
				mu.Lock()
				ch := done[ev.JobID]
				delete(done, ev.JobID)
				mu.Unlock()
				if ch != nil {
					close(ch)
				}
			}
		},
	})
	require.NoError(b, err)
	p.Run(ctx)
	defer func() { require.NoError(b, p.Stop()) }()

	// job runs job i end to end and returns when it is projected.
	job := func(prefix string, i int) error {
		tenant := benchTenants[i%len(benchTenants)]
		intent := fmt.Sprintf("%s-%d", prefix, i)
		id := jobs.DeriveJobID(tenant, intent)
		ch := make(chan struct{})
		mu.Lock()
		done[id] = ch
		mu.Unlock()
		// A client whose POST timed out sends it again under the same
		// Idempotency-Key, as a real one would; on a loaded machine
		// DynamoDB Local can take longer than intake's 10 s timeout.
		var resp events.APIGatewayV2HTTPResponse
		var err error
		for try := range 5 {
			if try > 0 {
				retries.Add(1)
			}
			if resp, err = p.HTTP(ctx, benchRequest(tenant, intent)); err == nil {
				break
			}
		}
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %d %s", intent, resp.StatusCode, resp.Body)
		}
		select {
		case <-ch:
			return nil
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("job %s (%s) not projected as completed within 2 minutes", id, intent)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// closedLoop runs n jobs with at most groups in flight.
	closedLoop := func(prefix string, n int) error {
		sem := make(chan struct{}, groups)
		var wg sync.WaitGroup
		var emu sync.Mutex
		var errs []error
		for i := range n {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := job(prefix, i); err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}

	// Warm up (a new table's first writes are slow on DynamoDB Local; the
	// SDK clients open their connections), untimed.
	require.NoError(b, closedLoop("warm", groups))
	meter := newCPUMeter(b)
	requests.reset()
	retries.Store(0)
	b.ResetTimer()
	meter.begin(b)
	err = closedLoop("bench", b.N)
	b.StopTimer()
	require.NoError(b, err)
	meter.report(b, b.N)
	requests.report(b, b.N)
	b.ReportMetric(float64(retries.Load())/float64(b.N), "post-retries/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// benchRequest is POST /jobs of tenant under intent, as API Gateway hands
// it to intake after its JWT authorizer.
func benchRequest(tenant, intent string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: "/jobs", Body: `{"spec":{"page_size":"100"}}`,
		Headers: map[string]string{"content-type": "application/json", "idempotency-key": intent},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/jobs"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": tenant}}},
		},
	}
}
