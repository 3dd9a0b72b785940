//go:build integration

package test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// exemptServices are the services whose grants no recorded request shows:
// Lambda itself writes the functions' logs and trace segments with their
// roles.
var exemptServices = []string{"logs", "xray"}

// TestEveryRoleAllowsWhatItsFunctionAsksAndNothingMore holds each of the
// five functions' roles in template.yaml to the AWS requests its function
// makes, both ways: every request the function made is allowed (the
// emulators enforce no IAM, so a missing grant would first show on AWS as
// AccessDenied), and every grant is used by some request (a grant nothing
// uses is a privilege to take away). The functions run in process on the
// local stack with a recorder on their SDK clients, through every path
// that reaches AWS: jobs created, repeated, cancelled, run (one candidate
// upload's answer lost, so that the upload is retried and compared with
// what it left), shown with their result URL, a stuck job nudged, a poison
// command parked (its body in S3) and redriven, a projection recovered
// from the Jobs table, a poison event parked and discarded and the events
// behind it redriven, an orphan candidate deleted and a final job's lost
// projection repaired. The requests Lambda's event source mappings make
// with the roles are added from the template (testenv.EventSourceRequests).
// What is checked comes from template.yaml and from the requests alone:
// statements, resources and conditions (dynamodb:LeadingKeys, s3:prefix)
// are evaluated as IAM evaluates them (testenv.RolePolicy), not listed
// here. The template's resource policies are evaluated too: a request
// the bucket's or the queues' policy denies (testenv.ResourcePolicies:
// the write-once rule on candidates/, TLS only, the queues' senders) is a
// failure, as it would be on AWS. Not parallel: the functions in process read their endpoints from
// this process's environment.
func TestEveryRoleAllowsWhatItsFunctionAsksAndNothingMore(t *testing.T) {
	r := newRolesRun(t)

	// Before the mappings run: a job cancelled, a job created twice (the
	// second answers with the first), which then stays pending past the
	// sweeper's SWEEP_STUCK_AFTER and is nudged.
	cancelled := r.post("roles-cancel", http.StatusAccepted)
	resp, err := r.p.HTTP(t.Context(), costRequest(http.MethodDelete, "/jobs/"+cancelled, "", ""))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	stuck := r.post("roles-stuck", http.StatusAccepted)
	require.Equal(t, stuck, r.post("roles-stuck", http.StatusOK))
	// Another pending job vanishes (its item expires) between the sweeper's
	// listing and its nudge: the refused nudge finds no item to return.
	r.vanish = r.post("roles-vanish", http.StatusAccepted)
	time.Sleep(1100 * time.Millisecond) // SWEEP_STUCK_AFTER is 1s
	first, err := r.p.Sweep(t.Context(), false)
	require.NoError(t, err)
	rep := first
	require.Equal(t, 1, rep.Nudged, "the pending job is nudged: %+v", rep)
	require.Equal(t, 1, rep.NudgeRefused, "the vanished job's nudge is refused: %+v", rep)

	// The mappings run the commands; the first candidate upload's answer
	// is lost, so its retry finds the object there and compares it.
	r.lost.Arm("PutObject")
	r.p.Run(t.Context())
	done := r.post("roles-done", http.StatusAccepted)
	r.waitView(done, jobs.StatusCompleted)
	r.waitView(stuck, jobs.StatusCompleted)
	require.Equal(t, int32(1), r.lost.Fired(), "one upload's answer lost")
	resp, err = r.p.HTTP(t.Context(), costRequest(http.MethodGet, "/jobs/"+done, "", ""))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	require.Contains(t, resp.Body, "X-Amz-Signature", "the job's result URL is presigned")

	r.poisonCommand()
	r.projectorPaths(done)

	// A final job whose view was lost, found by the repair, and an orphan
	// candidate older than SWEEP_GRACE.
	r.loseProjection(done)
	r.endJustAfter(done, first.RepairCursor)
	orphan := candidate.Key{JobID: jobs.DeriveJobID("t-1", "roles-orphan"), Generation: 1, AttemptID: "a1", Ext: "ndjson"}
	_, err = r.state.S3Client().PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(r.deployed.Resources["CandidatesBucket"]), Key: aws.String(orphan.String()), Body: strings.NewReader("{}\n"),
	})
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // SWEEP_GRACE is 1s
	rep, err = r.p.Sweep(t.Context(), false)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted, "the orphan is deleted: %+v", rep)
	require.Equal(t, 1, rep.Repaired, "the lost view is repaired: %+v", rep)
	require.NoError(t, r.stop())

	// The bucket's and the queues' policies deny some of what a role
	// allows (a put under candidates/ without If-None-Match, a send by any
	// role but the relay's): a request they deny fails on AWS as surely.
	resources, err := testenv.ResourcePolicies(r.d, map[string]string{"OperatorRoleArn": operatorRoleARN})
	require.NoError(t, err)
	var problems []string
	for _, fn := range pipeline.Functions {
		logical := functionLogicalIDs[fn]
		reqs := r.rec[fn].Requests()
		esm, err := testenv.EventSourceRequests(r.d, logical)
		require.NoError(t, err)
		reqs = append(reqs, esm...)
		role, err := testenv.FunctionRole(r.d, logical, exemptServices...)
		require.NoError(t, err)
		for _, q := range reqs {
			t.Logf("%s: %s", fn, q)
		}
		refused, err := role.Refused(reqs)
		require.NoError(t, err)
		for _, q := range refused {
			problems = append(problems, fmt.Sprintf("%s asks what %s does not allow: %s", fn, role.Role, q))
		}
		denied, err := resources.Denied(role, reqs)
		require.NoError(t, err)
		for _, q := range denied {
			problems = append(problems, fmt.Sprintf("%s asks what a resource policy denies %s: %s", fn, role.Role, q))
		}
		unused, err := role.Unused(reqs)
		require.NoError(t, err)
		for _, g := range unused {
			problems = append(problems, fmt.Sprintf("%s grants what %s never asks: %s", role.Role, fn, g))
		}
	}
	require.Empty(t, problems)
}

