package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
	"github.com/fifoworker/fifoworker/pkg/quarantine/quarantinetest"
)

// fakeOpener gives the commands memory stores and records what they asked
// to open.
type fakeOpener struct {
	mu sync.Mutex

	jobs         *jobs.MemoryStore
	jobsOverride jobsStore // when set, the store the commands get instead of jobs
	jobsErr      error
	jobsAsked    []string // table, hint

	quarantine *quarantine.MemoryStore
	sender     *fakeSender
	records    *quarantinetest.Records // a Kafka redrive's copies
	bodies     *fakeBodies
	qErr       error
	qAsked     *quarantineTarget

	sweep      sweepFunc
	sweepErr   error
	sweepAsked *sweepTarget

	console      consoleParts // the console's other sources (console_test.go)
	consoleAsked *consoleTarget
}

func (f *fakeOpener) jobsStore(_ context.Context, table, hint string) (jobsStore, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobsAsked = []string{table, hint}
	if f.jobsErr != nil {
		return nil, f.jobsErr
	}
	if f.jobsOverride != nil {
		return f.jobsOverride, nil
	}
	return f.jobs, nil
}

func (f *fakeOpener) quarantineOperator(_ context.Context, t quarantineTarget) (*quarantine.Operator, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.qAsked = &t
	if f.qErr != nil {
		return nil, f.qErr
	}
	op := quarantine.OperatorConfig{Store: f.quarantine, Queue: t.Queue, QueueURL: t.QueueURL, Sender: f.sender, Poll: time.Millisecond, Progress: t.Progress}
	if t.Kafka { // the copies to f.records, as a topic's (quarantine_kafka_test.go)
		op.Sender, op.Records = nil, f.records
	}
	if t.Bucket != "" {
		op.Bodies = f.bodies
	}
	return quarantine.NewOperator(op)
}

func (f *fakeOpener) sweeper(_ context.Context, t sweepTarget, _ *slog.Logger) (sweepFunc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweepAsked = &t
	if f.sweepErr != nil {
		return nil, f.sweepErr
	}
	return f.sweep, nil
}

// fakeSender records the copies a redrive sends; onSend, if set, is called
// with each (a worker that processes it).
type fakeSender struct {
	mu     sync.Mutex
	sent   []*sqs.SendMessageInput
	onSend func(*sqs.SendMessageInput)
}

func (s *fakeSender) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	s.sent = append(s.sent, in)
	s.mu.Unlock()
	if s.onSend != nil {
		s.onSend(in)
	}
	return &sqs.SendMessageOutput{}, nil
}

type fakeBodies struct {
	mu sync.Mutex
	m  map[string]string
}

func (b *fakeBodies) PutBody(_ context.Context, key, body string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[key] = body
	return nil
}

func (b *fakeBodies) GetBody(_ context.Context, key string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	if !ok {
		return "", quarantine.ErrNoBody
	}
	return v, nil
}

func (b *fakeBodies) keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.m {
		out = append(out, k)
	}
	return out
}

// t0 is the tests' clock: env.now and the memory stores' clocks start here.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

const (
	commandsURL = "http://127.0.0.1:4566/000000000000/fw-commands.fifo"
	commandsARN = "arn:aws:sqs:eu-west-1:000000000000:fw-commands.fifo"
)

// outputs are the variables `local deploy` would print for a stack.
var outputs = map[string]string{
	"FIFOWORKER_JOBS_TABLE_NAME":        "fw-jobs",
	"FIFOWORKER_VIEWS_TABLE_NAME":       "fw-views",
	"FIFOWORKER_TOTALS_TABLE_NAME":      "fw-totals",
	"FIFOWORKER_QUARANTINE_TABLE_NAME":  "fw-quarantine",
	"FIFOWORKER_COMMANDS_QUEUE_URL":     commandsURL,
	"FIFOWORKER_EVENTS_QUEUE_URL":       "http://127.0.0.1:4566/000000000000/fw-events.fifo",
	"FIFOWORKER_CANDIDATES_BUCKET_NAME": "fw-candidates",
}

type testOps struct {
	env   opsEnv
	open  *fakeOpener
	clock *clock
	vars  map[string]string
}

func newTestOps(t *testing.T) *testOps {
	t.Helper()
	c := &clock{now: t0}
	js, err := jobs.NewMemoryStore(jobs.Config{Now: c.Now})
	require.NoError(t, err)
	f := &fakeOpener{
		jobs:       js,
		quarantine: quarantine.NewMemoryStore(),
		sender:     &fakeSender{},
		records:    &quarantinetest.Records{},
		bodies:     &fakeBodies{m: map[string]string{}},
	}
	o := &testOps{open: f, clock: c, vars: map[string]string{}}
	for k, v := range outputs {
		o.vars[k] = v
	}
	o.env = opsEnv{getenv: func(k string) string { return o.vars[k] }, stdin: strings.NewReader(""), now: c.Now, open: f}
	return o
}

// run runs the CLI with the test's environment.
func (o *testOps) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runWith(args, o.env, &out, &errOut)
	return code, out.String(), errOut.String()
}

func (o *testOps) create(t *testing.T, id, tenant string) jobs.Job {
	t.Helper()
	res, err := o.open.jobs.Create(context.Background(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: tenant, Spec: map[string]string{"format": "ndjson"}})
	require.NoError(t, err)
	return res.Job
}

func (o *testOps) job(t *testing.T, id string) jobs.Job {
	t.Helper()
	j, err := o.open.jobs.Get(context.Background(), id)
	require.NoError(t, err)
	return j
}

