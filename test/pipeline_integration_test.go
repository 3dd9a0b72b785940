//go:build integration

package test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/demo"
	"github.com/fifoworker/fifoworker/internal/localdeploy"
	"github.com/fifoworker/fifoworker/internal/localstack"
	"github.com/fifoworker/fifoworker/internal/samtemplate"
	"github.com/fifoworker/fifoworker/internal/testenv"
)

// stackFromEnv is the stack the test run was given (make test's local run
// sets these variables).
func stackFromEnv(t *testing.T) *localstack.State {
	t.Helper()
	testenv.DynamoDB(t) // fails clearly without endpoints
	testenv.SQS(t)
	testenv.S3(t)
	return localstack.FromEnv()
}

// runPipeline deploys template.yaml (with the demo's short timeouts) under a
// stack name of its own and runs the demo's scenario on it.
func runPipeline(t *testing.T, jobs int, rie bool) demo.Summary {
	t.Helper()
	state := stackFromEnv(t)
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	demo.Prepare(tpl)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := testenv.Name(t, "e2e")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, localdeploy.Teardown(context.Background(), deployed, clients)) })
	if rie {
		require.NotEmpty(t, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	}
	out := &testenv.Buffer{}
	sum, err := demo.Run(t.Context(), demo.Options{
		State: state, Template: tpl, Deployed: deployed, StackName: stack, Jobs: jobs, RIE: rie,
		Root: "..", LogDir: t.TempDir(), Out: out, Setenv: t.Setenv,
	})
	t.Logf("demo output:\n%s", out.String())
	require.NoError(t, err)
	return sum
}

// The whole pipeline, in process: the running example through all five
// functions, a cancelled job, bad requests and 200 jobs over six tenants,
// with every invariant checked against the tables, the bucket and the
// queues. Not parallel: it sets the endpoint variables of this process.
func TestPipelineEndToEnd(t *testing.T) {
	sum := runPipeline(t, 200, false)
	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, 202, sum.Jobs)
	require.Equal(t, 1, sum.Cancelled)
	require.Equal(t, sum.Jobs-1, sum.Completed+sum.Failed)
	require.Zero(t, sum.FailedUnexpectedly, "a job may fail only by running out of generations (a loaded machine)")
	require.Equal(t, 1, sum.DuplicateIntents)
	require.Equal(t, 3, sum.BadRequestsRefused)
	require.Equal(t, 1, sum.StaleAcceptsRejected, "worker A's late accept is refused")
	require.GreaterOrEqual(t, sum.OrphansSwept, 1, "A's candidate is swept")
	require.Zero(t, sum.ViewMismatches)
	require.Zero(t, sum.TotalMismatches)
	require.Zero(t, sum.ResultMismatches)
	require.Zero(t, sum.Lost)
	require.Positive(t, sum.EventsPublished)
}

// The same scenario with each function's built bootstrap under its own
// runtime interface emulator, as `make demo RIE=1` runs it.
func TestPipelineUnderTheRIE(t *testing.T) {
	sum := runPipeline(t, 8, true)
	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, "rie", sum.Mode)
	require.Equal(t, 1, sum.StaleAcceptsRejected)
	require.Zero(t, sum.Lost)
}