// operatorRoleARN stands in for the OperatorRoleArn parameter, which has
// no default: the queues' policies let it send.
const operatorRoleARN = "arn:aws:iam::000000000000:role/fifoworker-operator"

// endJustAfter moves job id's final transition to 1 ms after cursor, the
// repair cursor the first run left (its bound: SWEEP_REPAIR_AFTER before
// that run), so that the next run lists it however long the paths between
// the two runs took: after the cursor, and before the next run's bound,
// which is later by the time between the runs. The key used to come from
// the test's clock ("61 s ago"), a margin of 1 s over the cursor that
// rested on the clock and on the index alone. Then it waits until the
// finished index (eventually consistent) lists the job from that cursor,
// with the test's own client: the next run's listing is then the sweeper's
// to get right.
func (r *rolesRun) endJustAfter(id, cursor string) {
	t := r.t
	t.Helper()
	ms, err := strconv.ParseInt(cursor, 10, 64)
	require.NoError(t, err, "the first run's repair cursor is a bound, 13 digits: %q", cursor)
	key := jobs.FinishedKey(id, time.UnixMilli(ms+1))
	_, err = r.ddb.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.deployed.Resources["JobsTable"]),
		Key:                       map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET finished_key = :k"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":k": &ddbtypes.AttributeValueMemberS{Value: key}},
	})
	require.NoError(t, err)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: r.ddb, Table: r.deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	r.waitFor(id+"'s new key in the finished index", func() bool {
		got, err := store.Finished(t.Context(), cursor, time.Now().Add(-time.Minute), 100)
		require.NoError(t, err)
		return slices.ContainsFunc(got, func(f jobs.FinishedJob) bool { return f.Key == key })
	})
}

