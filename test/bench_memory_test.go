//go:build integration

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/outboxtest"
	"github.com/fifoworker/fifoworker/internal/dev/cpuquota"
	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/localdeploy"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/internal/dev/pipeline"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// BenchmarkMemorySize measures each function of template.yaml at the CPU
// share Lambda gives it at 128, 256 and 512 MB, and with no quota: its
// bootstrap (the host's build) runs under the runtime interface emulator,
// as TestEachFunctionAnswersItsSampleUnderTheRIE runs it, inside a cgroup
// whose CPU quota is that share per 100 ms period (internal/dev/cpuquota;
// the emulator itself runs outside it, as Lambda's runtime API is not the
// function's), with a weight that makes the quota its share while others
// load the machine. `make bench-memory` runs it (root and a cgroup cpu
// controller needed: it fails saying which is missing); docs/BENCHMARKS.md,
// "Memory sizes", has the figures and the sizes chosen from them.
//
// In memoryRounds rounds, each quota on a deployment of its own with a
// cold start of every function, each invocation does a function's real
// work on the local stack, b.N times after memoryWarmUps (-benchtime 20x:
// 20): intake a POST of a new intent (a job created); the relay a stream
// batch of 10 new jobs' creations (10 commands sent); the worker a batch of
// 10 commands of 10 new jobs, each its own group, running the reference
// task (an export of memoryArticles articles: one page) to completion; the
// projector 10 events of 10 jobs, each the relay's event of one step of
// the job's history (started, progress, completed in turn); the sweeper
// its scheduled run, not a dry run, over the jobs the others left (the
// same work at each quota, each on its own deployment).
//
// Per function and quota it reports the emulator's duration of each
// invocation (what Lambda bills: INVOKE RTDONE) as p50, p90 and max over
// the b.N measured ones, the init of its cold start (INIT REPORT), the
// bootstrap's peak resident memory (VmHWM) after them all, its CPU time per
// invocation, and the 1-minute load average.
func BenchmarkMemorySize(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatalf("BenchmarkMemorySize runs each bootstrap in a cgroup with a CPU quota, which needs root; running as uid %d", os.Geteuid())
	}
	probe, err := cpuquota.New(cpuquota.Config{Name: fmt.Sprintf("fifoworker-mem-%d-probe", os.Getpid())})
	require.NoError(b, err, "a cgroup with the cpu controller")
	require.NoError(b, probe.Remove())

	bootstraps, err := pipeline.BuildBootstraps(b.Context(), "..", filepath.Join(b.TempDir(), "bin"), "")
	require.NoError(b, err)
	// The stack's emulators stand for AWS's services, which do not share
	// a function's CPU, and this process for Lambda's event source: a
	// group of their own, without a quota but with the bootstraps'
	// weight, so that others' load on the machine slows them as little as
	// it can. (The emulators this process starts join it too.)
	stack, err := cpuquota.New(cpuquota.Config{Name: fmt.Sprintf("fifoworker-mem-%d-stack", os.Getpid())})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, stack.Remove()) })
	require.NoError(b, stack.SetWeight(memoryWeight))
	for _, p := range newCPUMeter(b).procs {
		require.NoError(b, stack.Add(p.PID), p.Service)
	}
	require.NoError(b, stack.Add(os.Getpid()))

	for round := 1; round <= memoryRounds; round++ {
		// Odd rounds from the least quota up, even ones down: the local
		// emulators slow down as a stack ages, which would otherwise
		// weigh on the later quotas alone.
		quotas := slices.Clone(memoryQuotas)
		if round%2 == 0 {
			slices.Reverse(quotas)
		}
		b.Run(fmt.Sprintf("round=%d", round), func(b *testing.B) {
			for _, mb := range quotas {
				label := "none"
				if mb > 0 {
					label = strconv.Itoa(mb)
				}
				b.Run("mb="+label, func(b *testing.B) { measureQuota(b, bootstraps, mb, fmt.Sprintf("%d-%s", round, label)) })
			}
		})
	}
}

