//go:build integration

package test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// faultRates are the rates TestPipelineThroughFaults injects at, per
// request: one request in ten is delayed (20-200 ms), and one in 12.5 fails
// (2 % each: a 5xx, a throttle, a reset before it is forwarded, a reset
// after it was applied). With the SDK's 4 attempts for DynamoDB and 3 for
// SQS and S3, a call fails for good about once in 250,000 (DynamoDB) or
// 2,000 (SQS, S3) calls; the functions and the mappings take care of those.
var faultRates = faultproxy.Rates{Latency: 0.10, ServerError: 0.02, Throttle: 0.02, Reset: 0.02, Drop: 0.02}

// faultExemptions are the operations injected at other rates.
var faultExemptions = map[string]faultproxy.Rates{
	// The mappings describe their queue once, when they start; a failure
	// there ends the mapping (localesm refuses to run, as Lambda refuses to
	// create a mapping it cannot validate).
	"GetQueueAttributes": {},
	// A receive whose answer is lost hides its messages for the queue's
	// visibility timeout (180 s on the events queue, 36 s on the commands
	// queue in the demo) and then SQS delivers them again: nothing is lost,
	// but the group waits out the timeout, longer than the demo waits for
	// the last view. Every other fault still hits the receives; the
	// redelivery path itself is what TestWorkerKilledMidBatchUnderTheRIE
	// shows.
	"ReceiveMessage": {Latency: faultRates.Latency, ServerError: faultRates.ServerError, Throttle: faultRates.Throttle, Reset: faultRates.Reset},
}

// faultSeed is FIFOWORKER_FAULT_SEED, or 1.
func faultSeed(t *testing.T) uint64 {
	t.Helper()
	s := os.Getenv("FIFOWORKER_FAULT_SEED")
	if s == "" {
		return 1
	}
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, "FIFOWORKER_FAULT_SEED")
	return n
}

// faultScale is FIFOWORKER_FAULT_SCALE, or 1: it multiplies the error
// rates (not the latency), for runs harder than make test's.
func faultScale(t *testing.T) float64 {
	t.Helper()
	s := os.Getenv("FIFOWORKER_FAULT_SCALE")
	if s == "" {
		return 1
	}
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, "FIFOWORKER_FAULT_SCALE")
	require.True(t, f >= 0 && f*4*faultRates.Drop <= 1, "FIFOWORKER_FAULT_SCALE %v", f)
	return f
}

func scaledRates(r faultproxy.Rates, f float64) faultproxy.Rates {
	r.ServerError, r.Throttle, r.Reset, r.Drop = r.ServerError*f, r.Throttle*f, r.Reset*f, r.Drop*f
	return r
}

// faultProxies puts a fault proxy in front of each service the functions
// reach, as demo.Options.Route asks.
type faultProxies struct {
	t     *testing.T
	seed  uint64
	scale float64

	mu      sync.Mutex
	proxies map[faultproxy.Service]*faultproxy.Proxy
}

func (f *faultProxies) route(variable, endpoint string) (string, error) {
	svc, ok := map[string]faultproxy.Service{
		"AWS_ENDPOINT_URL_DYNAMODB": faultproxy.DynamoDB, "AWS_ENDPOINT_URL_SQS": faultproxy.SQS, "AWS_ENDPOINT_URL_S3": faultproxy.S3,
	}[variable]
	if !ok {
		return "", fmt.Errorf("no fault proxy for %s", variable)
	}
	ops := map[string]faultproxy.Rates{}
	for op, r := range faultExemptions {
		ops[op] = scaledRates(r, f.scale)
	}
	p, err := faultproxy.New(faultproxy.Config{
		Service: svc, Target: endpoint, Seed: f.seed + uint64(svc), // one stream per service and operation
		Rates: scaledRates(faultRates, f.scale), Operations: ops,
	})
	if err != nil {
		return "", err
	}
	f.t.Cleanup(func() { require.NoError(f.t, p.Close()) })
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proxies[svc] = p
	return p.URL, nil
}

func (f *faultProxies) counts() map[faultproxy.Service]faultproxy.Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[faultproxy.Service]faultproxy.Counts{}
	for svc, p := range f.proxies {
		out[svc] = p.Counts()
	}
	return out
}

// The demo's scenario with 60 bulk jobs (63 in all: the running example, the
// cancelled job and the poison job besides), every function's DynamoDB, SQS
// and S3 requests, and the mappings' SQS requests, going through a fault
// proxy per service that delays and fails them at faultRates, from the
// first request to the last: the same invariants hold as without faults
// (demo.Summary.OK: every job final, each completed job's result the
// accepting generation's candidate with the tenant's articles, every view
// at its job's version, every tenant total the sum of its jobs' progress,
// an event consumed for every version, the example's stale accept refused
// and its orphan swept, the poison job held, parked and redriven in order,
// and nothing left in any queue or DLQ), and every kind of fault was
// injected. FIFOWORKER_FAULT_SEED runs another seed, FIFOWORKER_FAULT_SCALE
// multiplies the error rates, and FIFOWORKER_FAULT_LOGS names a directory
// that keeps the functions' log.
func TestPipelineThroughFaults(t *testing.T) {
	state := testenv.Stack(t)
	seed := faultSeed(t)
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	demo.Prepare(tpl)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, "faults")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })

	faults := &faultProxies{t: t, seed: seed, scale: faultScale(t), proxies: map[faultproxy.Service]*faultproxy.Proxy{}}
	logDir := os.Getenv("FIFOWORKER_FAULT_LOGS") // keeps the functions' log
	if logDir == "" {
		logDir = t.TempDir()
	}
	out := &testenv.Buffer{}
	sum, err := demo.Run(t.Context(), demo.Options{
		State: state, Template: tpl, Deployed: deployed, StackName: stack, Jobs: 60,
		Root: "..", LogDir: logDir, Out: out, Setenv: t.Setenv, Route: faults.route,
	})
	t.Logf("demo output:\n%s", out.String())
	t.Logf("summary: %+v", sum)
	counts := faults.counts()
	var all faultproxy.Counts
	for _, svc := range []faultproxy.Service{faultproxy.DynamoDB, faultproxy.SQS, faultproxy.S3} {
		t.Logf("faults injected into %s's requests (seed %d):\n%s", svc, seed, counts[svc])
		all = all.Add(counts[svc])
	}
	t.Logf("in all, seed %d: %d requests; %s", seed, all.Seen(), kindTotals(all))
	require.NoError(t, err, "seed %d", seed)
	require.True(t, sum.OK, "seed %d: %+v", seed, sum)
	require.Equal(t, 64, sum.Jobs)
	require.Zero(t, sum.FailedUnexpectedly)
	require.Equal(t, 1, sum.StaleAcceptsRejected)
	require.True(t, sum.OrderKept)
	require.Len(t, counts, 3, "a proxy in front of DynamoDB, SQS and S3")
	for _, k := range faultproxy.Kinds {
		require.Positive(t, all.Total(k), "seed %d: no %s was injected", seed, k)
	}
	for svc, c := range counts {
		faulted := 0
		for _, k := range faultproxy.Kinds {
			faulted += c.Total(k)
		}
		require.Positive(t, faulted, "seed %d: no fault was injected into %s's requests", seed, svc)
	}
}

func kindTotals(c faultproxy.Counts) string {
	s := ""
	for i, k := range faultproxy.Kinds {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, c.Total(k))
	}
	return s
}
