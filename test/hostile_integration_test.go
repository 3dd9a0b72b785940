//go:build integration

package test

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // SQS's MD5OfBody, as the quarantine keeps it; it identifies, it does not protect
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
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
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// The catalogue of hostile and bad input (issue 10; docs/TESTING.md, "What happens
// to each bad input, end to end"). One deployment of template.yaml, the
// five functions in process with their event source mappings running, and
// two completed jobs (one of t-1, one of t-2) as the state nothing may
// disturb. Then one case per row, in order: each acts (a message sent to
// a queue and consumed by the mapping, a batch or a stream event given to
// a function as Lambda would give it, a request to the jobs API), waits
// until the pipeline is quiet, checks its outcome (the response, the
// parked messages and holds, the log line), and holds the state to the
// change its row allows: a snapshot of every item of the Jobs, Views,
// Totals, Articles and quarantine tables, every object of the bucket and
// the depth of every queue, before and after, must differ in exactly the
// keys the row names. A case that changes anything else, or less, fails.
//
// Not parallel: it sets the endpoint variables of this process.
func TestHostileInputCatalogue(t *testing.T) {
	h := startHostile(t)
	for _, c := range hostileCatalogue(h) {
		t.Run(c.name, func(t *testing.T) { h.check(t, c) })
	}
}

// hostileCase is one row. run acts, waits for the pipeline to settle and
// checks the outcome; it returns the keys ("resource|key", see snapshot)
// the row changes. setup, if set, runs before the first snapshot.
type hostileCase struct {
	name  string
	setup func(t *testing.T)
	run   func(t *testing.T) []string
}

// hostile is the deployment the catalogue runs on.
type hostile struct {
	p        *pipeline.Pipeline
	deployed *localdeploy.Result
	ddb      *dynamodb.Client
	sqs      *sqs.Client
	s3       *s3.Client
	log      *testenv.Buffer
	batches  *batchLog
	api      string // the local jobs API, http://127.0.0.1:port
	identity *pipeline.Identity
	http     *http.Client

	tableKeys  map[string][]string // logical table → its key attributes
	queueNames map[string]string   // logical queue → the name the quarantine keys it by

	jobA, jobB jobs.Job // completed: t-1's and t-2's
	tokens     map[string]string
	sent       map[string]bool // message ids sent by the cases
}

// The resources a snapshot covers.
var (
	hostileTables = []string{"JobsTable", "ViewsTable", "TotalsTable", "ArticlesTable", "QuarantineTable"}
	hostileQueues = []string{"CommandsQueue", "EventsQueue", "CommandsDLQ", "EventsDLQ", "StreamFailureQueue"}
)

func startHostile(t *testing.T) *hostile {
	t.Helper()
	state := testenv.Stack(t)
	for _, kv := range state.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, "hostile")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })

	h := &hostile{
		deployed: deployed, ddb: state.DynamoDBClient(), sqs: state.SQSClient(), s3: state.S3Client(),
		log: &testenv.Buffer{}, batches: &batchLog{deleted: map[string]string{}},
		tableKeys: map[string][]string{}, queueNames: map[string]string{}, tokens: map[string]string{}, sent: map[string]bool{},
	}
	for _, logical := range hostileTables {
		out, err := h.ddb.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(deployed.Resources[logical])})
		require.NoError(t, err, logical)
		for _, k := range out.Table.KeySchema { // hash first, then range
			h.tableKeys[logical] = append(h.tableKeys[logical], aws.ToString(k.AttributeName))
		}
	}
	for _, logical := range hostileQueues {
		require.NotEmpty(t, deployed.Resources[logical], logical)
		name, err := quarantine.QueueName(deployed.Attributes[logical]["Arn"])
		require.NoError(t, err, logical)
		h.queueNames[logical] = name
	}
	require.NoError(t, demo.SeedArticles(t.Context(), h.ddb, deployed.Resources["ArticlesTable"], map[string]int{"t-1": 4, "t-2": 3}))

	h.p, err = pipeline.Build(t.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		Logger:     slog.New(slog.NewJSONHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnSQSBatch: h.batches.record,
	})
	require.NoError(t, err)
	h.p.Run(t.Context())
	t.Cleanup(func() {
		require.NoError(t, h.p.Stop())
		if t.Failed() {
			t.Logf("the functions' log:\n%s", h.log.String())
		}
	})

	// The jobs API as `fifoworker local serve` serves it, on 127.0.0.1,
	// its stand-in for the JWT authorizer in front of intake.
	h.identity, err = pipeline.NewIdentity(pipeline.IdentityConfig{TenantClaim: h.p.Setting("intake", "TENANT_CLAIM")})
	require.NoError(t, err)
	api, err := pipeline.NewHTTPAPI(pipeline.HTTPAPIConfig{Handler: h.p.HTTP, Identity: h.identity})
	require.NoError(t, err)
	ln, err := pipeline.ListenLoopback("127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.api = "http://" + ln.Addr().String()
	// Expect: 100-continue lets the client hear a refusal before it sends
	// a body the server will not read.
	h.http = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 30 * time.Second}, Timeout: time.Minute}
	t.Cleanup(h.http.CloseIdleConnections)
	for _, tenant := range []string{"t-1", "t-2"} {
		h.tokens[tenant], err = h.identity.Token(tenant)
		require.NoError(t, err)
	}

	// The state every case must leave alone: a completed job of each tenant,
	// run through the whole pipeline.
	h.jobA = h.createAndComplete(t, "t-1", "hostile-a")
	h.jobB = h.createAndComplete(t, "t-2", "hostile-b")
	h.awaitQuiet(t)
	return h
}

