// Package demo is the pipeline's demonstration and its end-to-end check:
// on a deployed local stack it seeds articles, sends jobs through the HTTP
// API (the running example of docs/ARCHITECTURE.md among them: a repeated
// intent, worker A's accept delayed past its lease, generation 2 winning,
// A's orphan swept; a cancelled job; bad requests; a few hundred jobs across
// tenants), runs the five functions through internal/dev/pipeline, and then
// holds the tables, the bucket and the queues to the invariants. `make demo`
// runs it on a fresh stack; test/ runs it on the test stack. On
// template-kafka.yaml it runs the same on Kafka (kafka.go says what
// differs, and what is not checked there yet).
package demo

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
)

// Summary is the demo's result; its JSON is the demo's last line, for
// scripts.
type Summary struct {
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// FailedUnexpectedly counts failed jobs whose failure is not the
	// recovery policy's: a job whose every generation ran out of time (a
	// slow machine) fails correctly; any other failure is a defect.
	FailedUnexpectedly   int     `json:"failed_unexpectedly"`
	Cancelled            int     `json:"cancelled"`
	DuplicateIntents     int     `json:"duplicate_intents"`
	BadRequestsRefused   int     `json:"bad_requests_refused"`
	StaleAcceptsRejected int     `json:"stale_accepts_rejected"`
	OrphansSwept         int     `json:"orphans_swept"`
	EventsPublished      int64   `json:"events_published"`
	ViewMismatches       int     `json:"view_mismatches"`
	TotalMismatches      int     `json:"total_mismatches"`
	ResultMismatches     int     `json:"result_mismatches"`
	WordCounted          int     `json:"word_counted"` // word-count jobs (the second task) completed with the right result
	GroupsHeld           int     `json:"groups_held"`
	Parked               int     `json:"parked"`
	Redriven             int     `json:"redriven"`
	OrderKept            bool    `json:"order_kept"`
	Lost                 int     `json:"lost"`
	ElapsedS             float64 `json:"elapsed_s"`
	JobsPerS             float64 `json:"jobs_per_s"`
	Mode                 string  `json:"mode"`
	// Transport is the template's: "sqs" (template.yaml) or "kafka"
	// (template-kafka.yaml).
	Transport string `json:"transport"`
	// Store is the arbiter's: "dynamodb" (template.yaml,
	// template-kafka.yaml) or "postgres" (template-postgres.yaml).
	Store string `json:"store"`
	// Skipped names the parts of the demo not run on this transport, and
	// so not checked: [] when none, as today on both (the poison job runs
	// on Kafka too, the Kafka quarantine and its redrive having landed).
	// A run that skipped a part is not OK.
	Skipped []string `json:"skipped"`
	OK      bool     `json:"ok"`
}

// The demo's shortened timeouts: a worker has 6 s, and a command that
// failed returns after 36 s (6 x 6), so the running example's takeover
// happens within the demo instead of after 6 minutes.
const (
	WorkerTimeout = 6
	Visibility    = 6 * WorkerTimeout
)

// Prepare sets the template's parameters to the demo's timeouts; deploy
// the template after it.
func Prepare(tpl *samtemplate.Template) { SetWorkerTimeout(tpl, WorkerTimeout) }

// SetWorkerTimeout sets the template's worker timeout to seconds; the
// template's WorkerTimeouts mapping gives the commands queue's visibility
// timeout, 6 times that (AWS's rule for a queue that triggers a function).
func SetWorkerTimeout(tpl *samtemplate.Template, seconds int) {
	p := tpl.Parameters["WorkerTimeout"]
	p.Type, p.Default = "Number", seconds
	tpl.Parameters["WorkerTimeout"] = p // its AllowedValues kept: local deploy refuses another value
}