func line(key, value string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s+` + regexp.QuoteMeta(value) + `$`)
}

func TestUsageListsTheOperatorsCommands(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	code, out, _ := o.run("help")
	require.Equal(t, 0, code)
	for _, c := range []string{"jobs", "quarantine", "sweep"} {
		require.Regexp(t, `(?m)^  `+c+` `, out)
	}
	for _, c := range []string{"jobs", "quarantine", "sweep"} {
		code, out, _ := o.run(c, "help")
		require.Equal(t, 0, code, c)
		require.Contains(t, out, "Usage:\n  fifoworker "+c)
	}
}

func TestOutputWords(t *testing.T) {
	t.Parallel()
	require.Equal(t, "commands queue URL", outputWords("CommandsQueueUrl"))
	require.Equal(t, "jobs table name", outputWords("JobsTableName"))
}

// --- jobs ---

func TestJobsGetShowsTheJob(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.create(t, "job-1", "t-1")
	o.clock.Set(t0.Add(time.Second))
	claimed, err := o.open.jobs.Claim(context.Background(), jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-1", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	code, out, errOut := o.run("jobs", "get", "job-1")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, line("job", "job-1"), out)
	require.Regexp(t, line("tenant", "t-1"), out)
	require.Regexp(t, line("status", "running"), out)
	require.Regexp(t, line("generation", "1"), out)
	require.Regexp(t, line("version", "1"), out)
	require.Regexp(t, line("lease", "att-1 until 2026-12-01T10:01:00.000Z (held)"), out)
	require.Regexp(t, line("result", "-"), out)
	require.Regexp(t, line("last message", "job.started job-1/v1"), out)
	require.Regexp(t, line("spec", "format=ndjson"), out)
	require.Regexp(t, line("created", "2026-12-01T10:00:00.000Z"), out)
	require.Regexp(t, line("updated", "2026-12-01T10:00:01.000Z"), out)

	o.clock.Set(t0.Add(2 * time.Minute))
	_, out, _ = o.run("jobs", "get", "job-1")
	require.Regexp(t, line("lease", "att-1 until 2026-12-01T10:01:00.000Z (ended)"), out)

	code, out, _ = o.run("jobs", "get", "--json", "job-1")
	require.Equal(t, 0, code)
	var got jobJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, "job-1", got.ID)
	require.Equal(t, "running", got.Status)
	require.Equal(t, claimed.Generation, got.Generation)
	require.Equal(t, claimed.Version, got.Version)
	require.Equal(t, "att-1", got.LeaseOwner)
	require.Equal(t, t0.Add(time.Minute), *got.LeaseExpiresAt)
	require.Nil(t, got.Result)
	require.Equal(t, &messageJSON{ID: "job-1/v1", Type: jobs.EventStarted, Version: 1}, got.LastMessage)
	require.Equal(t, []string{"fw-jobs", "FIFOWORKER_JOBS_TABLE_NAME"}, o.open.jobsAsked)
}

func TestJobsGetShowsResultAndFailure(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.create(t, "job-1", "t-1")
	_, err := o.open.jobs.Claim(context.Background(), jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-1", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	_, err = o.open.jobs.Fail(context.Background(), jobs.FailRequest{JobID: "job-1", AttemptID: "att-1", Generation: 1, Version: 1,
		Failure: jobs.Failure{Code: "task_error", Message: "the export\nbroke"}})
	require.NoError(t, err)
	code, out, _ := o.run("jobs", "get", "job-1")
	require.Equal(t, 0, code)
	require.Regexp(t, line("status", "failed"), out)
	require.Regexp(t, line("failure", "task_error: the export broke"), out)
	require.Regexp(t, line("lease", "att-1 until 2026-12-01T10:01:00.000Z (the job has ended)"), out)
	require.Regexp(t, `(?m)^expires\s+\S+ \(the table's TTL`, out)
}

func TestJobsGetOfAMissingJobSaysWhereItLooked(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	code, out, errOut := o.run("jobs", "get", "job-nope", "--table", "other-jobs")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "fifoworker jobs get: job job-nope not found in table other-jobs\n", errOut)
	require.Equal(t, []string{"other-jobs", "--table"}, o.open.jobsAsked, "the flag wins over the variable")
}

func TestJobsNeedATable(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	delete(o.vars, "FIFOWORKER_JOBS_TABLE_NAME")
	code, _, errOut := o.run("jobs", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no jobs table name: pass --table or set FIFOWORKER_JOBS_TABLE_NAME")
	require.Nil(t, o.open.jobsAsked, "nothing was opened")
}

func TestJobsReportATableThatCannotBeOpened(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.open.jobsErr = fmt.Errorf("table fw-jobs: %w (check FIFOWORKER_JOBS_TABLE_NAME)", errMissing)
	code, out, errOut := o.run("jobs", "get", "job-1")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "fifoworker jobs get: table fw-jobs: it does not exist (check FIFOWORKER_JOBS_TABLE_NAME)\n", errOut)
}

func TestJobsUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs"}, "Usage:\n  fifoworker jobs"},
		{[]string{"jobs", "frob"}, `unknown command "frob"`},
		{[]string{"jobs", "get"}, "name exactly one job id"},
		{[]string{"jobs", "get", "a", "b"}, "name exactly one job id"},
		{[]string{"jobs", "get", "job/1"}, `job id "job/1"`},
		{[]string{"jobs", "get", "job-1", "--live"}, "unknown flag: --live (a flag of fifoworker jobs list)"},
		{[]string{"jobs", "get", "job-1", "--tenant", "t"}, "unknown flag: --tenant (a flag of fifoworker jobs list, fifoworker jobs cancel)"},
		{[]string{"jobs", "cancel", "job-1"}, "--tenant is required"},
		{[]string{"jobs", "list", "job-1"}, "list takes no job id"},
		{[]string{"jobs", "list", "--limit", "0"}, "--limit 0: 1 to 1000"},
		{[]string{"jobs", "list", "--limit", "1001"}, "--limit 1001: 1 to 1000"},
		{[]string{"jobs", "list", "--since", "-1h"}, "--since -1h0m0s is negative"},
		{[]string{"jobs", "list", "--live", "--since", "1h"}, "--since is about final jobs"},
		{[]string{"jobs", "list", "--reason", "x"}, "unknown flag: --reason (a flag of fifoworker jobs cancel)"},
		{[]string{"jobs", "list", "--frob"}, "fifoworker jobs list: unknown flag: --frob\n"},
	} {
		o := newTestOps(t)
		code, _, errOut := o.run(tc.args...)
		require.Equal(t, 2, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		require.Nil(t, o.open.jobsAsked, "%q: nothing was opened", tc.args)
	}
}