// createAndComplete creates a job through the jobs API and waits until it
// is completed and projected.
func (h *hostile) createAndComplete(t *testing.T, tenant, intent string) jobs.Job {
	t.Helper()
	status, body := h.request(t, http.MethodPost, "/jobs", h.tokens[tenant], "application/json", []byte(`{"spec":{}}`), map[string]string{"Idempotency-Key": intent})
	require.Equal(t, http.StatusAccepted, status, body)
	id := jobs.DeriveJobID(tenant, intent)
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: h.ddb, Table: h.deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	views := h.views(t)
	h.await(t, "job "+id+" completed and projected", func() bool {
		j, err := store.Get(t.Context(), id)
		if err != nil || j.Status != jobs.StatusCompleted {
			return false
		}
		v, err := views.View(t.Context(), id)
		c, cerr := views.Cursor(t.Context(), tenant, id)
		return err == nil && cerr == nil && v.Version == j.Version && c.Version == j.Version
	})
	j, err := store.Get(t.Context(), id)
	require.NoError(t, err)
	require.Positive(t, j.Progress)
	return j
}

func (h *hostile) views(t *testing.T) *projection.DynamoStore {
	t.Helper()
	store, err := projection.NewDynamoStore(projection.DynamoConfig{Client: h.ddb, Tables: projection.Tables{Views: h.deployed.Resources["ViewsTable"], Totals: h.deployed.Resources["TotalsTable"]}})
	require.NoError(t, err)
	return store
}

func (h *hostile) quarantine(t *testing.T) *quarantine.DynamoStore {
	t.Helper()
	store, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: h.ddb, Table: h.deployed.Resources["QuarantineTable"]})
	require.NoError(t, err)
	return store
}

// check runs one case between two snapshots.
func (h *hostile) check(t *testing.T, c hostileCase) {
	if c.setup != nil {
		c.setup(t)
	}
	h.awaitQuiet(t)
	before := h.snapshot(t)
	want := c.run(t)
	h.awaitQuiet(t)
	after := h.snapshot(t)
	got := before.diff(after)
	slices.Sort(want)
	if !slices.Equal(want, got) {
		var b strings.Builder
		for _, k := range mergeKeys(want, got) {
			mark := " "
			switch {
			case !slices.Contains(want, k):
				mark = "+" // changed, but the row does not say so
			case !slices.Contains(got, k):
				mark = "-" // the row says so, but it did not change
			}
			fmt.Fprintf(&b, "%s %s\n    before: %s\n    after:  %s\n", mark, k, before[k], after[k])
		}
		t.Errorf("the case changed other keys than its row allows (+ unexpected, - missing):\n%s", b.String())
	}
}