// Options say where the demo runs.
type Options struct {
	State     *localstack.State // the stack's endpoints, region and RIE binary
	Template  *samtemplate.Template
	Deployed  *localdeploy.Result
	StackName string
	Jobs      int    // bulk jobs across tenants (default 300)
	RIE       bool   // run the built bootstraps under the runtime interface emulator
	Root      string // the module's root, to build bootstraps from
	LogDir    string // functions.log, RIE logs and bootstraps
	Out       io.Writer
	// Setenv sets a variable of this process for the in-process functions'
	// SDK configuration (default os.Setenv; tests pass t.Setenv).
	Setenv func(key, value string)
	// Route, when set, gives the endpoint the functions use for a service
	// instead of the one the demo would give them: it is called once for
	// each of AWS_ENDPOINT_URL_DYNAMODB (whose endpoint is then the demo's
	// delaying proxy), AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_S3. In
	// process the event source mappings share the functions' environment,
	// so their SQS requests take the same route (their stream reads do
	// not). The demo's own requests (seeding, the poison job's sends and
	// redrive, every check) keep the stack's endpoints. Tests put a fault
	// proxy there (internal/dev/faultproxy).
	Route func(variable, endpoint string) (string, error)
	// Started, when set, is called with the pipeline once it is built,
	// before any request is sent.
	Started func(*pipeline.Pipeline)
}

// Run runs the demo; the summary says whether every invariant held.
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.Jobs == 0 {
		o.Jobs = 300
	}
	if o.Setenv == nil {
		o.Setenv = func(k, v string) { _ = os.Setenv(k, v) }
	}
	d := &demoRun{out: o.Out, state: o.State, tpl: o.Template, res: o.Deployed, bulk: o.Jobs, rie: o.RIE, o: o, seen: map[string]bool{}}
	return d.run(ctx)
}

// demoRun is one run of the demo.
type demoRun struct {
	o     Options
	out   io.Writer
	state *localstack.State
	tpl   *samtemplate.Template
	res   *localdeploy.Result
	bulk  int
	rie   bool

	ddb  *dynamodb.Client
	db   *sql.DB // the stack's PostgreSQL, on PostgreSQL
	p    *pipeline.Pipeline
	hold *faultproxy.Proxy
	// pgHold holds worker A's accept on its way to PostgreSQL, on
	// PostgreSQL.
	pgHold *faultproxy.PostgresProxy

	events    atomic.Int64 // events the projector consumed
	seenMu    sync.Mutex
	seen      map[string]bool  // the event ids (job-42/v3) the projector consumed
	committed map[string]int64 // on Kafka: the projector's commit per topic-partition (under seenMu)
	submitted []demoJob
	sum       Summary
}

// kafka says whether the demo runs on Kafka.
func (d *demoRun) kafka() bool { return d.sum.Transport == kafkaTransport }

type demoJob struct {
	id, tenant, intent, role string
	task                     string // the spec's task; "" is the default, the export
	articles                 int
}

var demoTenants = []string{"t-1", "t-2", "t-3", "t-4", "t-5", "t-6"}

// The running example's intent and the job it creates.
const exampleIntent = "export-intent-7"

