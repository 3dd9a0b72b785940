//go:build integration

package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The requests one job costs on each path other than the happy one
// (TestRequestsPerJobOnTheHappyPath): a repeated intent, a takeover after a
// stalled first attempt, a cancel, and a poison command whose group is held
// and then redriven. Every function runs in process with SDK middleware
// counting its requests (after the retry middleware: an SDK retry counts);
// the test's own requests as a producer or an operator are counted apart;
// the event source mappings' receives and deletes are not counted (they
// are Lambda's, not the functions'). Each test waits until the mappings
// have deleted every message the path produces, stops the pipeline (so
// nothing is in flight) and then compares the counts with the exact ones
// the code makes, function by function. The lower bounds the design sets
// are in the comments and in docs/BENCHMARKS.md ("Requests per job"). Not
// parallel: the functions in process read their endpoints from this
// process's environment.

// costStack is a deployment of template.yaml on the test stack with the
// five functions in process, each with its own request counter.
type costStack struct {
	t        *testing.T
	state    *localstack.State
	tpl      *samtemplate.Template
	deployed *localdeploy.Result
	stack    string
	counts   map[string]*awstest.Requests // by function, and "operator": the test's own requests

	p        *pipeline.Pipeline
	mu       sync.Mutex
	deleted  map[string]int // messages each SQS-triggered function's mapping deleted
	jobs     *jobs.DynamoStore
	views    *projection.DynamoStore
	settings map[string]map[string]string
}

// deployWithArticles deploys the template as deployTemplate does and seeds
// five articles for t-1: the export is one page.
func deployWithArticles(t *testing.T, prefix string, prepare func(*samtemplate.Template)) (*localstack.State, *samtemplate.Template, *localdeploy.Result, string) {
	t.Helper()
	state, tpl, deployed, stack := deployTemplate(t, prefix, prepare)
	ddb := state.DynamoDBClient()
	for i := range 5 {
		_, err := ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(deployed.Resources["ArticlesTable"]), Item: map[string]ddbtypes.AttributeValue{
			"tenant": &ddbtypes.AttributeValueMemberS{Value: "t-1"}, "article_id": &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(i)},
		}})
		require.NoError(t, err)
	}
	return state, tpl, deployed, stack
}

// newCostStack deploys the template (prepare may change it first) under a
// stack name of its own and seeds five articles for t-1: the export is one
// page.
func newCostStack(t *testing.T, prepare func(*samtemplate.Template)) *costStack {
	t.Helper()
	state, tpl, deployed, stack := deployWithArticles(t, "paths", prepare)
	ddb := state.DynamoDBClient()
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: ddb, Table: deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	views, err := projection.NewDynamoStore(projection.DynamoConfig{Client: ddb, Tables: projection.Tables{Views: deployed.Resources["ViewsTable"], Totals: deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	c := &costStack{
		t: t, state: state, tpl: tpl, deployed: deployed, stack: stack,
		counts:  map[string]*awstest.Requests{"operator": {}},
		deleted: map[string]int{},
		jobs:    store,
		views:   views,
	}
	for _, fn := range pipeline.Functions {
		c.counts[fn] = &awstest.Requests{}
	}
	return c
}

// build builds the five functions; run starts their mappings.
func (c *costStack) build() {
	c.t.Helper()
	p, err := pipeline.Build(c.t.Context(), pipeline.Config{
		Template: c.tpl, Deployed: c.deployed, StackName: c.stack, Region: c.state.Region, Endpoints: c.state.Env(),
		Settings: c.settings,
		APIOptions: func(fn string) []func(*middleware.Stack) error {
			return []func(*middleware.Stack) error{c.counts[fn].CountExcept("", perProcess)}
		},
		OnSQSBatch: func(fn string, r localesm.SQSBatchResult) {
			c.mu.Lock()
			c.deleted[fn] += len(r.Deleted)
			c.mu.Unlock()
		},
	})
	require.NoError(c.t, err)
	c.p = p
	c.t.Cleanup(func() {
		if c.p == p {
			require.NoError(c.t, c.stop())
		}
	})
}

func (c *costStack) run() { c.p.Run(c.t.Context()) }

// stop stops the mappings; every invocation in flight has returned after.
func (c *costStack) stop() error {
	p := c.p
	c.p = nil
	if p == nil {
		return nil
	}
	return p.Stop()
}

// take returns every counter's counts since the last take.
func (c *costStack) take() map[string]map[string]int {
	got := map[string]map[string]int{}
	for name, r := range c.counts {
		got[name] = r.Take()
	}
	return got
}

// request is an HTTP API request as API Gateway hands it to intake after
// its JWT authorizer, for tenant t-1.
func costRequest(method, path, key, body string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RawPath: path, Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"tenant": "t-1"}}},
		},
	}
	if key != "" {
		req.Headers["idempotency-key"] = key
	}
	return req
}