func mergeKeys(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// ---------------------------------------------------------------- the rows

func hostileCatalogue(h *hostile) []hostileCase {
	var (
		cmdGroup, cmdID, cmdSeq, cmdBody string // the malformed command's group, message id, sequence number and body
		drainGroup, drainSeq             string // the unknown-type command's, put to draining by an operator
		drainBody                        string
		drainEpoch                       int64
		cmdForged                        parkedWant // the first forged copy parked in the malformed command's group
	)
	jobCommand := func(j jobs.Job, tenant string) string {
		b, _ := json.Marshal(outbox.Command{ // strings, numbers and a time: it cannot fail
			Type: jobs.MessageRun, CommandID: jobs.OutboxID(j.ID, 0), JobID: j.ID, IntentID: j.IntentID,
			Tenant: tenant, Version: 0, IssuedAt: j.CreatedAt.UTC(),
		})
		return string(b)
	}
	parkedCommand := func(name, group, body, cause string) hostileCase {
		return hostileCase{name: name, run: func(t *testing.T) []string {
			id, seq := h.send(t, "CommandsQueue", group, "hostile-"+strconv.FormatInt(time.Now().UnixNano(), 36), body)
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", group, parkedWant{id: id, seq: seq, body: body, cause: cause})
			h.requireLogged(t, id, "worker: malformed command")
			h.requireLogged(t, id, "fifo: message", "outcome", "parked")
			return []string{h.holdKey("CommandsQueue", group), h.parkedKey("CommandsQueue", group, seq)}
		}}
	}
	parkedEvent := func(name, group, body, cause string) hostileCase {
		return hostileCase{name: name, run: func(t *testing.T) []string {
			id, seq := h.send(t, "EventsQueue", group, "hostile-"+strconv.FormatInt(time.Now().UnixNano(), 36), body)
			h.awaitDeleted(t, id)
			h.requireParked(t, "EventsQueue", group, parkedWant{id: id, seq: seq, body: body, cause: cause})
			h.requireLogged(t, id, "projection: malformed event")
			return []string{h.holdKey("EventsQueue", group), h.parkedKey("EventsQueue", group, seq)}
		}}
	}
	unchanged := func(name string, run func(t *testing.T)) hostileCase {
		return hostileCase{name: name, run: func(t *testing.T) []string { run(t); return nil }}
	}
	bigCommand := func(size int) string {
		// Valid in every field, but over outbox.MaxBody.
		return `{"type":"job.run","command_id":"big-1/v0","job_id":"big-1","intent_id":"` + strings.Repeat("x", size) +
			`","tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`
	}
	event := func(j jobs.Job, typ string, version int64, status jobs.Status, progress, delta int64) string {
		b, _ := json.Marshal(outbox.Event{ // as above
			Type: typ, EventID: jobs.OutboxID(j.ID, version), JobID: j.ID, Tenant: j.Tenant, Version: version,
			Generation: 1, Status: status, Progress: progress, Delta: delta, OccurredAt: j.UpdatedAt.UTC(),
		})
		return string(b)
	}

	return []hostileCase{
		// ------------------------------------------------ commands queue → worker
		{name: "command: malformed JSON", run: func(t *testing.T) []string {
			cmdGroup, cmdBody = "hostile-malformed", `{"type":"job.run","job_id":"job-42",`
			id, seq := h.send(t, "CommandsQueue", cmdGroup, "hostile-malformed-1", cmdBody)
			cmdID, cmdSeq = id, seq
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", cmdGroup, parkedWant{id: id, seq: seq, body: cmdBody, cause: "malformed message"})
			h.requireLogged(t, id, "worker: malformed command")
			return []string{h.holdKey("CommandsQueue", cmdGroup), h.parkedKey("CommandsQueue", cmdGroup, seq)}
		}},
		{name: "command: unknown type", run: func(t *testing.T) []string {
			drainGroup = "hostile-unknown-type"
			drainBody = `{"type":"job.delete","command_id":"job-42/v0","job_id":"job-42","intent_id":"i","tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`
			id, seq := h.send(t, "CommandsQueue", drainGroup, "hostile-unknown-1", drainBody)
			drainSeq = seq
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", drainGroup, parkedWant{id: id, seq: seq, body: drainBody, cause: `command type "job.delete" is not "job.run"`})
			return []string{h.holdKey("CommandsQueue", drainGroup), h.parkedKey("CommandsQueue", drainGroup, seq)}
		}},
		parkedCommand("command: missing fields (no tenant, intent or time)", "hostile-missing",
			`{"type":"job.run","command_id":"job-42/v0","job_id":"job-42","version":0}`, "has no tenant"),
		// The largest body the queue takes, whatever its MaximumMessageSize
		// (the emulator's 256 KiB; SQS allows up to 1 MiB).
		{name: "command: body over outbox.MaxBody, as large as the queue takes", run: func(t *testing.T) []string {
			group := "hostile-oversized"
			body := bigCommand(h.maxMessageSize(t, "CommandsQueue") - len(bigCommand(0)))
			id, seq := h.send(t, "CommandsQueue", group, "hostile-oversized-1", body)
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", group, parkedWant{id: id, seq: seq, body: body, cause: "is over 65536"})
			h.requireLogged(t, id, "worker: malformed command")
			// Too large for the quarantine's item: the body is kept in the
			// bucket, under quarantine/.
			return []string{
				h.holdKey("CommandsQueue", group), h.parkedKey("CommandsQueue", group, seq),
				"bucket|" + quarantine.BodyKey(h.queueNames["CommandsQueue"], group, h.seqKey(t, seq)),
			}
		}},
		unchanged("command: body over the queue's limit is refused at the send", func(t *testing.T) {
			_, err := h.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{
				QueueUrl:       aws.String(h.deployed.Resources["CommandsQueue"]),
				MessageBody:    aws.String(bigCommand(h.maxMessageSize(t, "CommandsQueue") + 1)),
				MessageGroupId: aws.String("hostile-too-big"), MessageDeduplicationId: aws.String("hostile-too-big-1"),
			})
			var api smithy.APIError
			require.ErrorAs(t, err, &api)
			require.Contains(t, api.ErrorCode(), "InvalidParameterValue", err.Error())
		}),
		parkedCommand("command: job id with path separators", "hostile/../path",
			`{"type":"job.run","command_id":"../job-a/v0","job_id":"../job-a","intent_id":"i","tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`,
			`byte '.' at offset 0`),
		parkedCommand("command: job id in unicode", "hostile-unicode",
			`{"type":"job.run","command_id":"jöb-42/v0","job_id":"jöb-42","intent_id":"i","tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`,
			`has byte`),
		parkedCommand("command: job id of 129 characters", strings.Repeat("g", 128),
			`{"type":"job.run","command_id":"`+strings.Repeat("j", 129)+`/v0","job_id":"`+strings.Repeat("j", 129)+`","intent_id":"i","tenant":"t-1","version":0,"issued_at":"2026-11-04T09:00:00Z"}`,
			"is 129 bytes long"),
		// Well-formed, but with a tenant no job can have: refused for good
		// (before the decoders checked it, the claim refused it as a failure
		// that might pass, on every receive until the quarantine's
		// threshold: half an hour on the commands queue).
		parkedCommand("command: a tenant the job store refuses", "hostile-tenant-rule",
			`{"type":"job.run","command_id":"job-42/v0","job_id":"job-42","intent_id":"i","tenant":"`+strings.Repeat("t", 300)+`","version":0,"issued_at":"2026-11-04T09:00:00Z"}`,
			"a tenant is 1 to 256 bytes"),
		{name: "command: an old command of a completed job, replayed", run: func(t *testing.T) []string {
			id, _ := h.send(t, "CommandsQueue", h.jobB.ID, "hostile-replay-1", jobCommand(h.jobB, "t-2"))
			h.awaitDeleted(t, id)
			h.requireLogged(t, id, "worker: job is final; command acknowledged")
			return nil
		}},
		{name: "command: another tenant's job", run: func(t *testing.T) []string {
			// A well-formed command for t-1's job that names t-2: the claim's
			// condition includes the tenant, so it finds no job; the command
			// is refused for good and holds the job's group.
			body := jobCommand(h.jobA, "t-2")
			id, seq := h.send(t, "CommandsQueue", h.jobA.ID, "hostile-tenant-1", body)
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", h.jobA.ID, parkedWant{id: id, seq: seq, body: body, cause: "job not found"})
			h.requireLogged(t, id, "worker: command for no job of its tenant")
			return []string{h.holdKey("CommandsQueue", h.jobA.ID), h.parkedKey("CommandsQueue", h.jobA.ID, seq)}
		}},

		// ------------------------------------------------ forged redrive copies
		//
		// A redriven copy's deduplication id names the redrive's epoch, its
		// parked message's random nonce and its sequence number; it runs
		// only if that message is still parked with that nonce and body and
		// its group is draining under that epoch. A producer sees the
		// epoch, the sequence number and the body, never the nonce.
		{name: "forged redrive copy: matches no parked message", run: func(t *testing.T) []string {
			// It claims a copy of a message parked in job B's group, which
			// holds none: an ordinary message, it runs.
			dedup := quarantine.Copy{Epoch: 1, Nonce: forgedNonce(1), Sequence: strings.Repeat("0", 19) + strings.Repeat("1", 21)}.DeduplicationID()
			id, _ := h.send(t, "CommandsQueue", h.jobB.ID, dedup, jobCommand(h.jobB, "t-2"))
			h.awaitDeleted(t, id)
			h.requireLogged(t, id, "worker: job is final; command acknowledged")
			return nil
		}},
		{name: "forged redrive copy: a parked message's sequence, another body, group held", run: func(t *testing.T) []string {
			require.NotEmpty(t, cmdSeq, "the malformed command's case parked it")
			dedup := quarantine.Copy{Epoch: 1, Nonce: forgedNonce(2), Sequence: h.seqKey(t, cmdSeq)}.DeduplicationID()
			body := jobCommand(h.jobB, "t-2") // would run, were it taken for the copy
			id, seq := h.send(t, "CommandsQueue", cmdGroup, dedup, body)
			cmdForged = parkedWant{id: id, seq: seq, body: body, cause: "parked while the group was held"}
			h.awaitDeleted(t, id)
			// Parked after the message it names, by its own sequence number;
			// that one stays parked as it was.
			h.requireParked(t, "CommandsQueue", cmdGroup, parkedWant{id: cmdID, seq: cmdSeq, body: cmdBody, cause: "malformed message"}, cmdForged)
			h.requireNotLogged(t, id, "worker: job is final; command acknowledged")
			return []string{h.holdKey("CommandsQueue", cmdGroup), h.parkedKey("CommandsQueue", cmdGroup, seq)}
		}},
		{name: "forged redrive copy: a parked message's sequence and body, group held", run: func(t *testing.T) []string {
			dedup := quarantine.Copy{Epoch: 1, Nonce: forgedNonce(3), Sequence: h.seqKey(t, cmdSeq)}.DeduplicationID()
			id, seq := h.send(t, "CommandsQueue", cmdGroup, dedup, cmdBody)
			h.awaitDeleted(t, id)
			h.requireParked(t, "CommandsQueue", cmdGroup,
				parkedWant{id: cmdID, seq: cmdSeq, body: cmdBody, cause: "malformed message"}, cmdForged,
				parkedWant{id: id, seq: seq, body: cmdBody, cause: "parked while the group was held"})
			h.requireNotLogged(t, id, "worker: malformed command")
			return []string{h.holdKey("CommandsQueue", cmdGroup), h.parkedKey("CommandsQueue", cmdGroup, seq)}
		}},
		{
			name: "forged redrive copy: a parked message's epoch, sequence and body, group draining",
			setup: func(t *testing.T) {
				// An operator's redrive has begun (epoch raised, draining) and
				// its copy is not sent yet: the moment a forged copy would
				// run ahead of the parked message, were it taken for it.
				require.NotEmpty(t, drainSeq, "the unknown-type command's case parked it")
				hold, err := h.quarantine(t).BeginRedrive(t.Context(), h.queueNames["CommandsQueue"], drainGroup, time.Now())
				require.NoError(t, err)
				require.Equal(t, quarantine.StateDraining, hold.State)
				drainEpoch = hold.Epoch
			},
			run: func(t *testing.T) []string {
				dedup := quarantine.Copy{Epoch: drainEpoch, Nonce: forgedNonce(4), Sequence: h.seqKey(t, drainSeq)}.DeduplicationID()
				id, seq := h.send(t, "CommandsQueue", drainGroup, dedup, drainBody)
				h.awaitDeleted(t, id)
				// Not the copy: parked behind the message it names, which
				// still waits for its real copy; the group stays draining.
				hold, err := h.quarantine(t).Hold(t.Context(), h.queueNames["CommandsQueue"], drainGroup)
				require.NoError(t, err)
				require.Equal(t, quarantine.StateDraining, hold.State)
				require.Equal(t, drainEpoch, hold.Epoch)
				require.Equal(t, int64(2), hold.Parked)
				msgs, err := h.quarantine(t).Messages(t.Context(), h.queueNames["CommandsQueue"], drainGroup, "", "", 0)
				require.NoError(t, err)
				require.Len(t, msgs, 2)
				require.Equal(t, []quarantine.Status{quarantine.StatusParked, quarantine.StatusParked}, []quarantine.Status{msgs[0].Status, msgs[1].Status})
				require.Equal(t, []string{drainBody, drainBody}, []string{msgs[0].Body, msgs[1].Body})
				require.Equal(t, []string{h.seqKey(t, drainSeq), h.seqKey(t, seq)}, []string{msgs[0].Sequence, msgs[1].Sequence})
				require.Equal(t, id, msgs[1].MessageID)
				h.requireLogged(t, id, "fifo: message", "outcome", "parked", "reason", "its group is draining")
				h.requireNotLogged(t, id, "worker: malformed command")
				return []string{h.holdKey("CommandsQueue", drainGroup), h.parkedKey("CommandsQueue", drainGroup, seq)}
			},
		},

		// ------------------------------------------------ events queue → projector
		parkedEvent("event: malformed JSON", "hostile-ev-malformed", `{"type":"job.completed",`, "malformed message"),
		parkedEvent("event: unknown type", "hostile-ev-type",
			`{"type":"order.created","event_id":"job-42/v1","job_id":"job-42","tenant":"t-1","version":1,"generation":1,"status":"running","progress":0,"delta":0,"occurred_at":"2026-11-04T09:00:00Z"}`,
			"is not a job event"),
		parkedEvent("event: missing fields (no tenant, version or status)", "hostile-ev-missing",
			`{"type":"job.started","event_id":"job-42/v1","job_id":"job-42"}`, "events start at version 1"),
		parkedEvent("event: a count the projection's store refuses (negative generation)", "hostile-ev-negative",
			`{"type":"job.started","event_id":"job-42/v1","job_id":"job-42","tenant":"t-1","version":1,"generation":-1,"status":"running","progress":0,"delta":0,"occurred_at":"2026-11-04T09:00:00Z"}`,
			"negative generation or result size"),
		{name: "event: body over outbox.MaxBody", run: func(t *testing.T) []string {
			group := "hostile-ev-oversized"
			body := `{"type":"job.started","event_id":"` + strings.Repeat("e", 70<<10) + `"}`
			id, seq := h.send(t, "EventsQueue", group, "hostile-ev-big-1", body)
			h.awaitDeleted(t, id)
			h.requireParked(t, "EventsQueue", group, parkedWant{id: id, seq: seq, body: body, cause: "is over 65536"})
			return []string{
				h.holdKey("EventsQueue", group), h.parkedKey("EventsQueue", group, seq),
				"bucket|" + quarantine.BodyKey(h.queueNames["EventsQueue"], group, h.seqKey(t, seq)),
			}
		}},
		{name: "event: an old version replayed", run: func(t *testing.T) []string {
			// v1 (job.started) of a job whose view and cursor are at its
			// final version, sent again under a new deduplication id (a
			// replay beyond SQS's window): the view does not go back and no
			// delta is counted (it adds nothing: skipped, its cursor not
			// even read).
			id, _ := h.send(t, "EventsQueue", h.jobA.ID, "hostile-ev-replay-1", event(h.jobA, jobs.EventStarted, 1, jobs.StatusRunning, 0, 0))
			h.awaitDeleted(t, id)
			h.requireLogged(t, id, "projection: event projected", "outcome", "skipped")
			return nil
		}},
		{name: "event: the final event replayed with an inflated delta", run: func(t *testing.T) []string {
			id, _ := h.send(t, "EventsQueue", h.jobA.ID, "hostile-ev-replay-2",
				event(h.jobA, jobs.EventCompleted, h.jobA.Version, jobs.StatusCompleted, h.jobA.Progress, 1000))
			h.awaitDeleted(t, id)
			h.requireLogged(t, id, "projection: event projected", "outcome", "duplicate")
			return nil
		}},

		// ------------------------------------------------ batches Lambda would not send
		unchanged("worker: a standard-queue batch (no MessageGroupId, no SequenceNumber)", func(t *testing.T) {
			// Each message is its own lane and the quarantine does not see
			// it: the valid command runs (its job is final: acknowledged),
			// the malformed one fails for the queue's redrive policy.
			batch := h.sqsBatch("CommandsQueue", "", jobCommand(h.jobB, "t-2"), `{"type":`)
			resp := h.invokeSQS(t, "worker", batch)
			require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: batch.Records[1].MessageId}}, resp.BatchItemFailures)
			h.requireLogged(t, batch.Records[0].MessageId, "worker: job is final; command acknowledged")
			h.requireLogged(t, batch.Records[1].MessageId, "worker: malformed command")
			h.requireLogged(t, batch.Records[1].MessageId, "fifo: message", "outcome", "failed")
		}),
		unchanged("worker: a batch from another queue (the events queue's ARN)", func(t *testing.T) {
			batch := h.sqsBatch("EventsQueue", "hostile-source", jobCommand(h.jobB, "t-2"), `{"type":`)
			resp := h.invokeSQS(t, "worker", batch)
			require.Equal(t, []events.SQSBatchItemFailure{
				{ItemIdentifier: batch.Records[0].MessageId}, {ItemIdentifier: batch.Records[1].MessageId},
			}, resp.BatchItemFailures, "the quarantine refuses the batch: nothing runs")
			h.requireLogged(t, batch.Records[0].MessageId, "fifo: message", "outcome", "failed")
			h.requireNotLogged(t, batch.Records[0].MessageId, "worker: job is final; command acknowledged")
		}),
		unchanged("projector: a batch from another queue (the commands queue's ARN)", func(t *testing.T) {
			batch := h.sqsBatch("CommandsQueue", h.jobA.ID, event(h.jobA, jobs.EventStarted, 1, jobs.StatusRunning, 0, 0))
			resp := h.invokeSQS(t, "projector", batch)
			require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: batch.Records[0].MessageId}}, resp.BatchItemFailures)
			h.requireNotLogged(t, batch.Records[0].MessageId, "projection: event projected")
		}),

		// ------------------------------------------------ Jobs stream → relay
		unchanged("relay: stream records without images", func(t *testing.T) {
			keys := map[string]events.DynamoDBAttributeValue{"job_id": events.NewStringAttribute(h.jobA.ID)}
			full := h.streamImage(t, h.jobA.ID)
			rec := func(name, seq string, newImage, oldImage map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
				return events.DynamoDBEventRecord{
					EventID: "hostile-" + seq, EventName: name, EventSource: "aws:dynamodb", EventVersion: "1.1", AWSRegion: "eu-west-1",
					EventSourceArn: h.deployed.Attributes["JobsTable"]["StreamArn"],
					Change: events.DynamoDBStreamRecord{
						Keys: keys, NewImage: newImage, OldImage: oldImage, SequenceNumber: seq, StreamViewType: "KEYS_ONLY",
					},
				}
			}
			for _, tc := range []struct {
				name string
				rec  events.DynamoDBEventRecord
			}{
				{"MODIFY without images", rec("MODIFY", "900000000000000000001", nil, nil)},
				{"INSERT without a new image", rec("INSERT", "900000000000000000002", nil, nil)},
				{"MODIFY without its old image", rec("MODIFY", "900000000000000000003", full, nil)},
			} {
				var resp events.DynamoDBEventResponse
				require.NoError(t, h.p.Invoke(t.Context(), "relay", events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{tc.rec}}, &resp), tc.name)
				require.Equal(t, []events.DynamoDBBatchItemFailure{{ItemIdentifier: tc.rec.Change.SequenceNumber}}, resp.BatchItemFailures,
					"%s: the record cannot be published as it should be; it is reported, to be retried and then sent to the on-failure queue", tc.name)
				h.requireLogged(t, "", "outbox: undecodable stream record", "sequence_number", tc.rec.Change.SequenceNumber)
			}
			// A removal (TTL) needs no image: it carries no message.
			var resp events.DynamoDBEventResponse
			require.NoError(t, h.p.Invoke(t.Context(), "relay", events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
				rec("REMOVE", "900000000000000000004", nil, nil),
			}}, &resp))
			require.Empty(t, resp.BatchItemFailures)
		}),

		// ------------------------------------------------ the jobs API
		unchanged("HTTP: no token", func(t *testing.T) {
			status, body := h.request(t, http.MethodPost, "/jobs", "", "application/json", []byte(`{"spec":{}}`), map[string]string{"Idempotency-Key": "k-none"})
			h.requireAPIError(t, status, body, http.StatusUnauthorized, intake.CodeUnauthorized)
			status, body = h.request(t, http.MethodGet, "/jobs/"+h.jobA.ID, "", "", nil, nil)
			h.requireAPIError(t, status, body, http.StatusUnauthorized, intake.CodeUnauthorized)
			// Behind API Gateway intake never sees such a request; given one
			// without the authorizer's context, it refuses it itself.
			resp, err := h.p.HTTP(t.Context(), events.APIGatewayV2HTTPRequest{
				Version: "2.0", RawPath: "/jobs/" + h.jobA.ID,
				RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: "/jobs/" + h.jobA.ID}},
			})
			require.NoError(t, err)
			h.requireAPIError(t, resp.StatusCode, resp.Body, http.StatusUnauthorized, intake.CodeUnauthorized)
		}),
		unchanged("HTTP: a forged or foreign token", func(t *testing.T) {
			other, err := pipeline.NewIdentity(pipeline.IdentityConfig{TenantClaim: h.identity.TenantClaim()})
			require.NoError(t, err)
			foreign, err := other.Token("t-1") // well-formed, signed with another key
			require.NoError(t, err)
			unsigned := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
				base64.RawURLEncoding.EncodeToString([]byte(`{"tenant":"t-1","iss":"fifoworker-local","aud":"fifoworker-jobs-api","exp":9999999999}`)) + "."
			for _, tok := range []string{foreign, unsigned, "not-a-token"} {
				status, body := h.request(t, http.MethodGet, "/jobs/"+h.jobA.ID, tok, "", nil, nil)
				h.requireAPIError(t, status, body, http.StatusUnauthorized, intake.CodeUnauthorized)
			}
		}),
		unchanged("HTTP: another tenant's token on a job", func(t *testing.T) {
			for _, method := range []string{http.MethodGet, http.MethodDelete} {
				status, body := h.request(t, method, "/jobs/"+h.jobA.ID, h.tokens["t-2"], "", nil, nil)
				h.requireAPIError(t, status, body, http.StatusNotFound, intake.CodeJobNotFound)
			}
			status, body := h.request(t, http.MethodGet, "/jobs/"+h.jobA.ID, h.tokens["t-1"], "", nil, nil)
			require.Equal(t, http.StatusOK, status, "its own tenant still sees it: %s", body)
		}),
		unchanged("HTTP: wrong or missing content type", func(t *testing.T) {
			for _, ct := range []string{"text/plain", "", "application/json; charset=latin1"} {
				status, body := h.request(t, http.MethodPost, "/jobs", h.tokens["t-1"], ct, []byte(`{"spec":{}}`), map[string]string{"Idempotency-Key": "k-ct"})
				h.requireAPIError(t, status, body, http.StatusUnsupportedMediaType, intake.CodeUnsupportedMediaType)
			}
		}),
		unchanged("HTTP: unknown fields, malformed JSON, missing Idempotency-Key", func(t *testing.T) {
			post := func(body, key string) (int, string) {
				headers := map[string]string{}
				if key != "" {
					headers["Idempotency-Key"] = key
				}
				return h.request(t, http.MethodPost, "/jobs", h.tokens["t-1"], "application/json", []byte(body), headers)
			}
			status, body := post(`{"spec":{},"tenant":"t-2"}`, "k-unknown")
			h.requireAPIError(t, status, body, http.StatusBadRequest, intake.CodeInvalidBody)
			require.Contains(t, body, `unknown field \"tenant\"`)
			status, body = post(`{"spec":{"a":"b"`, "k-malformed")
			h.requireAPIError(t, status, body, http.StatusBadRequest, intake.CodeInvalidBody)
			status, body = post(`{"spec":{}}`, "")
			h.requireAPIError(t, status, body, http.StatusBadRequest, intake.CodeMissingIdempotencyKey)
		}),
		unchanged("HTTP: oversized body", func(t *testing.T) {
			over := func(n int) []byte { return []byte(`{"spec":{"a":"` + strings.Repeat("x", n) + `"}}`) }
			status, body := h.request(t, http.MethodPost, "/jobs", h.tokens["t-1"], "application/json", over(intake.MaxBodyBytes), map[string]string{"Idempotency-Key": "k-big"})
			h.requireAPIError(t, status, body, http.StatusRequestEntityTooLarge, intake.CodePayloadTooLarge)
			status, body = h.request(t, http.MethodPost, "/jobs", h.tokens["t-1"], "application/json", over(pipeline.MaxRequestBodyBytes), map[string]string{"Idempotency-Key": "k-huge"})
			h.requireAPIError(t, status, body, http.StatusRequestEntityTooLarge, intake.CodePayloadTooLarge)
			require.Contains(t, body, "API Gateway's limit", "answered before intake runs")
		}),
		unchanged("HTTP: job ids with path separators, unicode, 129 characters", func(t *testing.T) {
			for path, want := range map[string][2]any{
				"/jobs/a%2Fb":                         {http.StatusBadRequest, intake.CodeInvalidJobID},
				"/jobs/..%2F" + h.jobA.ID:             {http.StatusBadRequest, intake.CodeInvalidJobID},
				"/jobs/" + h.jobA.ID + "/x":           {http.StatusNotFound, intake.CodeRouteNotFound},
				"/jobs/j%C3%B6b-42":                   {http.StatusBadRequest, intake.CodeInvalidJobID},
				"/jobs/" + strings.Repeat("j", 129):   {http.StatusBadRequest, intake.CodeInvalidJobID},
				"/jobs/" + strings.Repeat("j", 128):   {http.StatusNotFound, intake.CodeJobNotFound},
				"/jobs/%00":                           {http.StatusBadRequest, intake.CodeInvalidJobID},
				"/jobs/" + strings.ToUpper(h.jobA.ID): {http.StatusNotFound, intake.CodeJobNotFound},
			} {
				for _, method := range []string{http.MethodGet, http.MethodDelete} {
					status, body := h.request(t, method, path, h.tokens["t-1"], "", nil, nil)
					require.Equal(t, want[0], status, "%s %s: %s", method, path, body)
					h.requireAPIError(t, status, body, want[0].(int), want[1].(string))
				}
			}
		}),
	}
}