// measureQuota runs every function under the CPU quota of mb MB (0: none)
// on a deployment of its own, so that the sweeper's scan and the tables'
// sizes are alike at every quota, and measures each in turn.
func measureQuota(b *testing.B, bootstraps map[string]string, mb int, label string) {
	state, tpl, deployed, stack := deployTemplate(b, "mem", nil)
	require.NotEmpty(b, state.RIE, "FIFOWORKER_RIE names the runtime interface emulator (local run sets it)")
	w := newMemoryWork(b, state, deployed)
	logs := b.TempDir()
	wrapped := map[string]string{}
	for _, fn := range pipeline.Functions {
		g, err := cpuquota.New(cpuquota.Config{Name: fmt.Sprintf("fifoworker-mem-%d-%s-%s", os.Getpid(), label, fn)})
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, g.Remove()) }) // after the emulators stopped (cleanups run last first)
		if mb > 0 {
			require.NoError(b, g.SetQuota(cpuquota.ForMemory(mb)))
		}
		// Ten times the default weight: the quota is then the share the
		// bootstrap gets, also while others load the machine. (The
		// emulator runs in the stack's group.)
		require.NoError(b, g.SetWeight(memoryWeight))
		wrapped[fn], err = g.Wrap(logs, fn+".bootstrap", bootstraps[fn])
		require.NoError(b, err)
	}
	p, err := pipeline.Build(b.Context(), pipeline.Config{
		Template: tpl, Deployed: deployed, StackName: stack, Region: state.Region, Endpoints: state.Env(),
		Mode: pipeline.UnderRIE, RIE: state.RIE, Bootstraps: wrapped, LogDir: logs,
	})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, p.Stop()) })
	for _, fn := range pipeline.Functions {
		b.Run("fn="+fn, func(b *testing.B) { w.measure(b, p, fn, label, logs) })
	}
}

// memoryQuotas are the memory sizes whose CPU share is measured; 0 is no
// quota (the whole machine).
var memoryQuotas = []int{128, 256, 512, 0}

// memoryRounds is how many times each quota is measured, each time on a
// new deployment with a cold start of every function: benchstat's
// samples (make bench-memory ignores the round: -ignore /round). make
// bench-memory runs each round on a fresh stack (-bench
// '^BenchmarkMemorySize$/^round=N$'): DynamoDB Local slows down as a
// stack ages, here by half in a third round on one stack.
const memoryRounds = 3

const (
	memoryWeight   = 1000
	memoryWarmUps  = 3   // invocations before the measured ones: the first is the cold start
	memoryBatch    = 10  // commands, events or stream records per batch, each of its own group
	memoryArticles = 100 // the tenant's articles: one page of the export (tasks.DefaultPageSize)
	memoryTenant   = "t-mem"
)

// memoryWork makes each function's invocations, each one new work.
type memoryWork struct {
	jobs     *jobs.DynamoStore
	commands string // the commands and events queues' ARNs, as their mappings give them
	events   string
	n        int // jobs made so far
	// projected is how many projector batches were made: batch k carries
	// step k%3 of the history of the jobs of round k/3.
	projected int
	seq       int
}

func newMemoryWork(b *testing.B, state *localstack.State, deployed *localdeploy.Result) *memoryWork {
	b.Helper()
	require.NoError(b, demo.SeedArticles(b.Context(), state.DynamoDBClient(), deployed.Resources["ArticlesTable"], map[string]int{memoryTenant: memoryArticles}))
	store, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: state.DynamoDBClient(), Table: deployed.Resources["JobsTable"]})
	require.NoError(b, err)
	return &memoryWork{jobs: store, commands: deployed.Attributes["CommandsQueue"]["Arn"], events: deployed.Attributes["EventsQueue"]["Arn"]}
}

// measure invokes fn memoryWarmUps times, then b.N times, each with new
// work, and reports what the emulator's log and the bootstrap's /proc say.
func (w *memoryWork) measure(b *testing.B, p *pipeline.Pipeline, fn, label, logs string) {
	invoke := func() {
		b.StopTimer()
		event, check := w.event(b, fn, label)
		b.StartTimer()
		require.NoError(b, p.Invoke(b.Context(), fn, event, check.out), fn)
		check.ok()
	}
	for range memoryWarmUps {
		invoke()
	}
	pid, err := cpuquota.ReadPID(logs, fn+".bootstrap")
	require.NoError(b, err)
	cpuBefore, err := procCPU(pid)
	require.NoError(b, err)
	b.ResetTimer()
	for range b.N {
		invoke()
	}
	b.StopTimer()
	cpuAfter, err := procCPU(pid)
	require.NoError(b, err)
	peak, err := cpuquota.PeakRSS("/proc", pid)
	require.NoError(b, err)

	init, durations := rieDurations(b, p.RIE(fn).Log)
	require.GreaterOrEqual(b, len(durations), b.N)
	measured := slices.Sorted(slices.Values(durations[len(durations)-b.N:]))
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(nearestRank(measured, 50)), "p50-ms")
	b.ReportMetric(ms(nearestRank(measured, 90)), "p90-ms")
	b.ReportMetric(ms(measured[len(measured)-1]), "max-ms")
	b.ReportMetric(ms(init), "init-ms")
	b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(ms(cpuAfter-cpuBefore)/float64(b.N), "cpu-ms/op")
	reportLoad(b)
}

