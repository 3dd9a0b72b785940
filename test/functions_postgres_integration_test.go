//go:build integration

package test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// Each function of template-postgres.yaml, MigrateFunction among them, its
// bootstrap built with the postgres tag as that template's build makes it
// (pipeline.StoreTags), under the runtime interface emulator with the
// settings the template gives it, on a database of its own on the local
// stack's PostgreSQL, answers its events/ sample (postgresSamples), and
// within the 10 MB goal as deployed (linux/arm64). Init is measured as
// TestEachFunctionAnswersItsSampleUnderTheRIE measures it (Lambda's Init
// Duration, the emulator's INIT REPORT: the sample round and five more
// cold starts, each a fresh emulator invoked once with an event that
// changes nothing); no time is asserted.
func TestEachPostgresFunctionAnswersItsSampleUnderTheRIE(t *testing.T) {
	t.Parallel()
	d := deploySQS(t, "../template-postgres.yaml", "pg-fn")
	postgresSamples(t, postgresVariant{
		state: d.state, tpl: d.tpl, deployed: d.deployed, stack: d.stack, template: "template-postgres.yaml", transport: "sqs",
		published: func(t *testing.T) []string { return queuedJobs(t, d.state, d.deployed.Resources["CommandsQueue"]) },
		noop:      map[string]any{"worker": events.SQSEvent{}, "projector": events.SQSEvent{}},
	})
}

// TestEachPostgresFunctionAnswersItsSampleUnderTheRIE's for
// template-kafka-postgres.yaml: its bootstraps built with the kafka and the
// postgres tags, the relay producing to the stack's topics on the local
// broker.
func TestEachKafkaPostgresFunctionAnswersItsSampleUnderTheRIE(t *testing.T) {
	t.Parallel()
	k := deployKafkaTemplate(t, "../template-kafka-postgres.yaml", "kafka-pg-fn", nil)
	empty := events.KafkaEvent{EventSource: "SelfManagedKafka"}
	postgresSamples(t, postgresVariant{
		state: k.state, tpl: k.tpl, deployed: k.deployed, stack: k.stack, template: "template-kafka-postgres.yaml", transport: pipeline.KafkaTag,
		published: func(t *testing.T) []string {
			var ids []string
			for _, r := range readTopic(t, k.state.Kafka, k.stack+"-commands") {
				ids = append(ids, string(r.Key))
			}
			return ids
		},
		noop: map[string]any{"worker": empty, "projector": empty},
	})
}

// deploySQS deploys the SQS template at path under a stack name of its
// own, and tears it down after the test. No database is given the
// deployment: template-postgres.yaml's schema is MigrateFunction's to
// apply, as the stack's DatabaseSchema applies it before any function
// runs.
func deploySQS(t *testing.T, path, prefix string) localDeployment {
	t.Helper()
	state := testenv.Stack(t)
	tpl, err := samtemplate.Load(path)
	require.NoError(t, err)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, prefix)
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })
	return localDeployment{state: state, tpl: tpl, deployed: deployed, stack: stack}
}

// postgresVariant is a PostgreSQL template deployed on the local stack.
type postgresVariant struct {
	state     *localstack.State
	tpl       *samtemplate.Template
	deployed  *localdeploy.Result
	stack     string
	template  string // its file's name
	transport string // "sqs" or "kafka"
	// published lists the job of each command the relay published so far.
	published func(t *testing.T) []string
	// noop holds the worker's and the projector's events that change
	// nothing (an empty batch of their transport).
	noop map[string]any
}