// ---------------------------------------------------------------- acting

// send sends body to a FIFO queue of the deployment and returns its
// message id and sequence number.
func (h *hostile) send(t *testing.T, queue, group, dedup, body string) (string, string) {
	t.Helper()
	out, err := h.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{
		QueueUrl: aws.String(h.deployed.Resources[queue]), MessageBody: aws.String(body),
		MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup),
	})
	require.NoError(t, err)
	id, seq := aws.ToString(out.MessageId), aws.ToString(out.SequenceNumber)
	require.NotEmpty(t, seq)
	// A send SQS deduplicated answers with the earlier message's id: the
	// case would not be sending what it says.
	require.False(t, h.sent[id], "SQS took message %s (deduplication id %q) for a resend", id, dedup)
	h.sent[id] = true
	return id, seq
}

// maxMessageSize is the queue's MaximumMessageSize.
func (h *hostile) maxMessageSize(t *testing.T, queue string) int {
	t.Helper()
	out, err := h.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(h.deployed.Resources[queue]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameMaximumMessageSize},
	})
	require.NoError(t, err)
	n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameMaximumMessageSize)])
	require.NoError(t, err)
	require.Greater(t, n, outbox.MaxBody)
	return n
}

var hostileSeq int

// sqsBatch is a batch as Lambda would give it from queue: one record per
// body, in group (none: a standard queue's, without group or sequence
// number).
func (h *hostile) sqsBatch(queue, group string, bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for _, body := range bodies {
		hostileSeq++
		attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10)}
		if group != "" {
			attrs["MessageGroupId"] = group
			attrs["MessageDeduplicationId"] = fmt.Sprintf("hostile-direct-%d", hostileSeq)
			attrs["SequenceNumber"] = fmt.Sprintf("%020d", 99_000_000+hostileSeq)
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("hostile-direct-%d", hostileSeq), ReceiptHandle: "hostile", Body: body,
			Md5OfBody: md5Hex(body), Attributes: attrs, EventSource: "aws:sqs",
			EventSourceARN: h.deployed.Attributes[queue]["Arn"], AWSRegion: "eu-west-1",
		})
	}
	return ev
}