// nearestRank is the p-th percentile of sorted by the nearest-rank
// method: the least value with at least p% of the values at or below it.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}

// memoryCheck is where an invocation's response goes, and what it must
// say: every invocation must have done its work, or its time means nothing.
type memoryCheck struct {
	out any
	ok  func()
}

// event is fn's next event, made of new work.
func (w *memoryWork) event(b *testing.B, fn, label string) (any, memoryCheck) {
	ctx := b.Context()
	switch fn {
	case "intake":
		w.n++
		var resp events.APIGatewayV2HTTPResponse
		return benchRequest(memoryTenant, fmt.Sprintf("mem-%s-%d", label, w.n)), memoryCheck{&resp, func() {
			require.Equal(b, 202, resp.StatusCode, "intake, a new job: %s", resp.Body)
		}}
	case "relay":
		var ev events.DynamoDBEvent
		for _, j := range w.newJobs(b, label) {
			ev.Records = append(ev.Records, outboxtest.Record("INSERT", j.ID, nil, &j))
		}
		var resp events.DynamoDBEventResponse
		return ev, memoryCheck{&resp, func() { require.Empty(b, resp.BatchItemFailures, "relay") }}
	case "worker":
		created := w.newJobs(b, label)
		var msgs []outbox.Message
		for _, j := range created {
			m, err := outbox.FromTransition(&j, nil)
			require.NoError(b, err)
			msgs = append(msgs, m...)
		}
		var resp events.SQSEventResponse
		return w.sqsEvent(w.commands, msgs), memoryCheck{&resp, func() {
			require.Empty(b, resp.BatchItemFailures, "worker")
			for _, j := range created {
				got, err := w.jobs.Get(ctx, j.ID)
				require.NoError(b, err)
				require.Equal(b, jobs.StatusCompleted, got.Status, "%s: %+v", j.ID, got.Error)
				require.Equal(b, int64(memoryArticles), got.Progress, j.ID)
			}
		}}
	case "projector":
		k := w.projected
		w.projected++
		var msgs []outbox.Message
		for i := range memoryBatch {
			msgs = append(msgs, projectorEvent(b, fmt.Sprintf("mem-%s-p%d-%d", label, k/3, i), k%3))
		}
		var resp events.SQSEventResponse
		return w.sqsEvent(w.events, msgs), memoryCheck{&resp, func() { require.Empty(b, resp.BatchItemFailures, "projector") }}
	case "sweeper":
		var report map[string]any
		return map[string]bool{"dry_run": false}, memoryCheck{&report, func() { require.Equal(b, false, report["dry_run"]) }}
	}
	b.Fatalf("no work for %s", fn)
	return nil, memoryCheck{}
}

// newJobs creates memoryBatch jobs of memoryTenant.
func (w *memoryWork) newJobs(b *testing.B, label string) []jobs.Job {
	var out []jobs.Job
	for range memoryBatch {
		w.n++
		intent := fmt.Sprintf("mem-%s-%d", label, w.n)
		res, err := w.jobs.Create(b.Context(), jobs.CreateRequest{IntentID: intent, Tenant: memoryTenant})
		require.NoError(b, err, intent)
		out = append(out, res.Job)
	}
	return out
}

// projectorEvent is the relay's event of step (0 started, 1 progress, 2
// completed) of job id's history.
func projectorEvent(b *testing.B, id string, step int) outbox.Message {
	recs := outboxtest.History(id, jobs.EventStarted, jobs.EventProgress, jobs.EventCompleted)
	rec := recs[step+1].Change
	cur, err := jobs.FromStreamImage(rec.NewImage)
	require.NoError(b, err)
	prev, err := jobs.FromStreamImage(rec.OldImage)
	require.NoError(b, err)
	msgs, err := outbox.FromTransition(&cur, &prev)
	require.NoError(b, err)
	require.Len(b, msgs, 1)
	return msgs[0]
}

// sqsEvent is msgs as an SQS event source hands them to a function from
// the FIFO queue of arn.
func (w *memoryWork) sqsEvent(arn string, msgs []outbox.Message) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		w.seq++
		id := fmt.Sprintf("mem-%d", w.seq)
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: id, ReceiptHandle: id, Body: string(m.Body), Md5OfBody: md5Hex(string(m.Body)),
			Attributes: map[string]string{
				"ApproximateReceiveCount": "1", "SentTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
				"MessageGroupId": m.GroupID, "MessageDeduplicationId": m.DeduplicationID, "SequenceNumber": fmt.Sprintf("%020d", w.seq),
			},
			EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "eu-west-1",
		})
	}
	return ev
}