// post submits a job of t-1 under intent and returns intake's status.
func (c *costStack) post(intent string) int {
	c.t.Helper()
	resp, err := c.p.HTTP(c.t.Context(), costRequest(http.MethodPost, "/jobs", intent, `{"spec":{"page_size":"100"}}`))
	require.NoError(c.t, err)
	var body struct {
		JobID string `json:"job_id"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(resp.Body), &body), resp.Body)
	require.Equal(c.t, jobs.DeriveJobID("t-1", intent), body.JobID)
	return resp.StatusCode
}

// waitFor polls cond every 50 ms until it holds, for at most a minute.
func (c *costStack) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		require.True(c.t, time.Now().Before(deadline), "after a minute, still waiting for %s", what)
		time.Sleep(50 * time.Millisecond)
	}
}

// settle waits until the worker's mapping has deleted commands messages
// and the projector's events, and until job's view is at version with
// status; then it stops the pipeline.
func (c *costStack) settle(id string, status jobs.Status, version int64, commands, evts int) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("%s's view at v%d %s", id, version, status), func() bool {
		v, err := c.views.View(c.t.Context(), id)
		return err == nil && v.Status == status && v.Version == version
	})
	c.waitFor(fmt.Sprintf("%d commands and %d events deleted", commands, evts), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.deleted["worker"] >= commands && c.deleted["projector"] >= evts
	})
	require.NoError(c.t, c.stop())
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(c.t, commands, c.deleted["worker"], "commands deleted")
	require.Equal(c.t, evts, c.deleted["projector"], "events deleted")
}

// requireProjector checks the projector's counts for n events of which
// adding add to the totals: a view update per event, a totals transaction
// per event that adds (an event that adds nothing is skipped; a final one
// that adds to neither counter is one UpdateItem of its cursor instead:
// cursorOnly), and one read of the holds per batch, which depends on how
// the events reached the queue (at least one batch, at most one per
// event). (The shard count's record, once per process, is not counted:
// perProcess.)
func requireProjector(t *testing.T, got map[string]int, n, adding, cursorOnly int) {
	t.Helper()
	require.Equal(t, n+cursorOnly, got["UpdateItem"], "a view update per event, and the cursors moved alone: %v", got)
	require.Equal(t, adding, got["TransactWriteItems"], "a totals transaction per event that adds: %v", got)
	require.GreaterOrEqual(t, got["BatchGetItem"], 1, "one read of the holds per batch: %v", got)
	require.LessOrEqual(t, got["BatchGetItem"], n, "one read of the holds per batch: %v", got)
	want := 3
	if adding == 0 {
		want--
	}
	require.Len(t, got, want, "%v", got)
}

// logCounts logs a path's counts in one line that `make bench` collects.
func logCounts(t *testing.T, path string, got map[string]map[string]int) {
	t.Helper()
	var b strings.Builder
	total := 0
	for _, name := range append(append([]string{}, pipeline.Functions...), "operator") {
		n := 0
		for _, v := range got[name] {
			n += v
		}
		total += n
		fmt.Fprintf(&b, " %s=%v", name, got[name])
	}
	t.Logf("requests path=%s total=%d%s", path, total, b.String())
}

// A repeated intent: the second POST of the same Idempotency-Key answers
// 200 with the same job and sends nothing. Its cost is intake's alone: the
// refused transaction (which returns the intent marker), and one read of
// the job the marker names. Lower bound: the refused transaction alone,
// since the job id is derived from the tenant and the intent, and the
// transaction's refusal returns the job's item as well as the marker's.
// Downstream the job costs exactly what the happy path costs.
func TestRequestsPerJobOnARepeatedIntent(t *testing.T) {
	c := newCostStack(t, nil)
	c.build()
	require.Equal(t, http.StatusAccepted, c.post("intent-dup"))
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, c.counts["intake"].Take())
	require.Equal(t, http.StatusOK, c.post("intent-dup"))
	require.Equal(t, map[string]int{"TransactWriteItems": 1, "GetItem": 1}, c.counts["intake"].Take(),
		"the repeat: the refused transaction, then the job the marker names")
	require.Equal(t, http.StatusOK, c.post("intent-dup"))
	c.run()
	id := jobs.DeriveJobID("t-1", "intent-dup")
	c.settle(id, jobs.StatusCompleted, 2, 1, 2)
	got := c.take()
	logCounts(t, "duplicate", got)
	requireCounted(t, "duplicate", got)
	require.Equal(t, map[string]int{"TransactWriteItems": 1, "GetItem": 1}, got["intake"], "the third POST, like the second")
	require.Equal(t, map[string]int{"UpdateItem": 2, "Query": 1, "PutObject": 1, "BatchGetItem": 1}, got["worker"], "the happy path's: the repeats sent nothing")
	require.Equal(t, map[string]int{"SendMessageBatch": 3}, got["relay"], "the command and two events, one call each: a call holds one message per job")
	requireProjector(t, got["projector"], 2, 1, 0)
	require.Empty(t, got["sweeper"])
}

// A cancel before the job ran: intake reads the job (it must be the
// caller's tenant's, and not final) and cancels it in one conditional
// write; the command already published then costs the worker one claim,
// refused by the cancelled item it returns, and the job.cancelled event
// costs the projector what any event costs. Lower bound: the cancel's one
// write (the tenant could be part of its condition) and the refused claim
// (the command was published before the cancel).
func TestRequestsPerJobOnACancel(t *testing.T) {
	c := newCostStack(t, nil)
	c.build()
	require.Equal(t, http.StatusAccepted, c.post("intent-cancel"))
	id := jobs.DeriveJobID("t-1", "intent-cancel")
	resp, err := c.p.HTTP(t.Context(), costRequest(http.MethodDelete, "/jobs/"+id, "", ""))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	c.run()
	c.settle(id, jobs.StatusCancelled, 1, 1, 1)
	got := c.take()
	logCounts(t, "cancel", got)
	requireCounted(t, "cancel", got)
	require.Equal(t, map[string]int{"TransactWriteItems": 1, "GetItem": 1, "UpdateItem": 1}, got["intake"], "create; read and cancel")
	require.Equal(t, map[string]int{"UpdateItem": 1, "BatchGetItem": 1}, got["worker"], "the claim, refused by the cancelled item; the batch's holds")
	require.Equal(t, map[string]int{"SendMessageBatch": 2}, got["relay"], "the command and job.cancelled")
	requireProjector(t, got["projector"], 1, 0, 1)
	require.Empty(t, got["sweeper"])
	j, err := c.jobs.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, int64(1), j.Generation, "the cancel raised the generation; no claim took one")
}

// The takeover of the running example, timed down: worker A claims the job
// (generation 1), runs the export and writes its candidate, and its accept
// is held on its way to DynamoDB (internal/dev/faultproxy's Hold) until A's
// invocation has ended; its lease (the invocation's deadline plus the
// 5 s skew) runs out, the command comes back after the queue's visibility
// timeout, and worker B takes over as generation 2 and wins. Then A's
// accept is let through and the table refuses it. The worker's timeout is
// 3 s and the commands queue's visibility 12 s (so that the lease has
// surely ended when the command returns; AWS's 6 x the timeout would be
// 18 s, and only the order of the two matters here).
//
// The takeover's claim costs two writes: the first, expecting a pending
// job, is refused and returns the item, whose lease has ended; the second
// takes it over. Lower bound of the path: each attempt's happy-path work
// (a claim and an accept each, A's refused, an export and a candidate
// each), four writes on the job where the worker makes five.
func TestRequestsPerJobOnATakeover(t *testing.T) {
	c := newCostStack(t, func(tpl *samtemplate.Template) {
		demo.SetWorkerTimeout(tpl, 3)
		tpl.Mappings["WorkerTimeouts"].(map[string]any)["3"] = map[string]any{"CommandsVisibility": 12}
	})
	id := jobs.DeriveJobID("t-1", "intent-takeover")
	jobsTable := c.deployed.Resources["JobsTable"]
	hold, err := faultproxy.New(faultproxy.Config{Service: faultproxy.DynamoDB, Target: c.state.DynamoDB,
		Hold: func(op string, body []byte) bool {
			b := string(body)
			return op == "UpdateItem" && strings.Contains(b, `"TableName":"`+jobsTable+`"`) &&
				strings.Contains(b, `"`+id+`"`) && strings.Contains(b, "result_key")
		}})
	require.NoError(t, err)
	defer func() { require.NoError(t, hold.Close()) }()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", hold.URL) // the functions' DynamoDB; the test's own clients go direct
	c.build()
	require.Equal(t, http.StatusAccepted, c.post("intent-takeover"))
	c.run()
	c.waitFor("generation 2's accept", func() bool {
		j, err := c.jobs.Get(t.Context(), id)
		return err == nil && j.Status == jobs.StatusCompleted && j.Generation == 2 && hold.Held()
	})
	res := hold.Release(t.Context())
	require.NoError(t, res.Err)
	require.Equal(t, http.StatusBadRequest, res.Status, res.Body)
	require.Contains(t, res.Body, "ConditionalCheckFailed", "A's late accept is refused")
	c.settle(id, jobs.StatusCompleted, 3, 1, 3)
	got := c.take()
	logCounts(t, "takeover", got)
	requireCounted(t, "takeover", got)
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, got["intake"])
	require.Equal(t, map[string]int{
		"BatchGetItem": 2, // each delivery's batch reads its holds
		"UpdateItem":   5, // A: claim, accept (held, refused later); B: claim refused (it expected pending), takeover, accept
		"Query":        2, // each attempt's export, one page
		"PutObject":    2, // each attempt's own candidate
	}, got["worker"])
	require.Equal(t, map[string]int{"SendMessageBatch": 4}, got["relay"], "the command, job.started twice (generations 1 and 2), job.completed")
	requireProjector(t, got["projector"], 3, 1, 0)
	require.Empty(t, got["sweeper"])
}

// The poison path: a run command for a job that does not exist yet reaches
// the commands queue (sent here, as a replay from a backup would). The
// worker refuses it for good, so the quarantine holds the job's group and
// parks it; the job is then created through intake, and its own command is
// parked behind the first. The group is redriven with the operator's code
// (without waiting for the release, so that its requests do not depend on
// timing), and the worker runs the two copies in order: the first runs the
// job, the second finds it completed. Each copy's parked message is marked
// done, the last one releasing the hold.
//
// Lower bounds (design): parking a lane is one read of the hold and one
// transaction (the messages with the hold's count); a held group's later
// lane the same; a redrive one conditional write of the hold, a listing of
// the parked messages and one send per message, in order; a copy that ran
// one transaction (its message done, the count down), and, unless it was
// the last, a read of the message parked after it, which only its copy may
// run next (a hold that names its oldest message keeps a lost copy from
// being passed). The measured
// counts' differences are in the assertions' comments.
func TestRequestsPerJobOnTheQuarantinePath(t *testing.T) {
	c := newCostStack(t, nil)
	id := jobs.DeriveJobID("t-1", "intent-poison")
	queueURL := c.deployed.Resources["CommandsQueue"]
	queue, err := quarantine.QueueName(queueURL)
	require.NoError(t, err)
	holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: c.state.DynamoDBClient(), Table: c.deployed.Resources["QuarantineTable"]}) // uncounted: the test's looks
	require.NoError(t, err)
	opDDB := c.state.DynamoDBClient()
	opDDB = dynamodb.New(opDDB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.counts["operator"].Count("")) })
	opSQS := c.state.SQSClient()
	opSQS = sqs.New(opSQS.Options(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, c.counts["operator"].Count("")) })
	waitHold := func(what string, ok func(quarantine.HoldRecord) bool) {
		c.waitFor(what, func() bool {
			h, err := holds.Hold(t.Context(), queue, id)
			return err == nil && ok(h)
		})
	}

	c.build()
	c.run()
	body, err := json.Marshal(outbox.Command{
		Type: jobs.MessageRun, CommandID: jobs.OutboxID(id, 0), JobID: id, IntentID: "intent-poison", Tenant: "t-1",
		IssuedAt: time.Now().UTC().Truncate(time.Second),
	})
	require.NoError(t, err)
	_, err = opSQS.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body)),
		MessageGroupId: aws.String(id), MessageDeduplicationId: aws.String(id + "/early"),
	})
	require.NoError(t, err)
	waitHold("the poison command parked", func(h quarantine.HoldRecord) bool { return h.State == quarantine.StateHeld && h.Parked == 1 })
	c.waitFor("the poison command deleted", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.deleted["worker"] == 1 })
	poisoned := c.take()
	require.Equal(t, map[string]int{
		"BatchGetItem":       2, // the batch's holds; the park's read of the hold and the message
		"UpdateItem":         1, // the claim, refused: no such job
		"GetItem":            1, // the refusal returns no item, so the store reads to tell none from an endpoint that ignores ReturnValuesOnConditionCheckFailure
		"TransactWriteItems": 1, // the hold and the parked message
	}, poisoned["worker"], "poison: %v", poisoned)

	require.Equal(t, http.StatusAccepted, c.post("intent-poison"))
	waitHold("the job's own command parked", func(h quarantine.HoldRecord) bool { return h.Parked == 2 })
	c.waitFor("the job's command deleted", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.deleted["worker"] == 2 })
	parked := c.take()
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, parked["intake"])
	require.Equal(t, map[string]int{"SendMessageBatch": 1}, parked["relay"], "the command")
	require.Equal(t, map[string]int{
		"BatchGetItem":       2, // the batch's holds (held); the park's read
		"TransactWriteItems": 1, // the message parked, the hold's count
	}, parked["worker"], "parked behind: %v", parked)

	opHolds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: opDDB, Table: c.deployed.Resources["QuarantineTable"]})
	require.NoError(t, err)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: opHolds, Queue: queue, QueueURL: queueURL, Sender: opSQS})
	require.NoError(t, err)
	rep, err := op.Redrive(t.Context(), id, false)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Sent)
	redrive := map[string]map[string]int{"operator": c.counts["operator"].Take()} // the worker is running the copies meanwhile
	require.Equal(t, map[string]int{
		"GetItem":     3, // BeginRedrive reads the hold; one read after each listing
		"PutItem":     1, // the hold, draining under a new epoch
		"Query":       2, // the parked messages; the listing that finds no more
		"SendMessage": 2, // one copy at a time, in order
	}, redrive["operator"], "redrive: %v", redrive)

	waitHold("the hold released", func(h quarantine.HoldRecord) bool { return h.State == quarantine.StateReleased })
	c.settle(id, jobs.StatusCompleted, 2, 4, 2)
	drained := c.take()
	require.Equal(t, map[string]int{
		"BatchGetItem":       2, // each copy's batch: its hold and its parked message (the emulator gives one message of a group per receive; SQS may give both in one batch)
		"UpdateItem":         3, // the first copy: claim and accept; the second: its claim, refused (completed)
		"Query":              2, // the first copy's export, one page; the first Done's read of the message parked next (the last Done has none to read)
		"PutObject":          1,
		"GetItem":            2, // each Done reads the hold ...
		"TransactWriteItems": 2, // ... and marks its message done with the hold's count and next (the last releases it)
	}, drained["worker"], "drain: %v", drained)
	require.Equal(t, map[string]int{"SendMessageBatch": 2}, drained["relay"], "job.started, job.completed")
	requireProjector(t, drained["projector"], 2, 1, 0)
	require.Empty(t, drained["intake"])
	require.Empty(t, drained["sweeper"])

	all := map[string]map[string]int{}
	for _, phase := range []map[string]map[string]int{poisoned, parked, redrive, drained} {
		for name, m := range phase {
			if all[name] == nil {
				all[name] = map[string]int{}
			}
			for op, n := range m {
				all[name][op] += n
			}
		}
	}
	logCounts(t, "quarantine", all)
	requireCounted(t, "quarantine", all)
}