// listFixture: t-1's job-a (pending, oldest), job-b (running) and job-c
// (cancelled at t0+3s); t-2's job-d (pending). env.now is t0+1h.
func listFixture(t *testing.T) *testOps {
	t.Helper()
	o := newTestOps(t)
	ctx := context.Background()
	o.create(t, "job-a", "t-1")
	o.clock.Set(t0.Add(time.Second))
	o.create(t, "job-b", "t-1")
	o.clock.Set(t0.Add(2 * time.Second))
	o.create(t, "job-c", "t-1")
	o.create(t, "job-d", "t-2")
	o.clock.Set(t0.Add(3 * time.Second))
	_, err := o.open.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-b", AttemptID: "att-b", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	_, err = o.open.jobs.Cancel(ctx, jobs.CancelRequest{JobID: "job-c"})
	require.NoError(t, err)
	o.clock.Set(t0.Add(time.Hour))
	return o
}

func listed(t *testing.T, out string) []string {
	t.Helper()
	var got struct {
		Table string    `json:"table"`
		Jobs  []jobJSON `json:"jobs"`
		More  bool      `json:"more"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	ids := []string{}
	for _, j := range got.Jobs {
		ids = append(ids, j.ID+":"+j.Status)
	}
	return append(ids, fmt.Sprintf("more=%v", got.More))
}

func TestJobsListShowsLiveThenFinalJobs(t *testing.T) {
	t.Parallel()
	o := listFixture(t)
	code, out, errOut := o.run("jobs", "list")
	require.Equal(t, 0, code, errOut)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, rows, 5, out)
	require.Regexp(t, `^JOB\s+TENANT\s+STATUS\s+GEN\s+VER\s+PROGRESS\s+UPDATED\s+RESULT OR FAILURE$`, rows[0])
	require.Regexp(t, `^job-b\s+t-1\s+running\s+1\s+1\s+0\s+2026-12-01T10:00:03.000Z\s+-$`, rows[3], "live jobs, least recently changed first")
	require.Regexp(t, `^job-a\s+t-1\s+pending\s+0\s+0\s+0\s+2026-12-01T10:00:00.000Z\s+-$`, rows[1])
	require.Regexp(t, `^job-d\s+t-2\s+pending\s+0\s+0\s+0\s+2026-12-01T10:00:02.000Z\s+-$`, rows[2])
	require.Regexp(t, `^job-c\s+t-1\s+cancelled\s+1\s+1\s+0\s+2026-12-01T10:00:03.000Z\s+cancelled$`, rows[4], "then the final ones")

	_, out, _ = o.run("jobs", "list", "--json")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "job-c:cancelled", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--tenant", "t-1")
	require.Equal(t, []string{"job-a:pending", "job-b:running", "job-c:cancelled", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--tenant", "t-2")
	require.Equal(t, []string{"job-d:pending", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--live", "--tenant", "t-1")
	require.Equal(t, []string{"job-a:pending", "job-b:running", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--limit", "2")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "more=true"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--limit", "4")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "job-c:cancelled", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--tenant", "t-1", "--limit", "1")
	require.Equal(t, []string{"job-a:pending", "more=true"}, listed(t, out))

	// job-c ended at t0+3s, 59m57s before env.now.
	_, out, _ = o.run("jobs", "list", "--json", "--since", "59m58s")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "job-c:cancelled", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--since", "59m56s")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "more=false"}, listed(t, out))
	_, out, _ = o.run("jobs", "list", "--json", "--since", "0")
	require.Equal(t, []string{"job-a:pending", "job-d:pending", "job-b:running", "job-c:cancelled", "more=false"}, listed(t, out))

	code, out, _ = o.run("jobs", "list", "--limit", "2")
	require.Equal(t, 0, code)
	require.Contains(t, out, "(there may be more: raise --limit (now 2)")
	code, out, _ = o.run("jobs", "list", "--tenant", "t-3")
	require.Equal(t, 0, code)
	require.Equal(t, "no job of tenant t-3 in table fw-jobs (final ones: those that ended within 24h0m0s)\n", out)
}

// A listing filtered by tenant reads on past the jobs of other tenants.
func TestJobsListByTenantReadsPastOtherTenants(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	for i := range 30 {
		o.clock.Set(t0.Add(time.Duration(i) * time.Second))
		o.create(t, fmt.Sprintf("job-%02d", i), "t-busy")
	}
	o.clock.Set(t0.Add(time.Minute))
	o.create(t, "job-mine", "t-1")
	o.clock.Set(t0.Add(time.Hour))
	_, out, _ := o.run("jobs", "list", "--json", "--live", "--tenant", "t-1", "--limit", "1")
	require.Equal(t, []string{"job-mine:pending", "more=false"}, listed(t, out))
}

func TestJobsCancel(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	ctx := context.Background()
	o.create(t, "job-1", "t-1")
	running, err := o.open.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-1", AttemptID: "att-1", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	code, out, errOut := o.run("jobs", "cancel", "job-1", "--tenant", "t-2")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "fifoworker jobs cancel: job job-1 belongs to tenant \"t-1\", not \"t-2\": nothing cancelled\n", errOut)
	require.Equal(t, running, o.job(t, "job-1"), "nothing changed")

	code, out, errOut = o.run("jobs", "cancel", "job-1", "--tenant", "t-1", "--reason", "customer asked")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "job job-1 cancelled: version 1 → 2, generation 1 → 2 (the worker of generation 1 can write nothing more)\n", out)
	after := o.job(t, "job-1")
	require.Equal(t, jobs.StatusCancelled, after.Status)
	require.Equal(t, "customer asked", after.Error.Message)
	_, err = o.open.jobs.Renew(ctx, jobs.RenewRequest{JobID: "job-1", AttemptID: "att-1", Generation: 1, Version: 1, LeaseUntil: t0.Add(time.Minute)})
	require.ErrorIs(t, err, jobs.ErrStaleGeneration, "the cancel fenced the worker")

	code, out, errOut = o.run("jobs", "cancel", "job-1", "--tenant", "t-1")
	require.Equal(t, 1, code, "an ended job, cancelled included (TestJobsCancelOfAnEndedJobFails)")
	require.Empty(t, out)
	require.Equal(t, "fifoworker jobs cancel: job job-1 already ended cancelled: nothing cancelled\n", errOut)

	code, _, errOut = o.run("jobs", "cancel", "job-nope", "--tenant", "t-1")
	require.Equal(t, 1, code)
	require.Equal(t, "fifoworker jobs cancel: job job-nope not found in table fw-jobs\n", errOut)
}

func TestJobsCancelJSONAndAFinalJob(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	ctx := context.Background()
	o.create(t, "job-1", "t-1")
	code, out, _ := o.run("jobs", "cancel", "--json", "job-1", "--tenant", "t-1")
	require.Equal(t, 0, code)
	var got struct {
		Job      jobJSON `json:"job"`
		Previous int64   `json:"previous_version"`
		Changed  bool    `json:"changed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, "cancelled", got.Job.Status)
	require.Equal(t, int64(1), got.Job.Version)
	require.Equal(t, int64(0), got.Previous)
	require.True(t, got.Changed)
	require.Equal(t, &failureJSON{Code: jobs.CodeCancelled, Message: "cancelled by an operator (fifoworker jobs cancel)"}, got.Job.Error)

	o.create(t, "job-2", "t-1")
	_, err := o.open.jobs.Claim(ctx, jobs.ClaimRequest{JobID: "job-2", AttemptID: "att-1", LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	failed, err := o.open.jobs.Fail(ctx, jobs.FailRequest{JobID: "job-2", AttemptID: "att-1", Generation: 1, Version: 1, Failure: jobs.Failure{Code: "boom"}})
	require.NoError(t, err)
	code, _, errOut := o.run("jobs", "cancel", "job-2", "--tenant", "t-1")
	require.Equal(t, 1, code)
	require.Equal(t, "fifoworker jobs cancel: job job-2 already ended failed: nothing cancelled\n", errOut)
	require.Equal(t, failed, o.job(t, "job-2"))
}

// --- quarantine ---

// park parks messages seqs of group on the commands queue's quarantine,
// with bodies "body-<seq>", holding the group.
func park(t *testing.T, store quarantine.Store, group string, seqs ...string) {
	t.Helper()
	q, err := quarantine.New(quarantine.Config{Store: store, QueueARN: commandsARN, Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	var msgs []*events.SQSMessage
	for _, s := range seqs {
		msgs = append(msgs, &events.SQSMessage{
			MessageId: "m-" + s, Body: "body-" + s,
			Attributes: map[string]string{"SequenceNumber": s, "MessageGroupId": group, "MessageDeduplicationId": "d-" + s, "ApproximateReceiveCount": "3"},
		})
	}
	_, err = q.Park(context.Background(), group, msgs, errors.New("handler: permanent: bad spec"), true)
	require.NoError(t, err)
}

// parkedNonce is the secret nonce the quarantine gave a parked message,
// which its redriven copies carry.
func parkedNonce(t *testing.T, store quarantine.Store, queue, group, key string) string {
	t.Helper()
	_, items, err := store.Read(context.Background(), queue, nil, []quarantine.ItemKey{{Group: group, Sequence: key}})
	require.NoError(t, err)
	p, ok := items[quarantine.ItemKey{Group: group, Sequence: key}]
	require.True(t, ok, "no message %s parked in %s", key, group)
	require.Len(t, p.Nonce, 32)
	return p.Nonce
}

func parkedSeqs(t *testing.T, store quarantine.Store, group string) []string {
	t.Helper()
	items, err := store.Messages(context.Background(), "fw-commands.fifo", group, quarantine.StatusParked, "", 0)
	require.NoError(t, err)
	seqs := []string{}
	for _, p := range items {
		seqs = append(seqs, quarantine.SeqNumber(p.Sequence))
	}
	return seqs
}

func TestQuarantineListAndShow(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")

	code, out, errOut := o.run("quarantine", "list")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^GROUP\s+STATE\s+EPOCH\s+PARKED\s+HELD SINCE\s+CAUSE$`, out)
	require.Regexp(t, `(?m)^g1\s+held\s+0\s+2\s+2026-12-01T10:00:00Z\s+handler: permanent: bad spec$`, out)
	require.Equal(t, &quarantineTarget{
		QueueURL: commandsURL, Queue: "fw-commands.fifo", QueueHint: "FIFOWORKER_COMMANDS_QUEUE_URL",
		Table: "fw-quarantine", TableHint: "FIFOWORKER_QUARANTINE_TABLE_NAME",
		Bucket: "fw-candidates", BucketHint: "FIFOWORKER_CANDIDATES_BUCKET_NAME",
	}, o.open.qAsked)

	code, out, _ = o.run("quarantine", "list", "--json")
	require.Equal(t, 0, code)
	var holds struct {
		Queue string     `json:"queue"`
		Holds []holdJSON `json:"holds"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &holds), out)
	require.Equal(t, "fw-commands.fifo", holds.Queue)
	require.Len(t, holds.Holds, 1)
	require.Equal(t, holdJSON{Queue: "fw-commands.fifo", Group: "g1", State: "held", Parked: 2, Cause: "handler: permanent: bad spec",
		From: "1001", Through: "1002", Next: "1001", HeldAt: t0, UpdatedAt: t0}, holds.Holds[0])

	code, out, _ = o.run("quarantine", "show", "g1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "group g1 on fw-commands.fifo: held, epoch 0, 2 parked\ncause: handler: permanent: bad spec\n")
	require.Regexp(t, `(?m)^1001\s+parked\s+3\s+9\s+body-1001$`, out)
	require.Regexp(t, `(?m)^1002\s+parked\s+3\s+9\s+body-1002$`, out)

	code, out, _ = o.run("quarantine", "show", "g1", "--json")
	require.Equal(t, 0, code)
	var shown struct {
		Hold     holdJSON     `json:"hold"`
		Messages []parkedJSON `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown), out)
	require.Equal(t, "g1", shown.Hold.Group)
	require.Len(t, shown.Messages, 2)
	require.Equal(t, parkedJSON{Sequence: "1001", MessageID: "m-1001", DeduplicationID: "d-1001", Status: "parked", BodySize: 9, Body: "body-1001",
		Receives: 3, Cause: "handler: permanent: bad spec", ParkedAt: t0}, shown.Messages[0])
	require.Equal(t, "1002", shown.Messages[1].Sequence)
	require.Equal(t, "an earlier message of its group was parked", shown.Messages[1].Cause)

	delete(o.vars, "FIFOWORKER_COMMANDS_QUEUE_URL")
	delete(o.vars, "FIFOWORKER_EVENTS_QUEUE_URL")
	code, out, _ = o.run("quarantine", "list", "--queue-url", commandsURL)
	require.Equal(t, 0, code)
	require.Contains(t, out, "g1")
	require.Equal(t, "--queue-url", o.open.qAsked.QueueHint)
}

func TestQuarantineListOfTheEventsQueue(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001")
	code, out, _ := o.run("quarantine", "list", "--queue", "events")
	require.Equal(t, 0, code)
	require.Equal(t, "no group of fw-events.fifo is held\n", out)
	require.Equal(t, "fw-events.fifo", o.open.qAsked.Queue)
	require.Equal(t, "FIFOWORKER_EVENTS_QUEUE_URL", o.open.qAsked.QueueHint)

	delete(o.vars, "FIFOWORKER_EVENTS_QUEUE_URL")
	code, _, errOut := o.run("quarantine", "list", "--queue", "events")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no events queue URL: pass --queue-url or set FIFOWORKER_EVENTS_QUEUE_URL")
}

func TestQuarantineUnknownGroupAndMissingResources(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001")
	for _, args := range [][]string{{"show"}, {"redrive"}, {"discard", "--yes"}} {
		verb := args[0]
		code, out, errOut := o.run(append([]string{"quarantine", verb, "g-nope"}, args[1:]...)...)
		require.Equal(t, 1, code, verb)
		require.Empty(t, out)
		require.Equal(t, "fifoworker quarantine "+verb+`: group "g-nope" is not held on fw-commands.fifo (quarantine list shows the groups that are)`+"\n", errOut, verb)
	}
	require.Empty(t, o.open.sender.sent)
	require.Empty(t, o.open.bodies.keys())

	o.open.qErr = fmt.Errorf("queue %s: %w (check --queue-url)", commandsURL, errMissing)
	code, _, errOut := o.run("quarantine", "list")
	require.Equal(t, 1, code)
	require.Equal(t, "fifoworker quarantine list: queue "+commandsURL+": it does not exist (check --queue-url)\n", errOut)

	o.open.qErr = nil
	delete(o.vars, "FIFOWORKER_QUARANTINE_TABLE_NAME")
	code, _, errOut = o.run("quarantine", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no quarantine table name: pass --table or set FIFOWORKER_QUARANTINE_TABLE_NAME")
}

func TestQuarantineUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"quarantine"}, "Usage:\n  fifoworker quarantine"},
		{[]string{"quarantine", "frob"}, `unknown command "frob"`},
		{[]string{"quarantine", "show"}, "name exactly one group"},
		{[]string{"quarantine", "redrive", "a", "b"}, "name exactly one group"},
		{[]string{"quarantine", "list", "g1"}, "list takes no group"},
		{[]string{"quarantine", "list", "--queue", "dlq"}, `--queue "dlq": commands or events`},
		{[]string{"quarantine", "show", "g1", "--seq", "1"}, "unknown flag: --seq (a flag of fifoworker quarantine discard)"},
		{[]string{"quarantine", "show", "g1", "--frob"}, "fifoworker quarantine show: unknown flag: --frob\n"},
	} {
		o := newTestOps(t)
		code, _, errOut := o.run(tc.args...)
		require.Equal(t, 2, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		require.Nil(t, o.open.qAsked, "%q: nothing was opened", tc.args)
	}
}

func TestQuarantineRedriveSendsInOrderWithTheRedriveIDs(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")
	code, out, errOut := o.run("quarantine", "redrive", "g1", "--no-wait")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "group g1: 2 sent under epoch 1; now draining, 2 parked\n", out)
	require.Equal(t, "sent 1001 (epoch 1, 1 sent)\nsent 1002 (epoch 1, 2 sent)\n", errOut)
	require.Len(t, o.open.sender.sent, 2)
	for i, seq := range []string{"1001", "1002"} {
		in := o.open.sender.sent[i]
		key, err := quarantine.SeqKey(seq)
		require.NoError(t, err)
		require.Equal(t, commandsURL, aws.ToString(in.QueueUrl))
		require.Equal(t, "g1", aws.ToString(in.MessageGroupId))
		require.Equal(t, "body-"+seq, aws.ToString(in.MessageBody))
		require.Equal(t, quarantine.Copy{Epoch: 1, Nonce: parkedNonce(t, o.open.quarantine, "fw-commands.fifo", "g1", key), Sequence: key}.DeduplicationID(),
			aws.ToString(in.MessageDeduplicationId))
	}
}

// A redrive that waits returns once the copies were processed (the fake
// worker marks each done as it is sent) and the group released.
func TestQuarantineRedriveWaitsForTheRelease(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")
	q, err := quarantine.New(quarantine.Config{Store: o.open.quarantine, QueueARN: commandsARN})
	require.NoError(t, err)
	o.open.sender.onSend = func(in *sqs.SendMessageInput) {
		_, err := q.Done(context.Background(), "g1", &events.SQSMessage{Attributes: map[string]string{"MessageDeduplicationId": aws.ToString(in.MessageDeduplicationId)}})
		if err != nil {
			panic(err)
		}
	}
	code, out, errOut := o.run("quarantine", "redrive", "g1", "--json")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut, "no progress lines with --json")
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, map[string]any{"group": "g1", "epoch": 1.0, "sent": 2.0, "state": "released", "parked": 0.0, "cause": ""}, rep)
}

// A redrive that another one overtakes (an operator ran two) says so and
// fails, even with --no-wait.
func TestQuarantineRedriveOvertakenFails(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")
	var once sync.Once
	o.open.sender.onSend = func(*sqs.SendMessageInput) {
		once.Do(func() {
			if _, err := o.open.quarantine.BeginRedrive(context.Background(), "fw-commands.fifo", "g1", t0); err != nil {
				panic(err)
			}
		})
	}
	code, out, _ := o.run("quarantine", "redrive", "g1", "--no-wait")
	require.Equal(t, 1, code)
	require.Regexp(t, `^group g1: \d sent under epoch 1; now draining, 2 parked \(another redrive \(epoch 2\) took over\)\n$`, out)
}

// Without a worker, a waiting redrive ends at its timeout, says so and
// fails.
func TestQuarantineRedriveThatIsNotReleasedFails(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001")
	code, out, _ := o.run("quarantine", "redrive", "g1", "--timeout", "20ms")
	require.Equal(t, 1, code)
	require.Equal(t, "group g1: 1 sent under epoch 1; now draining, 1 parked (still draining after 20ms: run redrive again to resume)\n", out)
}

func TestQuarantineDiscardAsksFirst(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")

	for _, answer := range []string{"", "no\n", "g2\n", "yes\n"} {
		o.env.stdin = strings.NewReader(answer)
		code, out, errOut := o.run("quarantine", "discard", "g1")
		require.Equal(t, 1, code, "%q", answer)
		require.Empty(t, out)
		require.Contains(t, errOut, "discard every parked message of group g1 on fw-commands.fifo? They are archived first. Type the group id to confirm: ")
		require.Contains(t, errOut, "not confirmed: nothing discarded (--yes skips the question)")
		require.Equal(t, []string{"1001", "1002"}, parkedSeqs(t, o.open.quarantine, "g1"), "%q: nothing discarded", answer)
		require.Empty(t, o.open.bodies.keys(), "%q: nothing archived", answer)
	}

	o.env.stdin = strings.NewReader("g1\n")
	code, out, errOut := o.run("quarantine", "discard", "g1", "--seq", "1001")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "discard parked message 1001 of group g1")
	require.Equal(t, "group g1: 1 discarded, archived under s3://fw-candidates/quarantine-archive/fw-commands.fifo/g1/; now held, 1 parked\n", out)
	require.Equal(t, []string{"1002"}, parkedSeqs(t, o.open.quarantine, "g1"))
	key1001, err := quarantine.SeqKey("1001")
	require.NoError(t, err)
	require.Equal(t, []string{quarantine.ArchiveKey("fw-commands.fifo", "g1", key1001)}, o.open.bodies.keys())
}

func TestQuarantineDiscardArchivesEachMessage(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	park(t, o.open.quarantine, "g1", "1001", "1002")
	code, out, errOut := o.run("quarantine", "discard", "--yes", "--json", "g1")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut, "no question with --yes")
	var got struct {
		Discarded int      `json:"discarded"`
		Archives  []string `json:"archives"`
		State     string   `json:"state"`
		Parked    int64    `json:"parked"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, 2, got.Discarded)
	require.Equal(t, "released", got.State)
	require.Equal(t, int64(0), got.Parked)
	require.Len(t, got.Archives, 2)
	for i, seq := range []string{"1001", "1002"} {
		key, err := quarantine.SeqKey(seq)
		require.NoError(t, err)
		require.Equal(t, quarantine.ArchiveKey("fw-commands.fifo", "g1", key), got.Archives[i])
		doc, err := o.open.bodies.GetBody(context.Background(), got.Archives[i])
		require.NoError(t, err)
		require.Contains(t, doc, `"body-`+seq+`"`)
	}
	require.Empty(t, parkedSeqs(t, o.open.quarantine, "g1"))
	require.True(t, o.open.qAsked.NeedBucket, "discard has its bucket checked")

	delete(o.vars, "FIFOWORKER_CANDIDATES_BUCKET_NAME")
	park(t, o.open.quarantine, "g2", "2001")
	code, _, errOut = o.run("quarantine", "discard", "--yes", "g2")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "discard archives what it drops: pass --bucket or set FIFOWORKER_CANDIDATES_BUCKET_NAME")
	require.Equal(t, []string{"2001"}, parkedSeqs(t, o.open.quarantine, "g2"))
}

// --- the checks of the real resources ---

type fakeAWS struct{ err error }

func (f fakeAWS) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{}, f.err
}

func (f fakeAWS) GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return &sqs.GetQueueAttributesOutput{}, f.err
}

func (f fakeAWS) HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return &s3.HeadBucketOutput{}, f.err
}

func TestChecksSayWhatDoesNotExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.NoError(t, checkTable(ctx, fakeAWS{}, "t", "--table"))
	err := checkTable(ctx, fakeAWS{&dbtypes.ResourceNotFoundException{Message: aws.String("Cannot do operations on a non-existent table")}}, "t", "--table")
	require.ErrorIs(t, err, errMissing)
	require.EqualError(t, err, "table t: it does not exist (check --table, and the region and endpoint the AWS configuration gives)")
	other := errors.New("access denied")
	err = checkTable(ctx, fakeAWS{other}, "t", "--table")
	require.ErrorIs(t, err, other)
	require.NotErrorIs(t, err, errMissing)

	require.NoError(t, checkQueue(ctx, fakeAWS{}, "u", "--queue-url"))
	for _, e := range []error{
		&sqstypes.QueueDoesNotExist{},
		&smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"},
		&smithy.GenericAPIError{Code: "QueueDoesNotExist"},
	} {
		err := checkQueue(ctx, fakeAWS{e}, "u", "FIFOWORKER_COMMANDS_QUEUE_URL")
		require.EqualError(t, err, "queue u: it does not exist (check FIFOWORKER_COMMANDS_QUEUE_URL)", "%T", e)
	}
	require.NotErrorIs(t, checkQueue(ctx, fakeAWS{other}, "u", "x"), errMissing)

	require.NoError(t, checkBucket(ctx, fakeAWS{}, "b", "--bucket"))
	require.EqualError(t, checkBucket(ctx, fakeAWS{&s3types.NotFound{}}, "b", "--bucket"), "bucket b: it does not exist (check --bucket)")
	require.NotErrorIs(t, checkBucket(ctx, fakeAWS{other}, "b", "x"), errMissing)
}