func (d *demoRun) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func (d *demoRun) run(ctx context.Context) (Summary, error) {
	start := time.Now()
	d.sum.Mode = "in-process"
	if d.rie {
		d.sum.Mode = "rie"
	}
	d.sum.Transport, d.sum.Store, d.sum.Skipped = pipeline.TemplateTransport(d.tpl), pipeline.TemplateStore(d.tpl), []string{}
	if d.postgres() {
		if err := d.openDatabase(); err != nil {
			return d.sum, err
		}
		defer func() { _ = d.db.Close() }()
	}
	for _, kv := range d.state.Env() {
		k, v, _ := strings.Cut(kv, "=")
		d.o.Setenv(k, v)
	}
	d.ddb = d.state.DynamoDBClient()
	articles, err := d.seedArticles(ctx)
	if err != nil {
		return d.sum, err
	}
	exampleJob := jobs.DeriveJobID("t-1", exampleIntent)
	// Worker A's accept of the running example is held on its way to
	// DynamoDB until generation 2 has won: every function reaches DynamoDB
	// through this proxy, which lets everything else through.
	jobsTable := d.res.Resources["JobsTable"]
	dynamoEndpoint := d.state.DynamoDB
	if dynamoEndpoint == "" {
		dynamoEndpoint = d.state.External
	}
	d.hold, err = faultproxy.New(faultproxy.Config{Service: faultproxy.DynamoDB, Target: dynamoEndpoint,
		Hold: func(op string, body []byte) bool {
			// The first accept of the example: the one UpdateItem on the
			// Jobs table that records a result.
			b := string(body)
			return op == "UpdateItem" && strings.Contains(b, `"TableName":"`+jobsTable+`"`) &&
				strings.Contains(b, `"`+exampleJob+`"`) && strings.Contains(b, "result_key")
		}})
	if err != nil {
		return d.sum, err
	}
	defer func() { _ = d.hold.Close() }() //nolint:contextcheck // the proxy is stopped whatever became of ctx
	d.o.Setenv("AWS_ENDPOINT_URL_DYNAMODB", d.hold.URL)
	endpoints := d.state.Env()
	for i, kv := range endpoints {
		if strings.HasPrefix(kv, "AWS_ENDPOINT_URL_DYNAMODB=") {
			endpoints[i] = "AWS_ENDPOINT_URL_DYNAMODB=" + d.hold.URL
		}
	}
	if d.postgres() {
		var stop func()
		if endpoints, stop, err = d.holdPostgres(exampleJob, endpoints); err != nil {
			return d.sum, err
		}
		defer stop() //nolint:contextcheck // the proxy is stopped whatever became of ctx
	}
	if endpoints, err = d.route(endpoints); err != nil {
		return d.sum, err
	}

	cfg := pipeline.Config{
		Template: d.tpl, Deployed: d.res, StackName: d.o.StackName, Region: d.state.Region, Endpoints: endpoints,
		LogDir:   d.o.LogDir,
		Settings: map[string]map[string]string{"sweeper": {"SWEEP_GRACE": "1s"}},
		OnSQSBatch: func(fn string, r localesm.SQSBatchResult) {
			if fn != "projector" {
				return
			}
			// Consumed: every record of a batch the projector processed
			// whole, else the ones the mapping deleted (those the function
			// did not report failed). A delete can fail after one of the
			// SDK's tries landed, its answer lost: the record was consumed
			// all the same. What the queues still hold is checked apart
			// (drain, queuesLeft).
			consumed := map[string]bool{}
			for _, id := range r.Deleted {
				consumed[id] = true
			}
			if r.Outcome == localesm.OutcomeSuccess {
				for _, rec := range r.Records {
					consumed[rec.MessageId] = true
				}
			}
			d.events.Add(int64(len(consumed)))
			d.seenMu.Lock()
			defer d.seenMu.Unlock()
			for _, rec := range r.Records {
				if consumed[rec.MessageId] {
					d.seen[rec.Attributes["MessageDeduplicationId"]] = true
				}
			}
		},
		OnKafkaBatch: d.onKafkaBatch,
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return d.sum, err
	}
	logPath := filepath.Join(cfg.LogDir, "functions.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return d.sum, err
	}
	defer func() { _ = logFile.Close() }()
	cfg.Logger = slog.New(slog.NewJSONHandler(logFile, nil))
	if d.rie {
		cfg.Mode, cfg.RIE = pipeline.UnderRIE, d.state.RIE
		build := pipeline.BootstrapConfig{Root: d.o.Root, Dir: filepath.Join(cfg.LogDir, "bootstraps"),
			Tags: append(pipeline.TransportTags(d.sum.Transport), pipeline.StoreTags(d.sum.Store)...)}
		d.say("building the five bootstraps (%s) ...", build.Describe())
		cfg.Bootstraps, err = pipeline.BuildBootstrapsFor(ctx, build)
		if err != nil {
			return d.sum, err
		}
	}
	d.p, err = pipeline.Build(ctx, cfg)
	if err != nil {
		return d.sum, err
	}
	defer func() {
		if err := d.p.Stop(); err != nil {
			d.say("a mapping failed: %v", err)
			d.sum.OK = false
		}
	}()
	d.say("functions: intake, relay, worker, projector, sweeper (%s); their log: %s", d.sum.Mode, logPath)
	if d.o.Started != nil {
		d.o.Started(d.p)
	}

	if err := d.submit(ctx, articles); err != nil {
		return d.sum, err
	}
	d.p.Run(ctx)
	if d.kafka() {
		d.say("event source mappings started: Jobs stream → relay → topic %s → worker; topic %s → projector",
			d.res.Outputs["CommandsTopic"], d.res.Outputs["EventsTopic"])
	} else if d.postgres() {
		d.say("event source mappings started: job_outbox → relay (the writers' nudges, a backstop schedule) → commands.fifo → worker; events.fifo → projector")
	} else {
		d.say("event source mappings started: Jobs stream → relay → commands.fifo → worker; events.fifo → projector")
	}
	if err := d.poison(ctx, articles); err != nil {
		return d.sum, err
	}
	if err := d.waitFinal(ctx, exampleJob); err != nil {
		return d.sum, err
	}
	if err := d.sweep(ctx); err != nil {
		return d.sum, err
	}
	drain := d.drain
	if d.kafka() {
		drain = d.drainKafka
	}
	if err := drain(ctx); err != nil {
		return d.sum, err
	}
	if err := d.check(ctx, articles); err != nil {
		return d.sum, err
	}
	d.sum.ElapsedS = round2(time.Since(start).Seconds())
	d.sum.JobsPerS = round2(float64(d.sum.Jobs) / d.sum.ElapsedS)
	d.sum.OK = d.sum.ok()
	return d.sum, nil
}

