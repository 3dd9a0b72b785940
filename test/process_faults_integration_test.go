//go:build integration && linux

package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The worker's bootstrap, running under the runtime interface emulator, is
// killed (SIGKILL, by its PID) in the middle of a batch: while it waits for
// the answer to an accept, the last write of one of the batch's jobs, which
// a proxy holds back so that the kill lands at a known point (the job is
// claimed by generation 1 and its candidate is written; another accept of
// the same invocation went by before, so jobs of the batch are done, others
// running or not started). Then, end to end:
//
//   - the emulator answers the invocation with Runtime.ExitError, the
//     mapping deletes none of the batch's messages, and the emulator starts
//     a new bootstrap at the next invocation;
//   - the batch's messages come back after the commands queue's visibility
//     timeout (36 s): the killed job's command, the same SQS message, is
//     processed by another invocation, whose claim takes the job over as
//     generation 2 (the dead attempt's lease ran out long before), and
//     generation 2's result is accepted; the dead attempt's accept never
//     reaches the table and its candidate is an orphan the sweeper deletes;
//     the batch's jobs that were done find their job final and are
//     acknowledged;
//   - every invariant of the demo holds (demo.Summary.OK), with the demo's
//     own running example, cancelled job and poison job around it.
func TestWorkerKilledMidBatchUnderTheRIE(t *testing.T) {
	state := testenv.Stack(t)
	require.NotEmpty(t, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (make test's local run sets it)")
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(t, err)
	demo.Prepare(tpl)
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(t, "kill")
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, testenv.Teardown(context.Background(), deployed, clients)) })

	logDir := t.TempDir()
	k := &killer{
		table: deployed.Resources["JobsTable"],
		// The demo's running example and poison job (internal/dev/demo's
		// intents): the first has its own held accept, the second runs
		// only when redriven.
		example:   jobs.DeriveJobID("t-1", "export-intent-7"),
		poison:    jobs.DeriveJobID("t-1", "export-intent-poison"),
		bootstrap: filepath.Join(logDir, "bootstraps", "worker", "bootstrap"),
		passed:    map[string]int{},
		done:      make(chan struct{}),
	}
	route := func(variable, endpoint string) (string, error) {
		if variable != "AWS_ENDPOINT_URL_DYNAMODB" {
			return endpoint, nil
		}
		hold, err := faultproxy.New(faultproxy.Config{Service: faultproxy.DynamoDB, Target: endpoint, Hold: k.match})
		if err != nil {
			return "", err
		}
		t.Cleanup(func() { _ = hold.Close() })
		k.mu.Lock()
		k.hold = hold
		k.mu.Unlock()
		return hold.URL, nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := func(p *pipeline.Pipeline) {
		go k.run(ctx, p.RIE("worker"))
	}
	out := &testenv.Buffer{}
	sum, err := demo.Run(t.Context(), demo.Options{
		State: state, Template: tpl, Deployed: deployed, StackName: stack, Jobs: 30, RIE: true,
		Root: "..", LogDir: logDir, Out: out, Setenv: t.Setenv, Route: route, Started: started,
	})
	t.Logf("demo output:\n%s", out.String())
	cancel()
	<-k.done
	require.NoError(t, err)
	require.NoError(t, k.err)
	require.NotZero(t, k.killed, "the worker's bootstrap was killed")
	t.Logf("killed the worker's bootstrap (pid %d) while its accept of %s as %s was in flight", k.killed, k.job, k.attempt)

	// The emulator saw its runtime die in the invocation and started
	// another for the next one.
	rieLog, err := os.ReadFile(k.rieLog)
	require.NoError(t, err)
	log := string(rieLog)
	exit := strings.Index(log, "Runtime exited with error: signal: killed")
	require.GreaterOrEqual(t, exit, 0, "the emulator reports the kill:\n%s", log)
	require.Contains(t, log[exit:], "INIT START", "a new bootstrap after the kill")
	t.Logf("the worker's emulator, around the kill:\n%s", linesAround(log, exit, 3, 4))

	// The killed job: taken over by the next generation through the same
	// message, delivered again to another invocation.
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: state.DynamoDBClient(), Table: deployed.Resources["JobsTable"]})
	require.NoError(t, err)
	job, err := store.Get(t.Context(), k.job)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, job.Status)
	require.GreaterOrEqual(t, job.Generation, int64(2), "the dead attempt held generation 1; the job was taken over")
	deadInvocation, message, ok := strings.Cut(k.attempt, "_")
	require.True(t, ok, "attempt %q", k.attempt)
	invocation, redelivered, ok := strings.Cut(job.LeaseOwner, "_")
	require.True(t, ok, "attempt %q", job.LeaseOwner)
	require.Equal(t, message, redelivered, "the winning attempt processed the same SQS message, delivered again")
	require.NotEqual(t, deadInvocation, invocation, "in another invocation")
	t.Logf("%s: completed by generation %d, attempt %s (the same message %s, another invocation)", k.job, job.Generation, job.LeaseOwner, message)

	// The jobs of the killed batch whose accept the dead invocation got
	// in before the kill (the table says which: their result is its
	// attempt's): their commands came back with the batch and were
	// acknowledged without work, by another invocation.
	acked := map[string]bool{}
	for _, r := range workerRecords(log[exit:]) {
		if r["msg"] == "worker: job is final; command acknowledged" && r["aws_request_id"] != deadInvocation {
			acked[fmt.Sprint(r["job_id"])] = true
		}
	}
	done := completedBy(t, state.DynamoDBClient(), deployed.Resources["JobsTable"], deadInvocation)
	for _, id := range done {
		require.True(t, acked[id], "%s, completed by the killed invocation: its command came back and was acknowledged", id)
	}
	t.Logf("the killed invocation had completed %d other jobs of its batch (%v); their commands came back and were acknowledged", len(done), done)

	// Its only candidate left is the result: the dead attempt's was
	// written before the kill and swept as an orphan.
	cands, err := candidate.New(candidate.Config{Client: state.S3Client(), Bucket: deployed.Resources["CandidatesBucket"]})
	require.NoError(t, err)
	left, err := cands.List(t.Context(), k.job)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, job.Result.Key, left[0].Key.String())

	require.True(t, sum.OK, "%+v", sum)
	require.Equal(t, "rie", sum.Mode)
	require.Equal(t, 34, sum.Jobs)
	require.Zero(t, sum.FailedUnexpectedly)
	require.GreaterOrEqual(t, sum.OrphansSwept, 2, "the running example's orphan and the dead attempt's")
}