// --- sweep ---

var sampleReport = sweeper.Report{
	Examined: 7, WouldDelete: 2, KeptCurrent: 3, KeptResult: 1, KeptGrace: 1, Stuck: 2, WouldNudge: 1, NudgeRefused: 1,
	Finished: 4, WouldRepair: 1, RepairCursor: jobs.FinishedKey("job-9", t0), Cursor: "candidates/job-7/", DryRun: true, ElapsedMS: 12,
}

func TestSweepRunsTheFunctionsSweeperOnTheOutputs(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	var got []sweeper.Options
	o.open.sweep = func(_ context.Context, opts sweeper.Options) (sweeper.Report, error) {
		got = append(got, opts)
		return sampleReport, nil
	}
	code, out, errOut := o.run("sweep", "--dry-run")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, []sweeper.Options{{DryRun: true}}, got)
	require.Equal(t, map[string]string{
		"JOBS_TABLE": "fw-jobs", "VIEWS_TABLE": "fw-views", "TOTALS_TABLE": "fw-totals", "CANDIDATES_BUCKET": "fw-candidates",
	}, o.open.sweepAsked.Settings, "the function's defaults for the rest")
	require.Equal(t, "FIFOWORKER_VIEWS_TABLE_NAME", o.open.sweepAsked.Hints["VIEWS_TABLE"])
	require.Equal(t, "dry run on table fw-jobs and bucket fw-candidates: nothing was changed\n\n"+
		"stuck jobs  2 listed: 1 would be nudged, 1 refused (the job moved on)\n"+
		"final jobs  4 checked: 1 would be repaired; checked through job-9, which ended 2026-12-01T10:00:00.000Z\n"+
		"candidates  7 examined: 2 would be deleted; kept 3 of live generations, 1 results, 1 within the grace; 0 not candidates\n"+
		"stopped at  candidates/job-7/\n"+
		"            (a dry run saves neither position: the next run starts where the last real one stopped)\n"+
		"errors      0\n"+
		"took        12ms\n", out)

	code, out, _ = o.run("sweep", "--json", "--grace", "90s", "--stuck-after", "2m", "--repair-after", "1h", "--max-items", "10", "--max-generations", "2",
		"--jobs-table", "other-jobs", "--bucket", "other-bucket")
	require.Equal(t, 0, code)
	require.Equal(t, sweeper.Options{}, got[1], "no --dry-run: a real run")
	var rep sweeper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, sampleReport, rep)
	require.Equal(t, map[string]string{
		"JOBS_TABLE": "other-jobs", "VIEWS_TABLE": "fw-views", "TOTALS_TABLE": "fw-totals", "CANDIDATES_BUCKET": "other-bucket",
		"SWEEP_GRACE": "1m30s", "SWEEP_STUCK_AFTER": "2m0s", "SWEEP_REPAIR_AFTER": "1h0m0s", "SWEEP_MAX_ITEMS": "10", "MAX_GENERATIONS": "2",
	}, o.open.sweepAsked.Settings)
	require.Equal(t, "--jobs-table", o.open.sweepAsked.Hints["JOBS_TABLE"])

	code, out, _ = o.run("sweep", "--dry-run", "--repair-after", "1h", "--recheck-after", "48h", "--repair-budget", "0")
	require.Equal(t, 0, code)
	require.Equal(t, sweeper.Options{DryRun: true}, got[2], "the new settings leave a dry run dry")
	require.Contains(t, out, "nothing was changed")
	require.Equal(t, map[string]string{
		"JOBS_TABLE": "fw-jobs", "VIEWS_TABLE": "fw-views", "TOTALS_TABLE": "fw-totals", "CANDIDATES_BUCKET": "fw-candidates",
		"SWEEP_REPAIR_AFTER": "1h0m0s", "SWEEP_RECHECK_AFTER": "48h0m0s", "SWEEP_REPAIR_BUDGET": "0s",
	}, o.open.sweepAsked.Settings)
	require.Equal(t, "--recheck-after", o.open.sweepAsked.Hints["SWEEP_RECHECK_AFTER"])
	require.Equal(t, "--repair-budget", o.open.sweepAsked.Hints["SWEEP_REPAIR_BUDGET"])
}