// functionLogicalIDs names each function's resource in template.yaml.
var functionLogicalIDs = map[string]string{
	"intake": "IntakeFunction", "relay": "RelayFunction", "worker": "WorkerFunction",
	"projector": "ProjectorFunction", "sweeper": "SweeperFunction",
}

// rolesRun is template.yaml deployed on the test stack, with the five
// functions in process, each recording its requests.
type rolesRun struct {
	t        *testing.T
	state    *localstack.State
	deployed *localdeploy.Result
	d        testenv.Deployment
	rec      map[string]*testenv.IAMRecorder
	lost     *awstest.LostResponses // the worker's
	vanish   string                 // a job the sweeper's nudge finds gone
	p        *pipeline.Pipeline
	ddb      *dynamodb.Client // the test's own, unrecorded
	views    *projection.DynamoStore

	mu     sync.Mutex
	events map[string][]events.SQSMessage // what the projector's mapping delivered, by group
}

func newRolesRun(t *testing.T) *rolesRun {
	t.Helper()
	state, tpl, deployed, stack := deployWithArticles(t, "roles", func(tpl *samtemplate.Template) {
		demo.SetWorkerTimeout(tpl, 3) // a failed command returns within seconds
	})
	views, err := projection.NewDynamoStore(projection.DynamoConfig{Client: state.DynamoDBClient(),
		Tables: projection.Tables{Views: deployed.Resources["ViewsTable"], Totals: deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	r := &rolesRun{
		t: t, state: state, deployed: deployed,
		d:      testenv.Deployment{Template: tpl, Result: deployed, Stack: stack, Region: state.Region},
		rec:    map[string]*testenv.IAMRecorder{},
		lost:   &awstest.LostResponses{},
		ddb:    state.DynamoDBClient(),
		views:  views,
		events: map[string][]events.SQSMessage{},
	}
	names := testenv.NamesOf(tpl, deployed)
	// Lambda names each function in its environment; the sweeper reports
	// its gauges (the held groups among them) only then.
	settings := map[string]map[string]string{}
	// Each function's S3 client answers a read of a missing key as S3
	// answers its role (403 unless it may list the bucket): the local S3
	// enforces no IAM, and a function that relies on a 404 would otherwise
	// pass here and be refused on AWS.
	missing := map[string]func(*middleware.Stack) error{}
	for _, fn := range pipeline.Functions {
		rec, err := testenv.NewIAMRecorder(testenv.IAMRecorderConfig{Names: names})
		require.NoError(t, err)
		r.rec[fn] = rec
		settings[fn] = map[string]string{"AWS_LAMBDA_FUNCTION_NAME": stack + "-" + fn}
		role, err := testenv.FunctionRole(r.d, functionLogicalIDs[fn], exemptServices...)
		require.NoError(t, err)
		missing[fn] = testenv.MissingKeysAsS3Answers(role, names)
	}
	for k, v := range map[string]string{"SWEEP_GRACE": "1s", "SWEEP_STUCK_AFTER": "1s", "SWEEP_REPAIR_AFTER": "1m"} {
		settings["sweeper"][k] = v
	}
	p, err := pipeline.Build(t.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		Settings: settings,
		APIOptions: func(fn string) []func(*middleware.Stack) error {
			opts := []func(*middleware.Stack) error{r.rec[fn].Install, missing[fn]}
			switch fn {
			case "worker":
				opts = append(opts, r.lost.Install)
			case "sweeper":
				opts = append(opts, r.vanishBeforeNudge)
			}
			return opts
		},
		OnSQSBatch: func(fn string, b localesm.SQSBatchResult) {
			if fn != "projector" {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, m := range b.Records {
				g := m.Attributes["MessageGroupId"]
				r.events[g] = append(r.events[g], m)
			}
		},
	})
	require.NoError(t, err)
	r.p = p
	t.Cleanup(func() { require.NoError(t, r.stop()) })
	return r
}

// vanishBeforeNudge deletes the job r.vanish just before the sweeper's
// update of it is sent, as its expiry could.
func (r *rolesRun) vanishBeforeNudge(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("roles.vanish",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if u, ok := in.Parameters.(*dynamodb.UpdateItemInput); ok && r.vanish != "" {
				if id, ok := u.Key["job_id"].(*ddbtypes.AttributeValueMemberS); ok && id.Value == r.vanish {
					_, err := r.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: u.TableName, Key: u.Key})
					if err != nil {
						return middleware.InitializeOutput{}, middleware.Metadata{}, err
					}
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

func (r *rolesRun) stop() error {
	p := r.p
	r.p = nil
	if p == nil {
		return nil
	}
	return p.Stop()
}

// post submits intent for t-1 and returns its job's id.
func (r *rolesRun) post(intent string, status int) string {
	r.t.Helper()
	resp, err := r.p.HTTP(r.t.Context(), costRequest(http.MethodPost, "/jobs", intent, `{"spec":{"page_size":"100"}}`))
	require.NoError(r.t, err)
	require.Equal(r.t, status, resp.StatusCode, resp.Body)
	return jobs.DeriveJobID("t-1", intent)
}

// waitFor polls cond every 50 ms for at most a minute.
func (r *rolesRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		require.True(r.t, time.Now().Before(deadline), "after a minute, still waiting for %s", what)
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *rolesRun) waitView(id string, status jobs.Status) {
	r.t.Helper()
	r.waitFor(id+"'s view "+string(status), func() bool {
		v, err := r.views.View(r.t.Context(), id)
		return err == nil && v.Status == status
	})
}

// padding is a message attribute that makes a message too large for its
// quarantine item, so that parking it keeps its body in S3.
func padding() map[string]sqstypes.MessageAttributeValue {
	return map[string]sqstypes.MessageAttributeValue{
		"padding": {DataType: aws.String("String"), StringValue: aws.String(strings.Repeat("p", quarantine.DefaultMaxInlineBody))},
	}
}

// operator is the operator's tools for one queue, on the test's own
// (unrecorded) clients; copies go to sender.
func (r *rolesRun) operator(queue string, sender quarantine.Sender) *quarantine.Operator {
	return queueOperator(r.t, r.state, r.deployed, queue, sender)
}

// queueOperator is the operator's tools for the deployment's queue (its
// logical id), on the stack's clients; copies go to sender.
func queueOperator(tb testing.TB, state *localstack.State, deployed *localdeploy.Result, queue string, sender quarantine.Sender) *quarantine.Operator {
	tb.Helper()
	name := deployed.Attributes[queue]["QueueName"]
	holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: state.DynamoDBClient(), Table: deployed.Resources["QuarantineTable"]})
	require.NoError(tb, err)
	bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: state.S3Client(), Bucket: deployed.Resources["CandidatesBucket"]})
	require.NoError(tb, err)
	op, err := quarantine.NewOperator(quarantine.OperatorConfig{Store: holds, Queue: name, QueueURL: deployed.Resources[queue], Sender: sender, Bodies: bodies})
	require.NoError(tb, err)
	return op
}

// poisonCommand is the worker's quarantine path: holdPoison's held group,
// redriven; the copies run in order, and the worker's done records drain
// and release the hold.
func (r *rolesRun) poisonCommand() {
	t := r.t
	id, op := r.holdPoison("roles-poison")
	_, err := op.Redrive(t.Context(), id, false)
	require.NoError(t, err)
	r.waitHold(op, id, "the hold released", func(h quarantine.HoldRecord) bool { return h.State == quarantine.StateReleased })
	r.waitView(id, jobs.StatusCompleted)
}

// holdPoison holds a group of the commands queue: a run command for t-1's
// job of intent, which does not exist yet (its claim refused for good),
// holds the job's group, parked with its body in S3; the job, created
// then, has its own command parked behind it. It returns the job's id, the
// held group's, and the queue's operator.
func (r *rolesRun) holdPoison(intent string) (string, *quarantine.Operator) {
	t := r.t
	id := jobs.DeriveJobID("t-1", intent)
	op := r.operator("CommandsQueue", r.state.SQSClient())
	body, err := json.Marshal(outbox.Command{
		Type: jobs.MessageRun, CommandID: jobs.OutboxID(id, 0), JobID: id, IntentID: intent, Tenant: "t-1",
		IssuedAt: time.Now().UTC().Truncate(time.Second),
	})
	require.NoError(t, err)
	_, err = r.state.SQSClient().SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(r.deployed.Resources["CommandsQueue"]), MessageBody: aws.String(string(body)), MessageAttributes: padding(),
		MessageGroupId: aws.String(id), MessageDeduplicationId: aws.String(id + "/early"),
	})
	require.NoError(t, err)
	r.waitHold(op, id, "the poison command parked", func(h quarantine.HoldRecord) bool { return h.State == quarantine.StateHeld && h.Parked == 1 })
	r.post(intent, http.StatusAccepted)
	r.waitHold(op, id, "the job's command parked behind it", func(h quarantine.HoldRecord) bool { return h.Parked == 2 })
	return id, op
}