func (h *hostile) invokeSQS(t *testing.T, fn string, batch events.SQSEvent) events.SQSEventResponse {
	t.Helper()
	var resp events.SQSEventResponse
	require.NoError(t, h.p.Invoke(t.Context(), fn, batch, &resp), fn)
	return resp
}

// streamImage is the job item of id as a stream image.
func (h *hostile) streamImage(t *testing.T, id string) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	out, err := h.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(h.deployed.Resources["JobsTable"]), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: id}},
	})
	require.NoError(t, err)
	require.NotEmpty(t, out.Item)
	raw, err := json.Marshal(canonItem(out.Item))
	require.NoError(t, err)
	var img map[string]events.DynamoDBAttributeValue
	require.NoError(t, json.Unmarshal(raw, &img))
	return img
}

// request sends a request to the jobs API and returns its status and body.
func (h *hostile) request(t *testing.T, method, path, token, contentType string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, h.api+path, bytes.NewReader(body))
	require.NoError(t, err)
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(body) > 1<<20 {
		req.Header.Set("Expect", "100-continue")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.http.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (h *hostile) requireAPIError(t *testing.T, status int, body string, wantStatus int, wantCode string) {
	t.Helper()
	require.Equal(t, wantStatus, status, body)
	var e intake.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, wantCode, e.Error.Code, body)
	require.NotEmpty(t, e.Error.Message, "a clear error says what is wrong")
}