// ok says whether every invariant held, every part of the demo run.
func (s Summary) ok() bool {
	return s.ViewMismatches == 0 && s.TotalMismatches == 0 && s.ResultMismatches == 0 && s.Lost == 0 &&
		s.FailedUnexpectedly == 0 && s.Completed > 0 &&
		s.StaleAcceptsRejected == 1 && s.OrphansSwept >= 1 && s.DuplicateIntents == 1 && s.Cancelled == 1 &&
		s.Completed+s.Failed+s.Cancelled == s.Jobs &&
		s.GroupsHeld == 1 && s.Parked == 3 && s.Redriven == 3 && s.OrderKept && len(s.Skipped) == 0
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// route applies Options.Route to the functions' DynamoDB, SQS and S3
// endpoints, in endpoints (what functions under the RIE get) and in this
// process's environment (what in-process functions and the mappings read).
func (d *demoRun) route(endpoints []string) ([]string, error) {
	if d.o.Route == nil {
		return endpoints, nil
	}
	for _, name := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_S3"} {
		at, current := -1, d.state.External
		if name == "AWS_ENDPOINT_URL_DYNAMODB" {
			current = d.hold.URL
		}
		for i, kv := range endpoints {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				at, current = i, v
			}
		}
		routed, err := d.o.Route(name, current)
		if err != nil {
			return nil, fmt.Errorf("demo: route %s: %w", name, err)
		}
		if at < 0 {
			endpoints = append(endpoints, name+"="+routed)
		} else {
			endpoints[at] = name + "=" + routed
		}
		d.o.Setenv(name, routed)
	}
	return endpoints, nil
}

// seedArticles writes each tenant's articles and returns how many each has.
func (d *demoRun) seedArticles(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{}
	total := 0
	for i, tenant := range demoTenants {
		counts[tenant] = 40 + 37*i // 40 to 225 articles
		total += counts[tenant]
	}
	if err := SeedArticles(ctx, d.ddb, d.res.Resources["ArticlesTable"], counts); err != nil {
		return nil, err
	}
	d.say("seeded %d articles for %d tenants", total, len(demoTenants))
	return counts, nil
}

// SeedArticles writes counts[tenant] articles for each tenant into table,
// the reference task's input: a-00000, a-00001, ... with a title and a
// word count.
func SeedArticles(ctx context.Context, ddb *dynamodb.Client, table string, counts map[string]int) error {
	var reqs []ddbtypes.WriteRequest
	flush := func() error {
		for len(reqs) > 0 {
			out, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{table: reqs}})
			if err != nil {
				return fmt.Errorf("seed articles: %w", err)
			}
			reqs = out.UnprocessedItems[table]
		}
		return nil
	}
	for tenant, n := range counts {
		for a := range n {
			reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{
				"tenant":     &ddbtypes.AttributeValueMemberS{Value: tenant},
				"article_id": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("a-%05d", a)},
				"title":      &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("Article %d of %s", a, tenant)},
				"words":      &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(200 + a%500)},
			}}})
			if len(reqs) == 25 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// APIRequest builds an HTTP API request as API Gateway hands it to intake
// after its JWT authorizer verified the caller (the tenant claim "tenant",
// template.yaml's TenantClaim, as the local stack's identity provides it),
// with key as its Idempotency-Key when not "". tenant "" is an anonymous
// request.
func APIRequest(method, path, tenant, key, body string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			Stage: "$default", RequestID: strconv.FormatInt(time.Now().UnixNano(), 36),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1"},
		},
	}
	if key != "" {
		req.Headers["idempotency-key"] = key
	}
	if tenant != "" {
		req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": tenant, "sub": "demo-" + tenant}},
		}
	}
	return req
}

