//go:build integration

package test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/demo"
	"github.com/fifoworker/fifoworker/internal/localdeploy"
	"github.com/fifoworker/fifoworker/internal/pipeline"
	"github.com/fifoworker/fifoworker/internal/samtemplate"
	"github.com/fifoworker/fifoworker/internal/testenv"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/outbox"
)

// Each function's built bootstrap, under the runtime interface emulator
// with the settings template.yaml gives it, answers its events/ sample (the
// files `sam local invoke -e` takes). The test logs each bootstrap's size and
// its cold start: the first invocation's time minus the second's (the
// emulator's own "Init Duration" does not wait for the runtime's init, so it
// is not used). README: the figures.
func TestEachFunctionAnswersItsSampleUnderTheRIE(t *testing.T) {
	t.Parallel()
	state := stackFromEnv(t)
	require.NotEmpty(t, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := testenv.Name(t, "fn")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, localdeploy.Teardown(context.Background(), deployed, clients)) })

	dir := t.TempDir()
	bootstraps, err := pipeline.BuildBootstraps(t.Context(), "..", filepath.Join(dir, "bin"), "")
	require.NoError(t, err)
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		Mode: pipeline.UnderRIE, RIE: state.RIE, Bootstraps: bootstraps, LogDir: dir,
		Settings: map[string]map[string]string{"intake": {"TENANT_CLAIM": "tenant"}},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Stop()) }()

	sample := func(name string, v any) {
		raw, err := os.ReadFile(filepath.Join("../events", name))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, v), name)
	}
	cold := map[string]time.Duration{}
	invoke := func(fn string, event, out any) {
		start := time.Now()
		require.NoError(t, p.Invoke(t.Context(), fn, event, out), fn)
		if _, again := cold[fn]; !again {
			cold[fn] = time.Since(start)
			start = time.Now()
			require.NoError(t, p.Invoke(t.Context(), fn, event, out), fn) // warm: the same event again
			cold[fn] -= time.Since(start)
		}
	}
	var post events.APIGatewayV2HTTPRequest
	sample("http-post-job.json", &post)
	var created events.APIGatewayV2HTTPResponse
	invoke("intake", post, &created)
	require.Equal(t, 200, created.StatusCode, "the second POST of the same intent: %s", created.Body)

	var stream events.DynamoDBEvent
	sample("dynamodb-jobs-stream.json", &stream)
	var relayed events.DynamoDBEventResponse
	invoke("relay", stream, &relayed)
	require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: stream.Records[3].Change.SequenceNumber}}, relayed.BatchItemFailures,
		"the sample's malformed job-43 image is the record to retry")

	// The worker's sample commands run jobs that exist: created here, each
	// under the id and tenant its command names, with a few articles of
	// the tenant to export, so every command reaches claim, task and
	// accept. (Not under the command's own intent: the intake sample above
	// already made t-1's export-intent-7 the intent of the job it created.)
	var commands events.SQSEvent
	sample("sqs-commands-batch.json", &commands)
	const articles = 3
	require.NoError(t, demo.SeedArticles(t.Context(), state.DynamoDBClient(), deployed.Resources["ArticlesTable"], map[string]int{"t-1": articles}))
	jobStore := jobs.NewDynamoStore(state.DynamoDBClient(), deployed.Resources["JobsTable"])
	sampleJobs := map[string]bool{}
	for _, msg := range commands.Records {
		cmd, err := outbox.DecodeCommand(msg.Body)
		require.NoError(t, err, msg.MessageId)
		if sampleJobs[cmd.JobID] {
			continue
		}
		sampleJobs[cmd.JobID] = true
		res, err := jobStore.Create(t.Context(), jobs.CreateRequest{JobID: cmd.JobID, IntentID: "worker-sample-" + cmd.IntentID, Tenant: cmd.Tenant})
		require.NoError(t, err, cmd.JobID)
		require.Equal(t, cmd.JobID, res.Job.ID)
	}
	var worked events.SQSEventResponse
	invoke("worker", commands, &worked)
	require.Empty(t, worked.BatchItemFailures)
	for id := range sampleJobs {
		j, err := jobStore.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusCompleted, j.Status, "%s: %+v", id, j.Error)
		require.Equal(t, int64(1), j.Generation, id)
		require.Equal(t, int64(articles), j.Progress, id)
		require.NoError(t, jobs.ValidateResultKey(j.Result.Key, id, j.Generation, j.LeaseOwner), id)
		require.Positive(t, j.Result.Size, id)
	}

	var evts events.SQSEvent
	sample("sqs-events-batch.json", &evts)
	var projected events.SQSEventResponse
	invoke("projector", evts, &projected)
	require.Empty(t, projected.BatchItemFailures)

	var schedule map[string]any
	sample("schedule-sweeper.json", &schedule)
	var report map[string]any
	invoke("sweeper", schedule, &report)
	require.Equal(t, true, report["dry_run"])

	for _, fn := range pipeline.Functions {
		st, err := os.Stat(bootstraps[fn])
		require.NoError(t, err)
		t.Logf("%-9s bootstrap %5.2f MB (%s), cold start %v", fn, float64(st.Size())/1e6, runtime.GOARCH, cold[fn].Round(100*time.Microsecond))
	}
}