// ---------------------------------------------------------------- waiting

// batchLog keeps which function's mapping deleted which message.
type batchLog struct {
	mu      sync.Mutex
	deleted map[string]string // message id → function
}

func (b *batchLog) record(fn string, r localesm.SQSBatchResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range r.Deleted {
		b.deleted[id] = fn
	}
}

func (b *batchLog) wasDeleted(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.deleted[id]
	return ok
}

// await polls cond until it holds; it fails after two minutes.
func (h *hostile) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "not within two minutes: %s", what)
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitDeleted waits until a mapping has consumed and deleted each message.
func (h *hostile) awaitDeleted(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		h.await(t, "message "+id+" consumed", func() bool { return h.batches.wasDeleted(id) })
	}
}

// awaitQuiet waits until no queue holds a message, visible or in flight.
func (h *hostile) awaitQuiet(t *testing.T) {
	t.Helper()
	h.await(t, "every queue empty", func() bool {
		for _, q := range hostileQueues {
			if h.depth(t, q) != "0/0/0" {
				return false
			}
		}
		return true
	})
}

func (h *hostile) depth(t *testing.T, queue string) string {
	t.Helper()
	out, err := h.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(h.deployed.Resources[queue]),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	require.NoError(t, err)
	a := out.Attributes
	return a["ApproximateNumberOfMessages"] + "/" + a["ApproximateNumberOfMessagesNotVisible"] + "/" + a["ApproximateNumberOfMessagesDelayed"]
}