func TestSweepReportsARealRun(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.open.sweep = func(context.Context, sweeper.Options) (sweeper.Report, error) {
		return sweeper.Report{Examined: 3, Deleted: 1, Stuck: 1, Nudged: 1, Wrapped: true, OutOfTime: true,
			RepairCursor: jobs.FinishedBound(t0.Add(-15 * time.Minute))}, nil
	}
	code, out, _ := o.run("sweep")
	require.Equal(t, 0, code)
	require.Contains(t, out, "sweep of table fw-jobs and bucket fw-candidates\n")
	require.Regexp(t, line("stuck jobs", "1 listed: 1 nudged, 0 refused (the job moved on)"), out)
	require.Regexp(t, line("final jobs", "0 checked: 0 repaired; checked through the jobs that ended before 2026-12-01T09:45:00.000Z"), out)
	require.Regexp(t, line("stopped at", "the end of the bucket"), out)
	require.Regexp(t, line("out of time", "the run stopped early; the next one goes on from the cursors"), out)
	require.NotContains(t, out, "would")
	require.NotContains(t, out, "saves neither")
}

func TestSweepThatFailsPrintsItsReportAndTheError(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.open.sweep = func(context.Context, sweeper.Options) (sweeper.Report, error) {
		return sweeper.Report{Examined: 3, Errors: 2}, errors.New("sweeper: 2 requests failed: throttled")
	}
	code, out, errOut := o.run("sweep", "--json")
	require.Equal(t, 1, code)
	var rep sweeper.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 2, rep.Errors)
	require.Equal(t, "fifoworker sweep: sweeper: 2 requests failed: throttled\n", errOut)
}

func TestSweepArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sweep", "now"}, 2, `unexpected arguments ["now"]`},
		{[]string{"sweep", "--grace", "soon"}, 2, `invalid argument "soon" for "--grace" flag`},
		{[]string{"sweep", "--recheck-after", "tomorrow"}, 2, `invalid argument "tomorrow" for "--recheck-after" flag`},
		{[]string{"sweep", "--repair-budget", "45"}, 2, `invalid argument "45" for "--repair-budget" flag`},
		{[]string{"sweep", "--timeout", "5s"}, 2, "--timeout 5s: more than the 5s a run keeps"},
	} {
		o := newTestOps(t)
		code, _, errOut := o.run(tc.args...)
		require.Equal(t, tc.code, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
		require.Nil(t, o.open.sweepAsked, "%q: nothing was opened", tc.args)
	}
	o := newTestOps(t)
	delete(o.vars, "FIFOWORKER_TOTALS_TABLE_NAME")
	code, _, errOut := o.run("sweep")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no totals table name: pass --totals-table or set FIFOWORKER_TOTALS_TABLE_NAME")
	require.Nil(t, o.open.sweepAsked)

	o = newTestOps(t)
	o.open.sweepErr = fmt.Errorf("bucket fw-candidates: %w (check FIFOWORKER_CANDIDATES_BUCKET_NAME)", errMissing)
	code, out, errOut := o.run("sweep")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Equal(t, "fifoworker sweep: bucket fw-candidates: it does not exist (check FIFOWORKER_CANDIDATES_BUCKET_NAME)\n", errOut)
}