// postgresSamples builds v's bootstraps and runs each under the emulator on
// a database of its own, in a stack's order:
//   - migrate answers its Create sample by applying the schema, and its
//     Update sample by applying nothing more, each answered SUCCESS at the
//     sample's ResponseURL (cfnResponses) with the golden answer;
//   - the relay answers its nudge and its scheduled event, each after a
//     job's creation wrote its outbox row, publishing it (the golden
//     report; the job's command reaches the commands destination), and a
//     redelivery of each (Lambda may deliver an asynchronous event twice)
//     publishes nothing;
//   - intake answers a GET of the job the samples name, the worker and the
//     projector an empty batch, the sweeper its dry run: nothing changes;
//   - migrate answers its Delete sample SUCCESS and drops nothing: the
//     schema's record and the jobs' rows are still there.
func postgresSamples(t *testing.T, v postgresVariant) {
	t.Helper()
	require.NotEmpty(t, v.state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	require.Contains(t, strings.Join(v.deployed.Skipped, "\n"), "DatabaseSchema (Custom::FifoworkerSchema): not applied",
		"the schema is migrate's to apply")
	db, dsn := postgresDatabase(t)
	tags := append(pipeline.TransportTags(v.transport), pipeline.StoreTags(pipeline.StorePostgres)...)
	bootstraps := buildPostgresBootstraps(t, pipeline.BootstrapConfig{Root: "..", Dir: filepath.Join(t.TempDir(), "bin"), Tags: tags})
	deployedBuild := buildPostgresBootstraps(t, pipeline.BootstrapConfig{Root: "..", Dir: filepath.Join(t.TempDir(), "arm64"), GOARCH: "arm64", Tags: tags})
	answers := newCFNResponses(t)
	endpoints := slices.DeleteFunc(v.state.Env(), func(kv string) bool { return strings.HasPrefix(kv, pgopen.DSNVar+"=") })
	start := func() (*pipeline.Pipeline, string) {
		logs := t.TempDir()
		p, err := pipeline.Build(t.Context(), pipeline.Config{
			Template: v.tpl, Deployed: v.deployed, StackName: v.stack, Region: v.state.Region,
			Endpoints: append(slices.Clone(endpoints), pgopen.DSNVar+"="+dsn),
			Mode:      pipeline.UnderRIE, RIE: v.state.RIE, Bootstraps: bootstraps, LogDir: logs,
			// The samples' bearer token names its tenant in the claim
			// "tenant", as the SQS samples' test tells intake.
			Settings: map[string]map[string]string{"intake": {"TENANT_CLAIM": "tenant"}},
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

	answers.invoke(t, p, "cfn-schema-create.json")
	schema := schemaRecord(t, db)
	applied := map[string]bool{}
	for _, m := range schema {
		applied[strings.Fields(m)[0]] = true
	}
	require.Equal(t, map[string]bool{"jobs": true, "projection": true, "quarantine": true}, applied, "Create applied each component's migrations: %q", schema)
	answers.invoke(t, p, "cfn-schema-update.json")
	require.Equal(t, schema, schemaRecord(t, db), "Update applied nothing more")

	store, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db})
	require.NoError(t, err)
	for i, sample := range []string{"nudge-relay.json", "schedule-relay.json"} {
		// job-42 is the samples' running example (docs/ARCHITECTURE.md);
		// job-43 the next.
		job := []string{"job-42", "job-43"}[i]
		_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: job, IntentID: "export-intent-" + job, Tenant: "t-1"})
		require.NoError(t, err, job)
		var event json.RawMessage
		readSample(t, sample, &event)
		invokeGolden(t, p, "relay", event, strings.TrimSuffix(sample, ".json")+"-response.json")
		var again pgsource.Report
		require.NoError(t, p.Invoke(t.Context(), "relay", event, &again))
		require.Equal(t, pgsource.Report{Stop: pgsource.StopEmpty}, again, "%s delivered again publishes nothing", sample)
		require.Contains(t, v.published(t), job, "%s: the relay published %s's command", sample, job)
	}

	var get events.APIGatewayV2HTTPRequest
	readSample(t, "http-get-job.json", &get)
	var got events.APIGatewayV2HTTPResponse
	require.NoError(t, p.Invoke(t.Context(), "intake", get, &got))
	require.Equal(t, http.StatusOK, got.StatusCode, got.Body)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Body), &view))
	require.Equal(t, "job-42", view["job_id"], got.Body)
	require.Equal(t, string(jobs.StatusPending), view["status"], got.Body)
	for _, fn := range []string{"worker", "projector"} {
		var resp struct{ BatchItemFailures []any }
		require.NoError(t, p.Invoke(t.Context(), fn, v.noop[fn], &resp), fn)
		require.Empty(t, resp.BatchItemFailures, fn)
	}
	var schedule map[string]any
	readSample(t, "schedule-sweeper.json", &schedule)
	var report map[string]any
	require.NoError(t, p.Invoke(t.Context(), "sweeper", schedule, &report))
	require.Equal(t, true, report["dry_run"])

	answers.invoke(t, p, "cfn-schema-delete.json")
	require.Equal(t, schema, schemaRecord(t, db), "Delete drops nothing of the schema")
	var kept int
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM jobs WHERE job_id IN ('job-42', 'job-43')`).Scan(&kept))
	require.Equal(t, 2, kept, "Delete keeps the jobs: the data outlives the stack")

	require.NoError(t, p.Stop())
	stopped = true

	// Init, from this round and from five more cold starts.
	var scheduled json.RawMessage
	readSample(t, "schedule-relay.json", &scheduled)
	noop := map[string]any{ // events that change nothing
		"intake": get, "relay": scheduled, "worker": v.noop["worker"], "projector": v.noop["projector"],
		"sweeper": schedule, pipeline.MigrateFunction: answers.event(t, "cfn-schema-delete.json"),
	}
	inits := map[string][]time.Duration{}
	for fn := range noop {
		init, _ := rieDurations(t, filepath.Join(logs, fn+".rie.log"))
		inits[fn] = []time.Duration{init}
	}
	for fn, d := range coldStarts(t, 5, start, noop) {
		inits[fn] = append(inits[fn], d...)
	}
	for _, fn := range slices.Sorted(maps.Keys(noop)) {
		require.Len(t, inits[fn], 6, fn)
		t.Log(coldStartLine(fn, v.transport+"+pg", fileSize(t, deployedBuild[fn]), fileSize(t, bootstraps[fn]), inits[fn]))
	}
	// Every function's size is checked, and each over the goal reported.
	for _, fn := range slices.Sorted(maps.Keys(noop)) {
		requireWithinBootstrapGoal(nonFatal{t}, v.template, fn, fileSize(t, deployedBuild[fn]))
	}
}

// nonFatal is a require.TestingT that reports a failure and lets the test
// go on.
type nonFatal struct{ t *testing.T }

func (n nonFatal) Errorf(format string, args ...any) { n.t.Helper(); n.t.Errorf(format, args...) }
func (n nonFatal) FailNow()                          {}

// buildPostgresBootstraps builds each function's bootstrap and
// MigrateFunction's as cfg says.
func buildPostgresBootstraps(t *testing.T, cfg pipeline.BootstrapConfig) map[string]string {
	t.Helper()
	out, err := pipeline.BuildBootstrapsFor(t.Context(), cfg)
	require.NoError(t, err)
	out[pipeline.MigrateFunction], err = pipeline.BuildMigrateBootstrap(t.Context(), cfg)
	require.NoError(t, err)
	return out
}

// postgresDatabase is a pool on a new, empty database of the stack's
// server (pgtest.DB), and the connection string that names it for the
// functions (FIFOWORKER_POSTGRES_DSN): the server's, with the database's
// name as its path.
func postgresDatabase(t *testing.T) (*sql.DB, string) {
	t.Helper()
	db := pgtest.DB(t)
	var name string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_database()`).Scan(&name))
	u, err := url.Parse(pgtest.RequireServer(t))
	require.NoError(t, err)
	require.Contains(t, []string{"postgres", "postgresql"}, u.Scheme, "%s is a PostgreSQL URL", pgtest.DSNVar)
	u.Path, u.RawPath = "/"+name, ""
	return db, u.String()
}

