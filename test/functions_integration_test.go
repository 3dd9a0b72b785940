//go:build integration

package test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Each function's built bootstrap, under the runtime interface emulator
// with the settings template.yaml gives it, answers its events/ sample (the
// files `sam local invoke -e` takes).
//
// It also measures them (docs/BENCHMARKS.md, "Measured"): the size of each bootstrap as
// deployed (linux/arm64, BuildFlags), asserted at most 10 MB as a guard
// against regressions, and its init under the emulator. Init is what Lambda
// reports as Init Duration, the time from starting the bootstrap to its
// first request for an event; the emulator logs it ("INIT REPORT"), and the
// test reads it there, from the first round and from a few more cold
// starts of every function (fresh emulators, each invoked once with an
// event that changes nothing). The emulator runs the host's build, so init
// is measured on the host's architecture. The samples' first and second
// invocations are logged too (the emulator's "INVOKE RTDONE" durations);
// they are not the function's cold start: the second does different work
// (intake's replays the first's intent, the projector's events are already
// applied), and the local DynamoDB's first transactions on a new table are
// slow. No time is asserted.
func TestEachFunctionAnswersItsSampleUnderTheRIE(t *testing.T) {
	t.Parallel()
	d := deploySQS(t, "../template.yaml", "fn")
	state, tpl, stack, deployed := d.state, d.tpl, d.stack, d.deployed
	require.NotEmpty(t, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")

	bootstraps, err := pipeline.BuildBootstraps(t.Context(), "..", filepath.Join(t.TempDir(), "bin"), "")
	require.NoError(t, err)
	deployedBuild, err := pipeline.BuildBootstraps(t.Context(), "..", filepath.Join(t.TempDir(), "arm64"), "arm64")
	require.NoError(t, err)
	start := func() (*pipeline.Pipeline, string) {
		logs := t.TempDir()
		p, err := pipeline.Build(t.Context(), pipeline.Config{
			Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
			Mode: pipeline.UnderRIE, RIE: state.RIE, Bootstraps: bootstraps, LogDir: logs,
			// The SQS samples come from the queues of a stack named
			// fifoworker in eu-west-1: the consumers' quarantines are
			// told so, as `sam local invoke --env-vars` would.
			Settings: map[string]map[string]string{
				"intake":    {"TENANT_CLAIM": "tenant"},
				"worker":    {"COMMANDS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:fifoworker-commands.fifo"},
				"projector": {"EVENTS_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:fifoworker-events.fifo"},
			},
		})
		require.NoError(t, err)
		return p, logs
	}
	p, logs := start()
	stopped := false
	defer func() {
		if !stopped {
			require.NoError(t, p.Stop())
		}
	}()

	sample := func(name string, v any) {
		raw, err := os.ReadFile(filepath.Join("../events", name))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, v), name)
	}
	invoked := map[string]bool{}
	invoke := func(fn string, event, out any) {
		require.NoError(t, p.Invoke(t.Context(), fn, event, out), fn)
		if !invoked[fn] {
			invoked[fn] = true
			require.NoError(t, p.Invoke(t.Context(), fn, event, out), fn) // warm: the same event again
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
	jobStore, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: state.DynamoDBClient(), Table: deployed.Resources["JobsTable"]})
	require.NoError(t, err)
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

	require.NoError(t, p.Stop())
	stopped = true

	// Init, from this round and from further cold starts.
	inits := map[string][]time.Duration{}
	first := map[string][]time.Duration{}
	for _, fn := range pipeline.Functions {
		init, invokes := rieDurations(t, filepath.Join(logs, fn+".rie.log"))
		inits[fn], first[fn] = []time.Duration{init}, invokes
	}
	var get events.APIGatewayV2HTTPRequest
	sample("http-get-job.json", &get)
	noop := map[string]any{ // events that change nothing
		"intake": get, "relay": events.DynamoDBEvent{}, "worker": events.SQSEvent{},
		"projector": events.SQSEvent{}, "sweeper": schedule, // a dry run
	}
	for fn, d := range coldStarts(t, 5, start, noop) {
		inits[fn] = append(inits[fn], d...)
	}

	for _, fn := range pipeline.Functions {
		deployedSize := fileSize(t, deployedBuild[fn])
		requireWithinBootstrapGoal(t, "template.yaml", fn, deployedSize)
		t.Logf("%s; sample invoked %v, then %v", coldStartLine(fn, "sqs", deployedSize, fileSize(t, bootstraps[fn]), inits[fn]), first[fn][0], first[fn][1])
	}
}

// coldStarts starts the pipeline rounds times (start gives each function
// a fresh emulator, and the directory of their logs), invokes each
// function of noop once with noop's event for it, one that changes
// nothing, and returns each function's init in every round, from the
// emulators' logs.
func coldStarts(t *testing.T, rounds int, start func() (*pipeline.Pipeline, string), noop map[string]any) map[string][]time.Duration {
	t.Helper()
	inits := map[string][]time.Duration{}
	fns := slices.Sorted(maps.Keys(noop))
	for range rounds {
		p, logs := start()
		for _, fn := range fns {
			require.NoError(t, p.Invoke(t.Context(), fn, noop[fn], nil), fn)
		}
		require.NoError(t, p.Stop())
		for _, fn := range fns {
			init, _ := rieDurations(t, filepath.Join(logs, fn+".rie.log"))
			inits[fn] = append(inits[fn], init)
		}
	}
	return inits
}

// coldStartLine is a function's line of bench/coldstart.txt: its
// bootstrap's size as deployed (linux/arm64) and as the emulator runs it
// (the host's), and its init's median, least and most over its cold
// starts (inits, sorted here).
func coldStartLine(fn, transport string, deployed, host int64, inits []time.Duration) string {
	slices.Sort(inits)
	return fmt.Sprintf("%-9s %-5s bootstrap %5.2f MB (linux/arm64; the emulator's %s build: %5.2f MB), init median %v [%v … %v] over %d cold starts",
		fn, transport, float64(deployed)/1e6, runtime.GOARCH, float64(host)/1e6, inits[len(inits)/2], inits[0], inits[len(inits)-1], len(inits))
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}

// The emulator's log lines of a function's init and invocations:
//
//	INIT REPORT(durationMs: 5.090000)
//	INVOKE RTDONE(status: success, produced bytes: 0, duration: 0.656000ms)
var (
	rieInitReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	rieInvokeDone = regexp.MustCompile(`INVOKE RTDONE\(status: \w+, produced bytes: \d+, duration: ([0-9.]+)ms\)`)
)

// rieDurations reads a function's init and its invocations' durations from
// its emulator's log, once the emulator has stopped.
func rieDurations(t testing.TB, log string) (time.Duration, []time.Duration) {
	t.Helper()
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	ms := func(s string) time.Duration {
		f, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		return time.Duration(f * float64(time.Millisecond)).Round(10 * time.Microsecond)
	}
	m := rieInitReport.FindSubmatch(raw)
	require.NotNil(t, m, "no INIT REPORT line in %s", log)
	var invokes []time.Duration
	for _, m := range rieInvokeDone.FindAllSubmatch(raw, -1) {
		invokes = append(invokes, ms(string(m[1])))
	}
	require.NotEmpty(t, invokes, "no INVOKE RTDONE line in %s", log)
	return ms(string(m[1])), invokes
}
