//go:build integration

package test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/demo"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/localesm"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// BenchmarkOrdering measures what keeping order costs when many messages
// share few groups: b.N messages in K groups wait in the deployed commands
// queue (FIFO, on the emulator), and the worker's machinery without the
// worker drains them: pkg/localesm's mapping as template.yaml configures
// the worker's (batches of 10, at most 20 invocations at once), pkg/fifo's
// lanes, and before any handler runs pkg/quarantine's check of the batch's
// holds on DynamoDB (one BatchGetItem per batch). The handler does no work;
// it checks that each group's messages arrive exactly in the order they
// were sent, and the benchmark fails if one does not. An op is one
// message; msgs/s is the throughput. Sending the messages is not timed.
//
// groups=1 is the worst case of FIFO: every message waits for the one
// before it (the group's lock), so batches of one group never overlap.
func BenchmarkOrdering(b *testing.B) {
	for _, groups := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchOrdering(b, groups) })
	}
}

func benchOrdering(b *testing.B, groups int) {
	// A batch that fails (a timeout on an overloaded machine) comes back
	// after the visibility timeout: 60 s here, not the template's 6
	// minutes, so that the drain goes on; such batches are counted.
	d := benchDeploy(b, func(tpl *samtemplate.Template) { demo.SetWorkerTimeout(tpl, 10) })
	ctx := b.Context()
	// The stack's clients guard their request bodies
	// (sdkhttp.GuardRequestBodies): unguarded, the SDK's early close of a
	// request body can make the transport close a connection under an
	// answer being read, and a receive's lost answer leaves its messages
	// in flight for the visibility timeout.
	client := d.state.SQSClient() // the producer's
	// The mapping's and the quarantine's clients, whose requests are
	// counted and timed: receives, deletes, and the holds' reads.
	requests := &requestTimes{}
	mappingSQS := sqs.New(d.state.SQSClient().Options(), func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, requests.option()) })
	holdsDDB := d.state.DynamoDBClient()
	holdsDDB = dynamodb.New(holdsDDB.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, requests.option()) })

	// Message i is the (i / groups)-th of group i % groups.
	send := func(queue, prefix string, n int) {
		for start := 0; start < n; start += 10 {
			in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(d.deployed.Resources[queue])}
			for i := start; i < min(start+10, n); i++ {
				in.Entries = append(in.Entries, sqstypes.SendMessageBatchRequestEntry{
					Id:                     aws.String(strconv.Itoa(i - start)),
					MessageBody:            aws.String(fmt.Sprintf("%s %d %d", prefix, i%groups, i/groups)),
					MessageGroupId:         aws.String(fmt.Sprintf("%s-g%03d", prefix, i%groups)),
					MessageDeduplicationId: aws.String(fmt.Sprintf("%s-%d", prefix, i)),
				})
			}
			out, err := client.SendMessageBatch(ctx, in)
			require.NoError(b, err)
			require.Empty(b, out.Failed)
		}
	}

	var mu sync.Mutex
	next := map[string]int{} // by prefix and group: the sequence the next message must have
	var disorder atomic.Value
	handler := func(_ context.Context, msg events.SQSMessage) error {
		var prefix string
		var g, seq int
		if _, err := fmt.Sscanf(msg.Body, "%s %d %d", &prefix, &g, &seq); err != nil {
			return fifo.Permanent(err)
		}
		key := fmt.Sprintf("%s %d", prefix, g)
		mu.Lock()
		defer mu.Unlock()
		if seq != next[key] {
			disorder.CompareAndSwap(nil, fmt.Sprintf("group %s: message %d arrived when %d was due", key, seq, next[key]))
		}
		next[key] = seq + 1
		return nil
	}
	var troubleMu sync.Mutex
	var trouble []string          // batches that did not end in full success
	warnings := &warningCounter{} // the mappings' warnings: a failed receive, a failed delete
	var stall time.Duration       // the longest wait for the next batch while draining
	var processed atomic.Int64
	progress := make(chan struct{}, 1) // a batch was settled
	// consumer is the worker's machinery on one of the deployment's queues.
	consumer := func(queue string) (*localesm.SQSMapping, error) {
		holds, err := quarantine.NewDynamoStore(quarantine.DynamoConfig{Client: holdsDDB, Table: d.deployed.Resources["QuarantineTable"]})
		if err != nil {
			return nil, err
		}
		q, err := quarantine.New(quarantine.Config{Store: holds, QueueARN: d.deployed.Attributes[queue]["Arn"]})
		if err != nil {
			return nil, err
		}
		proc, err := fifo.New(fifo.Config{Handler: handler, Quarantine: q, QuarantineThreshold: 6})
		if err != nil {
			return nil, err
		}
		return localesm.NewSQSMapping(localesm.SQSConfig{Client: mappingSQS, Invoker: localesm.Func(proc.Process),
			QueueURL: d.deployed.Resources[queue], BatchSize: 10, MaximumConcurrency: 20, FunctionTimeout: 10 * time.Second,
			ReportBatchItemFailures: true,
			Logger:                  slog.New(warnings),
			OnBatch: func(r localesm.SQSBatchResult) {
				if r.Outcome != localesm.OutcomeSuccess || len(r.Withheld) > 0 {
					troubleMu.Lock()
					trouble = append(trouble, fmt.Sprintf("batch %s: %v, %d of %d deleted, %d withheld: %v", r.RequestID, r.Outcome, len(r.Deleted), len(r.Records), len(r.Withheld), r.Err))
					troubleMu.Unlock()
				}
				processed.Add(int64(len(r.Deleted)))
				select {
				case progress <- struct{}{}:
				default:
				}
			},
		})
	}
	warm, err := consumer("EventsQueue")
	require.NoError(b, err)
	m, err := consumer("CommandsQueue")
	require.NoError(b, err)
	// run runs the mapping until the returned function stops it.
	run := func(m *localesm.SQSMapping) (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- m.Run(runCtx) }()
		return func() {
			cancel()
			require.NoError(b, <-stopped)
		}
	}
	// drain waits until n messages in all have been processed.
	drain := func(n int64) {
		last := time.Now()
		for processed.Load() < n {
			select {
			case <-progress:
				stall = max(stall, time.Since(last))
				last = time.Now()
			case <-time.After(3 * time.Minute):
				troubleMu.Lock()
				defer troubleMu.Unlock()
				require.FailNow(b, "not drained", "%d of %d messages processed, none for 3 minutes; batches not fully successful: %v", processed.Load(), n, trouble)
			}
		}
	}

	// Warm up (a new table's first reads are slow on DynamoDB Local; the
	// clients open their connections): one message per group through the
	// same machinery on the events queue, untimed. Then the messages are
	// sent to the commands queue, which nothing has polled yet, and the
	// timer runs from the start of its mapping until they are drained. (A
	// long poll a stopped mapping leaves open on the emulator is answered
	// with whatever arrives before its wait ends, to nobody: those
	// messages would stay invisible for the visibility timeout.)
	stop := run(warm)
	send("EventsQueue", "warm", groups)
	drain(int64(groups))
	stop()
	send("CommandsQueue", "bench", b.N)
	meter := newCPUMeter(b)
	requests.reset()
	troubleMu.Lock()
	trouble = nil
	troubleMu.Unlock()
	warnings.reset()
	stall = 0
	b.ResetTimer()
	meter.begin(b)
	stop = run(m)
	defer func() { stop() }()
	drain(int64(groups + b.N))
	b.StopTimer()
	meter.report(b, b.N)
	requests.report(b, b.N)
	troubleMu.Lock()
	b.ReportMetric(float64(len(trouble)), "failed-batches")
	troubleMu.Unlock()
	b.ReportMetric(stall.Seconds(), "max-stall-s")
	if n, first := warnings.count(); n > 0 {
		// A receive whose answer was lost leaves its messages invisible
		// (and their groups locked) for the visibility timeout, as on
		// SQS: max-stall-s shows what it cost.
		b.Logf("the mapping logged %d warnings, the first: %s", n, first)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if v := disorder.Load(); v != nil {
		b.Fatalf("order broken: %v", v)
	}
	require.Equal(b, int64(groups+b.N), processed.Load(), "every message processed once")
}
