//go:build integration

package test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// The benchmarks of the local stack (`make bench`): BenchmarkPipeline (jobs
// end to end through the five functions) and BenchmarkOrdering (pkg/fifo
// and pkg/quarantine on the emulator's FIFO queue). They run on the stack
// `fifoworker local run` started, as the integration tests do, and only
// with -bench: `make test` compiles them and runs none.
//
// Besides time per op, each reports where the CPU went while it ran, per
// op: this process (the functions in process, the event source mappings,
// the SDK) from getrusage, and each emulator from its /proc/PID/stat
// (utime + stime), so "emulator vs our code" is measured side by side in
// the same run. And the 1-minute load average when it ended: the machine
// is shared, and a figure means little without it.

// benchDeployment is template.yaml deployed on the stack under a stack
// name of its own, torn down when the benchmark ends.
type benchDeployment struct {
	state    *localstack.State
	tpl      *samtemplate.Template
	deployed *localdeploy.Result
	stack    string
}

// benchDeploy deploys the template (prepare may change it first) and sets
// the stack's endpoint variables for the functions in process.
func benchDeploy(b *testing.B, prepare func(*samtemplate.Template)) *benchDeployment {
	b.Helper()
	state, tpl, deployed, stack := deployTemplate(b, "bench", prepare)
	return &benchDeployment{state: state, tpl: tpl, deployed: deployed, stack: stack}
}

// deployTemplate sets the stack's endpoint variables for the test, and
// deploys the template (prepare may change it first) under a stack name of
// its own made from prefix, torn down when the test ends.
func deployTemplate(tb testing.TB, prefix string, prepare func(*samtemplate.Template)) (*localstack.State, *samtemplate.Template, *localdeploy.Result, string) {
	tb.Helper()
	state := testenv.Stack(tb)
	for _, kv := range state.Env() {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
	}
	tpl, err := samtemplate.Load("../template.yaml")
	require.NoError(tb, err)
	if prepare != nil {
		prepare(tpl)
	}
	clients := localdeploy.Clients{SQS: state.SQSClient(), DynamoDB: state.DynamoDBClient(), S3: state.S3Client()}
	stack := awstest.Name(tb, prefix)
	deployed, err := localdeploy.Deploy(context.Background(), tpl, stack, state.Region, clients)
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, testenv.Teardown(context.Background(), deployed, clients)) })
	return state, tpl, deployed, stack
}

// cpuMeter measures the CPU time of this process and of the stack's
// emulators over a benchmark's timed part.
type cpuMeter struct {
	procs []localstack.Process
	start map[string]time.Duration
	wall  time.Time
}

// newCPUMeter finds the stack's emulator processes (none when the stack
// is external: then only this process is measured).
func newCPUMeter(b *testing.B) *cpuMeter {
	b.Helper()
	m := &cpuMeter{}
	if name := os.Getenv("FIFOWORKER_STACK"); name != "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		s, err := localstack.Load(localstack.Options{Name: name})
		require.NoError(b, err, "the stack's state (its emulators' PIDs)")
		m.procs = s.Processes
	}
	return m
}

func (m *cpuMeter) sample(b *testing.B) map[string]time.Duration {
	b.Helper()
	out := map[string]time.Duration{}
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	out["self"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for _, p := range m.procs {
		d, err := procCPU(p.PID)
		require.NoError(b, err, "%s's CPU time", p.Service)
		out[p.Service] = d
	}
	return out
}

// begin starts the measurement; call it where the timer starts.
func (m *cpuMeter) begin(b *testing.B) {
	m.start = m.sample(b)
	m.wall = time.Now()
}

// report reports, per op, the CPU each process used since begin (in ms),
// and their sum as a share of the machine's CPU over the wall time
// (cpu-util: 1 is every core busy), then the load average.
func (m *cpuMeter) report(b *testing.B, ops int) {
	b.Helper()
	end := m.sample(b)
	wall := time.Since(m.wall)
	var total time.Duration
	for name, d := range end {
		used := d - m.start[name]
		total += used
		b.ReportMetric(float64(used)/float64(time.Millisecond)/float64(ops), name+"-cpu-ms/op")
	}
	b.ReportMetric(float64(total)/float64(wall)/float64(runtime.NumCPU()), "cpu-util")
	reportLoad(b)
}

// procCPU is a process's user and system CPU time, from /proc/PID/stat
// (fields 14 and 15, in clock ticks of 10 ms: Linux's USER_HZ).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// reportLoad reports the 1-minute load average as a metric.
func reportLoad(b *testing.B) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return
	}
	if l, err := strconv.ParseFloat(f[0], 64); err == nil {
		b.ReportMetric(l, "load1")
	}
}