// answerErr says why a request of the scenario did not get the answer it
// needed: the invocation failed, or intake answered another status.
func answerErr(what string, status int, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: intake answered %d", what, status)
}

// send sends req to intake as an API client does: an answer of 500 or
// more (intake's, when DynamoDB kept failing through the SDK's retries) is
// sent again, with the same Idempotency-Key, up to 4 tries in all. retried
// says whether it was.
func (d *demoRun) send(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, retried bool, err error) {
	for try := 1; ; try++ {
		resp, err = d.p.HTTP(ctx, req)
		if err != nil || resp.StatusCode < 500 || try == 4 {
			return resp, try > 1, err
		}
		d.say("%s %s (%s) answered %d; sent again", req.RequestContext.HTTP.Method, req.RawPath, req.Headers["idempotency-key"], resp.StatusCode)
		select {
		case <-ctx.Done():
			return resp, true, ctx.Err()
		case <-time.After(time.Duration(100<<try) * time.Millisecond):
		}
	}
}

// post submits a job and returns its id. For an intent not sent before
// (fresh), a 200 after a retry (send) means that an earlier try, answered
// with a 5xx, created the job: the status is then 202, as if that try had
// been answered.
func (d *demoRun) post(ctx context.Context, tenant, intent string, pageSize int, fresh bool) (string, int, error) {
	return d.postSpec(ctx, tenant, intent, fmt.Sprintf(`{"page_size":"%d"}`, pageSize), fresh)
}

// postSpec is post with the spec's JSON.
func (d *demoRun) postSpec(ctx context.Context, tenant, intent, spec string, fresh bool) (string, int, error) {
	resp, retried, err := d.send(ctx, APIRequest(http.MethodPost, "/jobs", tenant, intent, `{"spec":`+spec+`}`))
	if err != nil {
		return "", 0, err
	}
	if fresh && retried && resp.StatusCode == http.StatusOK {
		resp.StatusCode = http.StatusAccepted
	}
	var body struct {
		JobID string `json:"job_id"`
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
			return "", 0, fmt.Errorf("intake answered %d with %q", resp.StatusCode, resp.Body)
		}
	}
	return body.JobID, resp.StatusCode, nil
}