// ---------------------------------------------------------------- checking

type parkedWant struct {
	id, seq, body string
	cause         string // a part of its cause
}

// requireParked holds group's hold on queue to be held with exactly want
// parked, in this order.
func (h *hostile) requireParked(t *testing.T, queue, group string, want ...parkedWant) {
	t.Helper()
	q := h.quarantine(t)
	hold, err := q.Hold(t.Context(), h.queueNames[queue], group)
	require.NoError(t, err, "group %q is held", group)
	require.Equal(t, quarantine.StateHeld, hold.State)
	require.Equal(t, int64(len(want)), hold.Parked)
	msgs, err := q.Messages(t.Context(), h.queueNames[queue], group, "", "", 0)
	require.NoError(t, err)
	require.Len(t, msgs, len(want))
	for i, w := range want {
		m := msgs[i]
		require.Equal(t, quarantine.StatusParked, m.Status)
		require.Equal(t, h.seqKey(t, w.seq), m.Sequence)
		if w.id != "" {
			require.Equal(t, w.id, m.MessageID)
		}
		require.Equal(t, md5Hex(w.body), m.BodyMD5)
		require.Equal(t, int64(len(w.body)), m.BodySize)
		if m.BodyKey != "" {
			bodies, err := quarantine.NewS3Bodies(quarantine.S3BodiesConfig{Client: h.s3, Bucket: h.deployed.Resources["CandidatesBucket"]})
			require.NoError(t, err)
			got, err := bodies.GetBody(t.Context(), m.BodyKey)
			require.NoError(t, err)
			require.Equal(t, w.body, got, "the body kept in the bucket")
		} else {
			require.Equal(t, w.body, m.Body)
		}
		require.Contains(t, m.Cause, w.cause)
	}
}