// requestTimes counts the functions' SDK requests and times them, by
// service, once per attempt (it sits after the retry middleware, like
// awstest.Requests): how many requests a job cost, how long the emulators
// took to answer them, and how many attempts failed (a throttled or
// conditional write refused counts too).
type requestTimes struct {
	mu           sync.Mutex
	n            map[string]int
	d            map[string]time.Duration
	byOperation  map[string]int // by function and operation ("projector TransactWriteItems"), optionOf's
	failed       int            // attempts that ended in an error (the SDK may have retried them)
	firstFailure string         // the first one's operation and error
}

// option is the API option that installs the middleware on a client.
func (r *requestTimes) option() func(*middleware.Stack) error { return r.optionOf("") }

// optionOf is option on a client of function fn: it also counts fn's
// attempts by operation (count).
func (r *requestTimes) optionOf(fn string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("bench.requestTimes",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				start := time.Now()
				out, md, err := next.HandleFinalize(ctx, in)
				took := time.Since(start)
				svc := awsmiddleware.GetServiceID(ctx)
				r.mu.Lock()
				if r.n == nil {
					r.n, r.d, r.byOperation = map[string]int{}, map[string]time.Duration{}, map[string]int{}
				}
				r.n[svc]++
				if fn != "" {
					r.byOperation[fn+" "+awsmiddleware.GetOperationName(ctx)]++
				}
				r.d[svc] += took
				if err != nil {
					r.failed++
					if r.firstFailure == "" {
						r.firstFailure = fmt.Sprintf("%s %s: %v", svc, awsmiddleware.GetOperationName(ctx), err)
					}
				}
				r.mu.Unlock()
				return out, md, err
			}), middleware.After)
	}
}

// reset forgets what was counted so far.
func (r *requestTimes) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n, r.d, r.byOperation, r.failed, r.firstFailure = nil, nil, nil, 0, ""
}

// count is how many attempts of operation op function fn's clients made
// (those optionOf(fn) installs on) since the last reset.
func (r *requestTimes) count(fn, op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byOperation[fn+" "+op]
}

// report reports the requests per op and each service's mean time to an
// answer (ms/req, from the SDK's send to the parsed answer).
func (r *requestTimes) report(b *testing.B, ops int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for svc, n := range r.n {
		total += n
		name := map[string]string{"DynamoDB": "ddb", "SQS": "sqs", "S3": "s3"}[svc]
		if name == "" {
			name = strings.ToLower(strings.ReplaceAll(svc, " ", "-"))
		}
		b.ReportMetric(float64(r.d[svc])/float64(time.Millisecond)/float64(n), name+"-ms/req")
	}
	b.ReportMetric(float64(total)/float64(ops), "reqs/op")
	b.ReportMetric(float64(r.failed), "failed-reqs")
	if r.firstFailure != "" {
		b.Logf("%d request attempts failed, the first: %s", r.failed, r.firstFailure)
	}
}

// warningCounter is a slog.Handler that counts the records at Warn and
// above, and keeps the first.
type warningCounter struct {
	mu    sync.Mutex
	n     int
	first string
}

func (w *warningCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warningCounter) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if w.first == "" {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		w.first = b.String()
	}
	return nil
}

func (w *warningCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warningCounter) WithGroup(string) slog.Handler      { return w }

func (w *warningCounter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n, w.first = 0, ""
}

func (w *warningCounter) count() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, w.first
}