// killer holds back the first accept of a bulk job, kills the worker's
// bootstrap while it waits for the answer, and records what it killed.
type killer struct {
	table, example, poison, bootstrap string

	mu          sync.Mutex
	hold        *faultproxy.Proxy
	exampleSeen bool
	passed      map[string]int // accepts let through, per invocation
	job         string         // the job whose accept was held
	attempt     string         // the dead attempt, <aws_request_id>_<message_id>
	body        string

	killed int // the bootstrap's PID
	rieLog string
	err    error
	done   chan struct{}
}

var attemptID = regexp.MustCompile(`[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}_[A-Za-z0-9-]+`)

// match is the proxy's Hold: an accept (the UpdateItem on the Jobs table
// that records a result) of a bulk job, once the running example's first
// accept has gone by (so that the demo's own proxy holds that one, as the
// demo needs, whatever the kill does to its batch).
func (k *killer) match(op string, body []byte) bool {
	b := string(body)
	if op != "UpdateItem" || !strings.Contains(b, `"TableName":"`+k.table+`"`) || !strings.Contains(b, "result_key") {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if strings.Contains(b, `"`+k.example+`"`) {
		k.exampleSeen = true
		return false
	}
	if !k.exampleSeen || strings.Contains(b, `"`+k.poison+`"`) {
		return false
	}
	var req struct {
		Key map[string]struct{ S string }
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Key["job_id"].S == "" {
		return false
	}
	attempt := attemptID.FindString(b)
	invocation, _, _ := strings.Cut(attempt, "_")
	if k.passed[invocation] == 0 {
		// The first accept of its invocation goes by: the kill comes
		// after some of the batch's work is done.
		k.passed[invocation]++
		return false
	}
	k.job, k.attempt, k.body = req.Key["job_id"].S, attempt, b
	return true
}

func (k *killer) run(ctx context.Context, rie *pipeline.RIEProcess) {
	defer close(k.done)
	fail := func(err error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.err = err
	}
	if rie == nil {
		fail(errors.New("the worker does not run under the RIE"))
		return
	}
	k.rieLog = rie.Log
	for {
		k.mu.Lock()
		held := k.hold != nil && k.hold.Held()
		k.mu.Unlock()
		if held {
			break
		}
		select {
		case <-ctx.Done():
			fail(errors.New("no accept of a bulk job was held"))
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	pid, err := childRunning(rie.PID(), k.bootstrap)
	if err != nil {
		fail(err)
		return
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		fail(fmt.Errorf("kill %d: %w", pid, err))
		return
	}
	k.mu.Lock()
	k.killed = pid
	k.mu.Unlock()
	if k.attempt == "" {
		fail(fmt.Errorf("no attempt id in the held accept: %s", k.body))
	}
}

// childRunning finds the process whose parent is ppid and whose executable
// is exe (Linux: /proc).
func childRunning(ppid int, exe string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(ppid) {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process of %s is a child of the emulator (pid %d)", exe, ppid)
}

// completedBy lists the jobs whose accepted attempt ran in invocation.
func completedBy(t *testing.T, ddb *dynamodb.Client, table, invocation string) []string {
	t.Helper()
	var ids []string
	pages := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		require.NoError(t, err)
		for _, item := range page.Items {
			owner, _ := item["lease_owner"].(*ddbtypes.AttributeValueMemberS)
			status, _ := item["status"].(*ddbtypes.AttributeValueMemberS)
			id, _ := item["job_id"].(*ddbtypes.AttributeValueMemberS)
			if owner != nil && status != nil && id != nil && status.Value == "completed" && strings.HasPrefix(owner.Value, invocation+"_") {
				ids = append(ids, id.Value)
			}
		}
	}
	return ids
}

// workerRecords are the JSON log records in an emulator's log (the
// function's own; the emulator's lines are text).
func workerRecords(log string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// linesAround returns the lines of s around byte offset at: before lines before
// it, after lines after.
func linesAround(s string, at, before, after int) string {
	lines := strings.Split(s, "\n")
	line := strings.Count(s[:at], "\n")
	from, to := max(0, line-before), min(len(lines), line+after+1)
	return strings.Join(lines[from:to], "\n")
}