// waitHold waits until op's hold of group satisfies ok.
func (r *rolesRun) waitHold(op *quarantine.Operator, group, what string, ok func(quarantine.HoldRecord) bool) {
	r.t.Helper()
	r.waitFor(what, func() bool {
		h, err := op.Hold(r.t.Context(), group)
		return err == nil && ok(h)
	})
}

// loseProjection deletes job id's view and makes its totals cursor
// disagree with the job (version 1, one more item than the job counted,
// running), the tenant's shard total moved with it so that the totals stay
// the sum of the cursors: the job's last event then disagrees with the
// cursor (projection.ErrMismatch) and the projector recovers from the job
// item at once, and the sweeper's repair finds the projection out of step;
// either recovery moves the cursor and the total back in one transaction.
func (r *rolesRun) loseProjection(id string) {
	r.t.Helper()
	ctx := r.t.Context()
	_, err := r.ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(r.deployed.Resources["ViewsTable"]),
		Key:       map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: id}},
	})
	require.NoError(r.t, err)
	totals := r.deployed.Resources["TotalsTable"]
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: r.ddb, Tables: projection.Tables{Views: r.deployed.Resources["ViewsTable"], Totals: totals}})
	require.NoError(r.t, err)
	cur, err := store.Cursor(ctx, "t-1", id)
	require.NoError(r.t, err)
	require.Equal(r.t, jobs.StatusCompleted, cur.Status, "%s's cursor", id)
	num := func(n int64) ddbtypes.AttributeValue {
		return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	_, err = r.ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{
		Update: &ddbtypes.Update{TableName: aws.String(totals), Key: store.CursorKey("t-1", id),
			UpdateExpression:          aws.String("SET #v = :v, #p = :p, #s = :s"),
			ExpressionAttributeNames:  map[string]string{"#v": "version", "#p": "progress", "#s": "status"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": num(1), ":p": num(cur.Progress + 1), ":s": &ddbtypes.AttributeValueMemberS{Value: string(jobs.StatusRunning)}}},
	}, {
		Update: &ddbtypes.Update{TableName: aws.String(totals), Key: store.TotalKey("t-1", id),
			UpdateExpression:          aws.String("ADD #p :one, #c :minus"),
			ExpressionAttributeNames:  map[string]string{"#p": "processed", "#c": "completed"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": num(1), ":minus": num(-1)}},
	}}})
	require.NoError(r.t, err)
}

// project invokes the projector with msgs as one batch, as its mapping
// would, and requires every message to succeed.
func (r *rolesRun) project(msgs ...events.SQSMessage) {
	r.t.Helper()
	var resp events.SQSEventResponse
	require.NoError(r.t, r.p.Invoke(r.t.Context(), "projector", events.SQSEvent{Records: msgs}, &resp))
	require.Empty(r.t, resp.BatchItemFailures)
}

// projectorPaths runs the projector's rarer paths on job id (final, its
// events delivered): a recovery from the Jobs table, and the quarantine's
// park, discard and redrive. The events are the ones the mapping
// delivered, given again with the receive counts each path needs.
func (r *rolesRun) projectorPaths(id string) {
	t := r.t
	r.waitFor(id+"'s events delivered", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.events[id]) >= 2 })
	r.mu.Lock()
	delivered := append([]events.SQSMessage(nil), r.events[id]...)
	r.mu.Unlock()
	last := delivered[len(delivered)-1]

	// Its projection lost (the view gone, the cursor disagreeing with the
	// job), the last event makes the projector recover from the job item.
	r.loseProjection(id)
	recoverAt := r.d.Template.Parameters["RecoverAfterReceives"].Default
	again := last
	again.Attributes = maps.Clone(last.Attributes)
	again.Attributes["ApproximateReceiveCount"] = fmt.Sprint(recoverAt)
	r.project(again)
	r.waitView(id, jobs.StatusCompleted)

	// A malformed event, too large for its item, holds the group; the two
	// events behind it in the batch are parked too.
	arn := r.deployed.Attributes["EventsQueue"]["Arn"]
	seq := 90000000000000000
	msg := func(n int, body string, attrs map[string]events.SQSMessageAttribute) events.SQSMessage {
		s := strconv.Itoa(seq + n)
		return events.SQSMessage{
			MessageId: fmt.Sprintf("roles-%d", n), Body: body, EventSourceARN: arn, MessageAttributes: attrs,
			Attributes: map[string]string{"MessageGroupId": id, "SequenceNumber": s, "MessageDeduplicationId": "roles-" + s, "ApproximateReceiveCount": "1"},
		}
	}
	pad := map[string]events.SQSMessageAttribute{"padding": {DataType: "String", StringValue: aws.String(strings.Repeat("p", quarantine.DefaultMaxInlineBody))}}
	var resp events.SQSEventResponse
	require.NoError(t, r.p.Invoke(t.Context(), "projector", events.SQSEvent{Records: []events.SQSMessage{
		msg(1, `{"type":"not.an.event"}`, pad), msg(2, delivered[0].Body, nil), msg(3, last.Body, nil),
	}}, &resp))
	require.Empty(t, resp.BatchItemFailures, "parked messages are acknowledged")
	out := &quarantinetest.Sends{}
	op := r.operator("EventsQueue", out)
	h, err := op.Hold(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, int64(3), h.Parked)
	_, _, err = op.Discard(t.Context(), id, strconv.Itoa(seq+1))
	require.NoError(t, err)
	_, err = op.Redrive(t.Context(), id, false)
	require.NoError(t, err)
	require.Len(t, out.Inputs, 2, "the two events behind the discarded one")
	var copies []events.SQSMessage
	for i, in := range out.Inputs {
		s := strconv.Itoa(seq + 10 + i)
		copies = append(copies, events.SQSMessage{
			MessageId: "roles-copy-" + s, Body: aws.ToString(in.MessageBody), EventSourceARN: arn,
			Attributes: map[string]string{
				"MessageGroupId": aws.ToString(in.MessageGroupId), "SequenceNumber": s,
				"MessageDeduplicationId": aws.ToString(in.MessageDeduplicationId), "ApproximateReceiveCount": "1",
			},
			MessageAttributes: sqsAttributes(in.MessageAttributes),
		})
	}
	r.project(copies...)
	h, err = op.Hold(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, quarantine.StateReleased, h.State)
}

// sqsAttributes is what a receive gives of the message attributes a send
// carried.
func sqsAttributes(in map[string]sqstypes.MessageAttributeValue) map[string]events.SQSMessageAttribute {
	if len(in) == 0 {
		return nil
	}
	out := map[string]events.SQSMessageAttribute{}
	for k, v := range in {
		out[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}
