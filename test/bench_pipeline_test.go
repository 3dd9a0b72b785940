//go:build integration

package test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
// batches of 10 and at most WorkerMaxConcurrency invocations at once,
// projector ProjectorMaxConcurrency: 100 each since issue 19, 20 and 10
// when docs/BENCHMARKS.md's end-to-end figures were measured; the relay
// one stream batch at a time), connected by pkg/localesm.
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
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchPipeline(b, pipelineLoad{groups: groups}) })
	}
}

var benchTenants = []string{"t-1", "t-2", "t-3", "t-4", "t-5", "t-6", "t-7", "t-8"}

// pipelineLoad is what benchPipeline runs. The zero value but groups is
// BenchmarkPipeline's load.
type pipelineLoad struct {
	groups int // clients of the closed loop: jobs in flight
	// tenants own the timed jobs in turn, warmTenants the warm-up's
	// (default benchTenants, both).
	tenants, warmTenants []string
	// jobs, when set, is how many jobs the timed part posts per b.N (then
	// b.N·jobs jobs, and every per-op figure, ns/op included, is per job);
	// 0: b.N jobs, an op is a job.
	jobs     int
	settings map[string]map[string]string // pipeline.Config.Settings
	// check, when set, runs after the timed part, untimed, and fails the
	// benchmark if what the run left is wrong.
	check func(b *testing.B, run *pipelineRun)
}

// pipelineRun is what a benchPipeline run left for its check.
type pipelineRun struct {
	d        *benchDeployment
	p        *pipeline.Pipeline
	requests *requestTimes
	jobs     int               // the timed part's
	tenant   map[string]string // by job id of the timed part
	progress map[string]int64  // by job id: its job.completed event's progress
}

func benchPipeline(b *testing.B, load pipelineLoad) {
	groups, tenants, warmTenants := load.groups, load.tenants, load.warmTenants
	if tenants == nil {
		tenants = benchTenants
	}
	if warmTenants == nil {
		warmTenants = benchTenants
	}
	d := benchDeploy(b, nil)
	ctx := b.Context()
	articles := map[string]int{}
	for _, t := range append(slices.Clone(tenants), warmTenants...) {
		articles[t] = 5
	}
	require.NoError(b, demo.SeedArticles(ctx, d.state.DynamoDBClient(), d.deployed.Resources["ArticlesTable"], articles))

	requests := &requestTimes{}
	run := &pipelineRun{d: d, requests: requests, tenant: map[string]string{}, progress: map[string]int64{}}
	var retries atomic.Int64 // POSTs sent again after a timeout
	var mu sync.Mutex
	done := map[string]chan struct{}{} // by job id: closed when its job.completed event is consumed
	p, err := pipeline.Build(ctx, pipeline.Config{
		Template: d.tpl, Deployed: d.deployed, StackName: d.stack, Region: d.state.Region, Endpoints: d.state.Env(),
		Settings: load.settings,
		APIOptions: func(fn string) []func(*middleware.Stack) error {
			return []func(*middleware.Stack) error{requests.optionOf(fn)}
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
					Type     string `json:"type"`
					JobID    string `json:"job_id"`
					Progress int64  `json:"progress"`
				}
				if !deleted[rec.MessageId] || json.Unmarshal([]byte(rec.Body), &ev) != nil || ev.Type != jobs.EventCompleted {
					continue
				}
				mu.Lock()
				ch := done[ev.JobID]
				delete(done, ev.JobID)
				if ch != nil {
					run.progress[ev.JobID] = ev.Progress
				}
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
	run.p = p

	// job runs job i of tenants end to end and returns when it is
	// projected.
	job := func(prefix string, tenants []string, i int) error {
		tenant := tenants[i%len(tenants)]
		intent := fmt.Sprintf("%s-%d", prefix, i)
		id := jobs.DeriveJobID(tenant, intent)
		ch := make(chan struct{})
		mu.Lock()
		done[id] = ch
		run.tenant[id] = tenant
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
	// closedLoop runs n jobs of tenants with at most groups in flight.
	closedLoop := func(prefix string, tenants []string, n int) error {
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
				if err := job(prefix, tenants, i); err != nil {
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
	require.NoError(b, closedLoop("warm", warmTenants, groups))
	meter := newCPUMeter(b)
	requests.reset()
	retries.Store(0)
	mu.Lock()
	clear(run.tenant)
	clear(run.progress)
	mu.Unlock()
	run.jobs = b.N
	if load.jobs > 0 {
		run.jobs = b.N * load.jobs
	}
	b.ResetTimer()
	meter.begin(b)
	err = closedLoop("bench", tenants, run.jobs)
	b.StopTimer()
	require.NoError(b, err)
	meter.report(b, run.jobs)
	requests.report(b, run.jobs)
	b.ReportMetric(float64(retries.Load())/float64(run.jobs), "post-retries/op")
	b.ReportMetric(float64(run.jobs)/b.Elapsed().Seconds(), "jobs/s")
	if load.jobs > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(run.jobs), "ns/op")
	}
	if load.check != nil {
		load.check(b, run)
	}
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