func (h *hostile) seqKey(t *testing.T, seq string) string {
	t.Helper()
	k, err := quarantine.SeqKey(seq)
	require.NoError(t, err)
	return k
}

func (h *hostile) holdKey(queue, group string) string {
	return "QuarantineTable|hold=" + h.queueNames[queue] + "#" + group + ",sk=" + quarantine.SortHold
}

func (h *hostile) parkedKey(queue, group, seq string) string {
	k, err := quarantine.SeqKey(seq)
	if err != nil {
		return "invalid sequence number " + seq // matches no key: the case fails on it
	}
	return "QuarantineTable|hold=" + h.queueNames[queue] + "#" + group + ",sk=" + quarantine.MessagePrefix + k
}

// logLines returns the functions' log records that have message msg and,
// unless id is empty, message_id id, and every attribute in kv.
func (h *hostile) logLines(t *testing.T, id, msg string, kv ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(h.log.String(), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] != msg || (id != "" && rec["message_id"] != id) {
			continue
		}
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(rec[kv[i]]) != kv[i+1] {
				match = false
			}
		}
		if match {
			out = append(out, rec)
		}
	}
	return out
}

func (h *hostile) requireLogged(t *testing.T, id, msg string, kv ...string) {
	t.Helper()
	require.NotEmpty(t, h.logLines(t, id, msg, kv...), "no log record %q for message %q with %v", msg, id, kv)
}

func (h *hostile) requireNotLogged(t *testing.T, id, msg string, kv ...string) {
	t.Helper()
	require.Empty(t, h.logLines(t, id, msg, kv...), "log record %q for message %q", msg, id)
}

// forgedNonce is a well-formed nonce no parked message has.
func forgedNonce(n int) string { return fmt.Sprintf("%032x", 0xf0f0_0000+n) }

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// ---------------------------------------------------------------- snapshots

// snapshot is the deployment's state: "resource|key" → value. Tables by
// logical id and the item's key ("job_id=job-42"), the bucket's objects
// ("bucket|<key>": size and ETag), and each queue's depth
// ("queue:<logical>|depth": visible/in flight/delayed).
type snapshot map[string]string

func (h *hostile) snapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for _, logical := range hostileTables {
		pages := dynamodb.NewScanPaginator(h.ddb, &dynamodb.ScanInput{TableName: aws.String(h.deployed.Resources[logical]), ConsistentRead: aws.Bool(true)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(t.Context())
			require.NoError(t, err)
			for _, item := range page.Items {
				var key []string
				for _, k := range h.tableKeys[logical] {
					key = append(key, k+"="+keyString(item[k]))
				}
				v, err := json.Marshal(canonItem(item))
				require.NoError(t, err)
				s[logical+"|"+strings.Join(key, ",")] = string(v)
			}
		}
	}
	bucket := h.deployed.Resources["CandidatesBucket"]
	pages := s3.NewListObjectsV2Paginator(h.s3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		require.NoError(t, err)
		for _, o := range page.Contents {
			s["bucket|"+aws.ToString(o.Key)] = fmt.Sprintf("%d bytes, ETag %s", aws.ToInt64(o.Size), aws.ToString(o.ETag))
		}
	}
	for _, q := range hostileQueues {
		s["queue:"+q+"|depth"] = h.depth(t, q)
	}
	return s
}

// diff returns the keys added, removed or changed from s to after.
func (s snapshot) diff(after snapshot) []string {
	var out []string
	for k, v := range s {
		if w, ok := after[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range after {
		if _, ok := s[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// keyString is a key attribute's value (S or N).
func keyString(av ddbtypes.AttributeValue) string {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return v.Value
	case *ddbtypes.AttributeValueMemberN:
		return v.Value
	}
	return fmt.Sprintf("%T", av)
}

func canonItem(item map[string]ddbtypes.AttributeValue) map[string]any {
	out := make(map[string]any, len(item))
	for k, v := range item {
		out[k] = canon(v)
	}
	return out
}

// canon is an attribute value in DynamoDB's JSON form, with sets sorted so
// that equal values encode alike.
func canon(av ddbtypes.AttributeValue) any {
	switch v := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *ddbtypes.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *ddbtypes.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *ddbtypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *ddbtypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *ddbtypes.AttributeValueMemberSS:
		return map[string]any{"SS": slices.Sorted(slices.Values(v.Value))}
	case *ddbtypes.AttributeValueMemberNS:
		return map[string]any{"NS": slices.Sorted(slices.Values(v.Value))}
	case *ddbtypes.AttributeValueMemberBS:
		bs := make([]string, len(v.Value))
		for i, b := range v.Value {
			bs[i] = base64.StdEncoding.EncodeToString(b)
		}
		slices.Sort(bs)
		return map[string]any{"BS": bs}
	case *ddbtypes.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = canon(e)
		}
		return map[string]any{"L": l}
	case *ddbtypes.AttributeValueMemberM:
		return map[string]any{"M": canonItem(v.Value)}
	case nil:
		return nil
	}
	panic(fmt.Sprintf("attribute value %T", av))
}