// schemaRecord is what fifoworker_schema records, one "component version
// name sha256" a migration.
func schemaRecord(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var all string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT coalesce(string_agg(component || ' ' || lpad(version::text, 4, '0') || ' ' || name || ' ' || sha256, E'\n' ORDER BY component, version), '') FROM fifoworker_schema`).Scan(&all))
	return strings.Split(all, "\n")
}

// queuedJobs lists the job of each command on the queue at url, received
// (and left to come back after its visibility timeout).
func queuedJobs(t *testing.T, state *localstack.State, url string) []string {
	t.Helper()
	out, err := state.SQSClient().ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 1,
	})
	require.NoError(t, err)
	var ids []string
	for _, m := range out.Messages {
		cmd, err := outbox.DecodeCommand(aws.ToString(m.Body))
		require.NoError(t, err)
		ids = append(ids, cmd.JobID)
	}
	return ids
}

// invokeGolden invokes fn with event, and its response is the golden one,
// events/golden.
func invokeGolden(t *testing.T, p *pipeline.Pipeline, fn string, event any, golden string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("../events", golden))
	require.NoError(t, err)
	var got json.RawMessage
	require.NoError(t, p.Invoke(t.Context(), fn, event, &got), fn)
	require.JSONEq(t, string(want), string(got), "%s's response to %s", fn, golden)
}

// cfnResponses stands in for the presigned S3 URLs CloudFormation gives a
// custom resource request (its ResponseURL), on 127.0.0.1: the samples'
// ResponseURL is a presigned URL of the form CloudFormation sends, which
// event gives the function with its scheme and host this server's, its
// path and query kept, so that migrate answers here. It takes the answers
// PUT, as S3 does, with no Content-Type (the URL is signed for none).
type cfnResponses struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []cfnAnswer
}

// cfnAnswer is a request the server took.
type cfnAnswer struct {
	method, path, query, contentType string
	body                             []byte
}

func newCFNResponses(t *testing.T) *cfnResponses {
	t.Helper()
	r := &cfnResponses{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, cfnAnswer{method: req.Method, path: req.URL.EscapedPath(), query: req.URL.RawQuery, contentType: req.Header.Get("Content-Type"), body: body})
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// event is the sample events/name, its ResponseURL this server's.
func (r *cfnResponses) event(t *testing.T, name string) cfn.Event {
	t.Helper()
	var ev cfn.Event
	raw := readSample(t, name, &ev)
	again, err := json.Marshal(ev)
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(again), "%s: every field of the sample is one of the request's", name)
	u, err := url.Parse(ev.ResponseURL)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme, "%s: a presigned S3 URL", name)
	local, err := url.Parse(r.srv.URL)
	require.NoError(t, err)
	u.Scheme, u.Host = local.Scheme, local.Host
	ev.ResponseURL = u.String()
	return ev
}

// migrateBound bounds a migrate invocation, so that a test that fails
// says why in seconds, not minutes: on the local server a Create applies
// in well under a second, and one still running after this is trying
// again what it takes for an unreachable database, until its deadline
// (the template's 300 s less its answer's reserve). Not a time asserted:
// the bound is 30 times what is needed.
const migrateBound = 30 * time.Second

// invoke invokes migrate with the sample events/name, and its answer is
// the only request the server took meanwhile: a PUT to the sample's
// presigned path and query, with no Content-Type, of the golden body
// events/<name>-response.json (what CloudFormation reads).
func (r *cfnResponses) invoke(t *testing.T, p *pipeline.Pipeline, name string) {
	t.Helper()
	ev := r.event(t, name)
	want, err := os.ReadFile(filepath.Join("../events", strings.TrimSuffix(name, ".json")+"-response.json"))
	require.NoError(t, err)
	r.mu.Lock()
	before := len(r.got)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), migrateBound)
	defer cancel()
	if err := p.Invoke(ctx, pipeline.MigrateFunction, ev, nil); err != nil {
		log, _ := os.ReadFile(p.RIE(pipeline.MigrateFunction).Log)
		t.Fatalf("%s: %v; migrate's log ends:\n%s", name, err, log[max(0, len(log)-4096):])
	}
	r.mu.Lock()
	got := slices.Clone(r.got[before:])
	r.mu.Unlock()
	require.Len(t, got, 1, "%s: one answer", name)
	u, err := url.Parse(ev.ResponseURL)
	require.NoError(t, err)
	require.Equal(t, cfnAnswer{method: http.MethodPut, path: u.EscapedPath(), query: u.RawQuery, body: got[0].body}, got[0], name)
	require.JSONEq(t, string(want), string(got[0].body), "%s: the answer", name)
}