// submit sends the demo's requests through intake before the mappings
// start, so the stream holds a burst of creations.
func (d *demoRun) submit(ctx context.Context, articles map[string]int) error {
	id, status, err := d.post(ctx, "t-1", exampleIntent, 25, true)
	if err != nil || status != http.StatusAccepted {
		return answerErr("the running example", status, err)
	}
	d.submitted = append(d.submitted, demoJob{id: id, tenant: "t-1", intent: exampleIntent, role: "running example: A stalls, B wins", articles: articles["t-1"]})
	d.say("POST /jobs  Idempotency-Key: %s  → 202 %s", exampleIntent, id)
	again, status, err := d.post(ctx, "t-1", exampleIntent, 25, false)
	if err != nil || status != http.StatusOK || again != id {
		return answerErr("the repeated intent (job "+again+")", status, err)
	}
	d.sum.DuplicateIntents++
	d.say("POST /jobs  Idempotency-Key: %s  → 200 %s (the same job: nothing new is sent)", exampleIntent, again)

	for _, bad := range []struct {
		what string
		req  events.APIGatewayV2HTTPRequest
		want int
	}{
		{"no identity", APIRequest(http.MethodPost, "/jobs", "", "intent-x", `{"spec":{}}`), http.StatusUnauthorized},
		{"malformed JSON", APIRequest(http.MethodPost, "/jobs", "t-2", "intent-y", `{"spec":`), http.StatusBadRequest},
		{"another tenant's job", APIRequest(http.MethodGet, "/jobs/"+id, "t-2", "", ""), http.StatusNotFound},
	} {
		resp, _, err := d.send(ctx, bad.req)
		if err != nil || resp.StatusCode != bad.want {
			return answerErr(fmt.Sprintf("bad request (%s), which wants %d,", bad.what, bad.want), resp.StatusCode, err)
		}
		d.sum.BadRequestsRefused++
		d.say("bad request (%s) → %d %s", bad.what, resp.StatusCode, strings.TrimSpace(resp.Body))
	}

	cancelID, status, err := d.post(ctx, "t-3", "cancel-me", 10, true)
	if err != nil || status != http.StatusAccepted {
		return answerErr("the job to cancel", status, err)
	}
	resp, _, err := d.send(ctx, APIRequest(http.MethodDelete, "/jobs/"+cancelID, "t-3", "", ""))
	if err != nil || resp.StatusCode != http.StatusOK {
		return answerErr("DELETE /jobs/"+cancelID, resp.StatusCode, err)
	}
	d.submitted = append(d.submitted, demoJob{id: cancelID, tenant: "t-3", intent: "cancel-me", role: "cancelled before it ran"})
	d.say("DELETE /jobs/%s → 200 cancelled", cancelID)
	if err := d.submitWordCount(ctx, articles); err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(7, 42))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range d.bulk {
		tenant := demoTenants[i%len(demoTenants)]
		intent := fmt.Sprintf("bulk-%04d", i)
		size := 40 + rng.IntN(61) // 40 to 100 articles a page
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, status, err := d.post(ctx, tenant, intent, size, true)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && status != http.StatusAccepted {
				err = fmt.Errorf("POST %s answered %d", intent, status)
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			d.submitted = append(d.submitted, demoJob{id: id, tenant: tenant, intent: intent, articles: articles[tenant]})
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	d.sum.Jobs = len(d.submitted)
	d.say("submitted %d more jobs across %d tenants: %d jobs in all", d.bulk, len(demoTenants), d.sum.Jobs)
	return nil
}

// exampleHeld says whether worker A's accept of the running example is
// held back.
func (d *demoRun) exampleHeld() bool {
	if d.pgHold != nil {
		return d.pgHold.Held()
	}
	return d.hold.Held()
}

// releaseExample sends worker A's held accept on, and says whether the
// store's condition refused it, where it went, and the answer.
func (d *demoRun) releaseExample(ctx context.Context) (refused bool, where, answer string) {
	if d.pgHold != nil {
		res := d.pgHold.Release(ctx)
		return acceptRefused(res), "PostgreSQL", fmt.Sprintf("%v %q %v", res.Tags, res.Rows, res.Err)
	}
	res := d.hold.Release(ctx)
	refused = res.Err == nil && res.Status == http.StatusBadRequest && strings.Contains(res.Body, "ConditionalCheckFailed")
	return refused, "DynamoDB", fmt.Sprintf("%d %s %v", res.Status, res.Body, res.Err)
}

// waitFinal shows progress until every job is final and its view caught
// up, releasing worker A's held accept once generation 2 has won.
func (d *demoRun) waitFinal(ctx context.Context, exampleJob string) error {
	store, err := d.jobStore()
	if err != nil {
		return err
	}
	views, err := d.projectionStore()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	released := false
	for tick := 0; ; tick++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		final, viewed := 0, 0
		for _, j := range d.submitted {
			job, err := store.Get(ctx, j.id)
			if err != nil {
				return err
			}
			if job.Status.Final() {
				final++
				if v, err := views.View(ctx, j.id); err == nil && v.Version == job.Version {
					viewed++
				}
			}
			if j.id == exampleJob && !released && d.exampleHeld() && job.Status == jobs.StatusCompleted && job.Generation >= 2 {
				refused, where, answer := d.releaseExample(ctx)
				released = true
				if refused {
					d.sum.StaleAcceptsRejected++
				}
				d.say("worker A's accept of %s (generation 1) finally reached %s after generation %d won: %s",
					j.id, where, job.Generation, map[bool]string{true: "refused by the condition, nothing changed", false: "NOT refused: " + answer}[refused])
			}
		}
		if tick%2 == 0 || (final == len(d.submitted) && viewed == final) {
			d.say("progress: %d/%d jobs final, %d views current, %d events projected, example held=%v", final, len(d.submitted), viewed, d.events.Load(), d.exampleHeld())
		}
		if final == len(d.submitted) && viewed == final && released {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after 5 minutes: %d/%d final, %d views current", final, len(d.submitted), viewed)
		}
		time.Sleep(time.Second)
	}
}