// The settings go to the function's own builder, whose bounds apply; its
// error names the flags. (The builder fails before any request is made.)
func TestSweepSettingsAreTheFunctionsAndItsErrorsNameTheFlags(t *testing.T) {
	t.Parallel()
	o := newTestOps(t)
	o.env.open = awsOpener{load: func(context.Context) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }}
	code, out, errOut := o.run("sweep", "--grace", "500ms", "--repair-after", "30s", "--max-generations", "9")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `--grace="500ms" is not a duration in [1s, 8760h0m0s]`)
	require.Contains(t, errOut, `--repair-after="30s" is not a duration in [1m0s, 168h0m0s]`)
	require.Contains(t, errOut, `--max-generations="9" is not an integer in [1, 4]`)
	require.NotContains(t, errOut, "lambdawire")
	require.NotContains(t, errOut, "SWEEP_")
}

// --recheck-after and --repair-budget are SWEEP_RECHECK_AFTER and
// SWEEP_REPAIR_BUDGET: the function's bounds, inclusive, and its rule that
// the recheck comes after the first check.
func TestSweepRecheckAfterAndRepairBudgetAreTheFunctions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "": accepted
	}{
		{[]string{"--recheck-after", "9m59s"}, `--recheck-after="9m59s" is not a duration in [10m0s, 720h0m0s]`},
		{[]string{"--recheck-after", "720h1s"}, `--recheck-after="720h0m1s" is not a duration in [10m0s, 720h0m0s]`},
		{[]string{"--recheck-after", "0s"}, `--recheck-after="0s" is not a duration in [10m0s, 720h0m0s]`},
		{[]string{"--repair-budget", "-1s"}, `--repair-budget="-1s" is not a duration in [0s, 15m0s]`},
		{[]string{"--repair-budget", "15m1s"}, `--repair-budget="15m1s" is not a duration in [0s, 15m0s]`},
		{[]string{"--repair-after", "1h", "--recheck-after", "1h"}, "--recheck-after: 1h0m0s is not beyond --repair-after 1h0m0s"},
		{[]string{"--recheck-after", "14m"}, "--recheck-after: 14m0s is not beyond --repair-after 15m0s"},
		{[]string{"--recheck-after", "10m", "--repair-after", "1m"}, ""},
		{[]string{"--recheck-after", "720h", "--repair-after", "168h"}, ""},
		{[]string{"--repair-after", "1h", "--recheck-after", "1h0m1s"}, ""},
		{[]string{"--repair-budget", "0s"}, ""},
		{[]string{"--repair-budget", "15m"}, ""},
	} {
		o := newTestOps(t)
		o.env.open = awsOpener{load: func(context.Context) (aws.Config, error) { return aws.Config{Region: "eu-west-1"}, nil }}
		// --max-generations 9 makes the builder fail before any request
		// whether or not the flags under test are accepted.
		args := append([]string{"sweep", "--dry-run", "--max-generations", "9"}, tc.args...)
		code, out, errOut := o.run(args...)
		require.Equal(t, 1, code, "%q: %s", tc.args, errOut)
		require.Empty(t, out, "%q", tc.args)
		require.Contains(t, errOut, `--max-generations="9" is not an integer in [1, 4]`, "%q", tc.args)
		require.NotContains(t, errOut, "SWEEP_", "%q", tc.args)
		if tc.want == "" {
			require.NotContains(t, errOut, "--recheck-after", "%q", tc.args)
			require.NotContains(t, errOut, "--repair-budget", "%q", tc.args)
			require.NotContains(t, errOut, "--repair-after", "%q", tc.args)
			continue
		}
		require.Contains(t, errOut, tc.want, "%q", tc.args)
	}
}