func (d *demoRun) sweep(ctx context.Context) error {
	time.Sleep(1100 * time.Millisecond) // the demo's grace
	// A run that fails (a request that failed through the SDK's retries)
	// is run again, as the schedule would, up to 3 times; the orphans of
	// the runs that report are counted.
	var rep sweeper.Report
	for try := 1; ; try++ {
		r, err := d.p.Sweep(ctx, false)
		if err == nil {
			rep = r
			d.sum.OrphansSwept += r.Deleted
			break
		}
		if try == 3 {
			return err
		}
		d.say("sweeper failed (%v); running it again", err)
		time.Sleep(time.Second)
	}
	// Of the running example's candidates only generation 2's result is
	// left: worker A's is the orphan the sweeper removed.
	example := jobs.DeriveJobID("t-1", exampleIntent)
	store, err := d.jobStore()
	if err != nil {
		return err
	}
	job, err := store.Get(ctx, example)
	if err != nil {
		return err
	}
	cands, err := candidate.New(candidate.Config{Client: d.state.S3Client(), Bucket: d.res.Resources["CandidatesBucket"]})
	if err != nil {
		return err
	}
	left, err := cands.List(ctx, example)
	if err != nil {
		return err
	}
	if len(left) != 1 || left[0].Key.String() != job.Result.Key {
		d.sum.OrphansSwept = 0
		d.say("MISMATCH: the example's candidates after the sweep: %v; want only its result %s", left, job.Result.Key)
	}
	b, _ := json.Marshal(rep)
	d.say("sweeper: %s", b)
	return nil
}

// check holds the tables, the bucket and the queues to the invariants.
func (d *demoRun) check(ctx context.Context, articles map[string]int) error {
	store, err := d.jobStore()
	if err != nil {
		return err
	}
	proj, err := d.projectionStore()
	if err != nil {
		return err
	}
	cands, err := candidate.New(candidate.Config{Client: d.state.S3Client(), Bucket: d.res.Resources["CandidatesBucket"]})
	if err != nil {
		return err
	}
	processed := map[string]int64{}
	completed := map[string]int64{}
	rows := []demoJob{}
	final := map[string]jobs.Job{}
	for _, j := range d.submitted {
		job, err := store.Get(ctx, j.id)
		if err != nil {
			return err
		}
		final[j.id] = job
		processed[j.tenant] += job.Progress
		switch job.Status {
		case jobs.StatusCompleted:
			d.sum.Completed++
			completed[j.tenant]++
			if err := d.resultChecker(j)(ctx, cands, &job, j.articles); err != nil {
				d.sum.ResultMismatches++
				d.say("MISMATCH: %s: %v", j.id, err)
			}
		case jobs.StatusFailed:
			d.sum.Failed++
			if job.Error.Code != jobs.CodeRecoveryExhausted {
				d.sum.FailedUnexpectedly++
				d.say("UNEXPECTED: %s failed: %s %s", j.id, job.Error.Code, job.Error.Message)
			}
		case jobs.StatusCancelled:
			d.sum.Cancelled++
		default:
			d.sum.Lost++
		}
		if v, err := proj.View(ctx, j.id); err != nil || v.Version != job.Version || v.Status != job.Status || v.Progress != job.Progress {
			d.sum.ViewMismatches++
			d.say("MISMATCH: view of %s: %+v %v, job at v%d %s", j.id, v, err, job.Version, job.Status)
		}
		if j.role != "" {
			rows = append(rows, j)
		}
	}
	for _, tenant := range demoTenants {
		tot, err := proj.Totals(ctx, tenant)
		if err != nil || tot.Processed != processed[tenant] || tot.Completed != completed[tenant] {
			d.sum.TotalMismatches++
			d.say("MISMATCH: totals of %s: %+v %v; want processed %d completed %d", tenant, tot, err, processed[tenant], completed[tenant])
		}
	}
	left := d.queuesLeft
	if d.kafka() {
		if err := d.consumedOnKafka(ctx); err != nil {
			return err
		}
		left = d.kafkaLeft
	}
	d.sum.EventsPublished = d.events.Load()
	// Every version from 1 on has exactly one event, and the projector
	// must have consumed each (the relay's dedup id is the event id).
	d.seenMu.Lock()
	for _, j := range d.submitted {
		for v := int64(1); v <= final[j.id].Version; v++ {
			if id := jobs.OutboxID(j.id, v); !d.seen[id] {
				d.sum.Lost++
				d.say("LOST: the projector never consumed event %s", id)
			}
		}
	}
	d.seenMu.Unlock()
	n, err := left(ctx)
	if err != nil {
		return err
	}
	d.sum.Lost += n
	d.table(rows, final)
	return nil
}

// checkResult reads a completed job's result back: its key names the job
// and the accepting generation and attempt, and its content is the
// tenant's articles, verified against the recorded hash.
func (d *demoRun) checkResult(ctx context.Context, cands *candidate.Store, job *jobs.Job, want int) error {
	key, err := candidate.ParseKey(job.Result.Key)
	if err != nil {
		return err
	}
	if key.JobID != job.ID || key.Generation != job.Generation || key.AttemptID != job.LeaseOwner {
		return fmt.Errorf("result %s is not generation %d's candidate of attempt %s", job.Result.Key, job.Generation, job.LeaseOwner)
	}
	r, err := cands.Open(ctx, key)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	lines := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	if int64(lines) != job.Progress || lines != want {
		return fmt.Errorf("result has %d lines, progress %d, the tenant has %d articles", lines, job.Progress, want)
	}
	return nil
}

// drain waits, up to 4 minutes, until the commands and events queues hold
// no message, visible or in flight: a message whose delete failed comes
// back after its visibility timeout (180 s on the events queue) and is
// consumed then. What is still there after that, check reports.
func (d *demoRun) drain(ctx context.Context) error {
	client := d.state.SQSClient()
	deadline := time.Now().Add(4 * time.Minute)
	for said := false; ; {
		held := 0
		for _, q := range []string{"CommandsQueue", "EventsQueue"} {
			out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl:       aws.String(d.res.Resources[q]),
				AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
			})
			if err != nil {
				return err
			}
			for _, v := range out.Attributes {
				n, _ := strconv.Atoi(v)
				held += n
			}
		}
		if held == 0 || time.Now().After(deadline) {
			return nil
		}
		if !said {
			d.say("waiting for %d messages the queues still hold (received, not deleted: they come back after the visibility timeout)", held)
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// queuesLeft counts messages still in any queue: every message must have
// been acknowledged.
func (d *demoRun) queuesLeft(ctx context.Context) (int, error) {
	if d.postgres() {
		return d.postgresLeft(ctx)
	}
	return d.queuesHold(ctx, "CommandsQueue", "CommandsDLQ", "EventsQueue", "EventsDLQ", "StreamFailureQueue")
}

// queuesHold counts the messages the queues (logical ids) hold, visible or
// in flight, and says which hold some.
func (d *demoRun) queuesHold(ctx context.Context, queues ...string) (int, error) {
	client := d.state.SQSClient()
	left := 0
	for _, q := range queues {
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(d.res.Resources[q]),
			AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
		})
		if err != nil {
			return 0, err
		}
		for _, v := range out.Attributes {
			n, _ := strconv.Atoi(v)
			if n > 0 {
				d.say("LEFT: %s holds %d messages", q, n)
			}
			left += n
		}
	}
	return left, nil
}

func (d *demoRun) table(rows []demoJob, final map[string]jobs.Job) {
	d.say("")
	d.say("%-38s %-10s %3s %3s %-34s %s", "JOB", "STATUS", "GEN", "VER", "RESULT", "")
	counts := map[jobs.Status]int{}
	for _, j := range d.submitted {
		counts[final[j.id].Status]++
	}
	show := append([]demoJob{}, rows...)
	for _, j := range d.submitted {
		if len(show) >= len(rows)+6 {
			break
		}
		if j.role == "" {
			show = append(show, j)
		}
	}
	for _, j := range show {
		job := final[j.id]
		result := "-"
		if job.Result.Key != "" {
			result = fmt.Sprintf("g%d/%s… %d B", job.Generation, trim(job.LeaseOwner, 12), job.Result.Size)
		}
		d.say("%-38s %-10s %3d %3d %-34s %s", j.id, job.Status, job.Generation, job.Version, result, j.role)
	}
	statuses := make([]string, 0, len(counts))
	for s, c := range counts {
		statuses = append(statuses, fmt.Sprintf("%s %d", s, c))
	}
	sort.Strings(statuses)
	d.say("... %d jobs in all: %s", len(d.submitted), strings.Join(statuses, ", "))
	d.say("")
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
