package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// serialRIE is a fake aws-lambda-rie: like the real emulator it runs one
// invocation at a time (a request waits for the one before it) and starts
// the function's timeout when the function starts, answering "Task timed
// out" when the function takes longer. Every function takes delay.
type serialRIE struct {
	running chan struct{} // holds a token while "the function" runs
	delay   time.Duration
	timeout time.Duration
}

func (f *serialRIE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case f.running <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-f.running }()
	if f.delay >= f.timeout {
		time.Sleep(f.timeout)
		_, _ = fmt.Fprintf(w, "Task timed out after %.2f seconds", f.timeout.Seconds())
		return
	}
	select {
	case <-time.After(f.delay):
	case <-r.Context().Done():
		return
	}
	_, _ = io.WriteString(w, `{"batchItemFailures":[]}`)
}

// newSerialRIE returns an RIE invoker for a serialRIE, called in memory,
// whose functions take 90% of timeout, with a grace short enough that the
// invoker, not the fake, would notice a lost time budget. Call it inside a
// synctest bubble: the budget is then exact, whatever the machine's load.
func newSerialRIE(t testing.TB, timeout time.Duration) *RIE {
	t.Helper()
	rie := inMemoryRIE(t, &serialRIE{running: make(chan struct{}, 1), delay: timeout * 9 / 10, timeout: timeout})
	rie.grace = timeout / 10
	return rie
}

// runMapping runs a mapping until the test ends and checks that Run
// returns nil when it is stopped.
func runMapping(t *testing.T, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSQSMappingKeepsTheTimeoutBudgetOfASerialInvoker: the emulator runs
// one invocation at a time. Two messages that each take 90% of the function
// timeout both succeed, and the mapping never holds a received message the
// invoker cannot run yet (its visibility timeout would run meanwhile).
func TestSQSMappingKeepsTheTimeoutBudgetOfASerialInvoker(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		q := newFakeQueue(30 * time.Second)
		q.send("m1", "g1")
		q.send("m2", "g2")
		var mu sync.Mutex
		outcomes := map[string]Outcome{}
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: newSerialRIE(t, timeout),
			QueueURL: testQueueURL, BatchSize: 1, FunctionTimeout: timeout,
			OnBatch: func(r SQSBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				for _, rec := range r.Records {
					outcomes[rec.MessageId] = r.Outcome
				}
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "both invocations to settle", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(outcomes) == 2
		})
		stop()
		require.Equal(t, map[string]Outcome{"m1": OutcomeSuccess, "m2": OutcomeSuccess}, outcomes,
			"a function that finishes within its timeout is not reported as timed out")
		require.Equal(t, 1, q.inFlightMax(), "a message was received while the invoker was busy")
	})
}

// TestStreamMappingKeepsTheTimeoutBudgetOfASerialInvoker: two shards share
// one emulator; their invocations take turns, and each gets its full
// timeout.
func TestStreamMappingKeepsTheTimeoutBudgetOfASerialInvoker(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		f := &fakeStreams{
			shards:    []fakeShard{{id: "a", keys: []string{"a1"}}, {id: "b", keys: []string{"b1"}}},
			iterTypes: map[string][]streamtypes.ShardIteratorType{},
		}
		var mu sync.Mutex
		var results []StreamBatchResult
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: newSerialRIE(t, timeout),
			StreamARN: testStreamARN, FunctionTimeout: timeout, PollInterval: 5 * time.Millisecond,
			OnBatch: func(r StreamBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "both shards' batches to settle", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(results) >= 2
		})
		stop()
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results[:2] {
			require.Equal(t, OutcomeSuccess, r.Outcome, "shard %s", r.ShardID)
		}
	})
}

// TestStreamZeroValueRetriesUntilSuccess: like Lambda's default, a failing
// batch is retried (its shard waits) until it succeeds; nothing is dropped.
func TestStreamZeroValueRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{
			shards:    []fakeShard{{id: "s", keys: []string{"k1", "k2"}}},
			iterTypes: map[string][]streamtypes.ShardIteratorType{},
		}
		var mu sync.Mutex
		calls := 0
		var invoked [][]string
		var results []StreamBatchResult
		handler := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			var keys []string
			for _, r := range ev.Records {
				keys = append(keys, r.Change.Keys["job_id"].String())
			}
			invoked = append(invoked, keys)
			if calls <= 3 {
				return events.DynamoDBEventResponse{}, fmt.Errorf("failure %d", calls)
			}
			return events.DynamoDBEventResponse{}, nil
		}
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, PollInterval: 5 * time.Millisecond,
			OnBatch: func(r StreamBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "the batch to succeed", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(results) > 0 && results[len(results)-1].Outcome == OutcomeSuccess
		})
		stop()
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, [][]string{{"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}, {"k1", "k2"}}, invoked)
		for i, r := range results {
			require.False(t, r.Discarded, "result %d discarded", i)
			require.Equal(t, i+1, r.Attempt)
		}
	})
}

// logCapture is a slog handler that keeps its records.
type logCapture struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c } // the mappings' fixed attributes do not matter here
func (c *logCapture) WithGroup(string) slog.Handler            { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}

// find returns the attributes of the first record at level with message
// msg.
func (c *logCapture) find(level slog.Level, msg string) (map[string]slog.Value, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.records {
		if r.Level == level && r.Message == msg {
			attrs := map[string]slog.Value{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
			return attrs, true
		}
	}
	return nil, false
}

// TestSQSWithheldMessagesAreLoggedAsWarnings: a message received again while
// its group is in flight is withheld, which uses up one of its receives; the
// mapping says so at Warn with the message ids and groups.
func TestSQSWithheldMessagesAreLoggedAsWarnings(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := newFakeQueue(30 * time.Second)
		q.send("m1", "g1")
		logs := &logCapture{}
		const withheldMsg = "localesm: messages withheld: their group is in flight; the receive counts toward the queue's maxReceiveCount"
		withheld := make(chan struct{})
		var once sync.Once
		handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			if ev.Records[0].Attributes[receiveCountAttribute] == "1" {
				q.expire("m1") // its visibility timeout ran out while the function runs
				select {
				case <-withheld:
				case <-ctx.Done():
				}
			}
			return events.SQSEventResponse{}, nil
		}
		var mu sync.Mutex
		var results []SQSBatchResult
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(handler),
			QueueURL: testQueueURL, BatchSize: 1, FunctionTimeout: 5 * time.Second,
			Logger: slog.New(logs),
			OnBatch: func(r SQSBatchResult) {
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				if r.Outcome == OutcomeWithheld {
					once.Do(func() { close(withheld) })
				}
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "m1 to be deleted", func() bool { return len(q.deleted()) == 1 })
		stop()
		attrs, ok := logs.find(slog.LevelWarn, withheldMsg)
		require.True(t, ok, "no warning")
		require.Equal(t, []string{"m1"}, attrs["message_ids"].Any())
		require.Equal(t, []string{"g1"}, attrs["group_ids"].Any())
		require.Equal(t, []int{2}, attrs["receive_counts"].Any())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, results, 3)
		require.Equal(t, OutcomeWithheld, results[0].Outcome)
		require.Empty(t, results[0].Records)
		require.Equal(t, []WithheldMessage{{MessageID: "m1", GroupID: "g1", ReceiveCount: 2}}, results[0].Withheld)
		require.Equal(t, OutcomeSuccess, results[1].Outcome)
		require.Empty(t, results[1].Deleted, "the first invocation's delete used the receipt handle the withheld receive replaced")
		require.Equal(t, OutcomeSuccess, results[2].Outcome)
		require.Equal(t, "3", results[2].Records[0].Attributes[receiveCountAttribute], "back after the withheld receive's visibility timeout")
		require.Equal(t, []string{"m1"}, results[2].Deleted)
	})
}

// TestSQSDeletedListsOnlyMessagesReallyDeleted: a message received again
// while its batch's delete is on the way (its visibility timeout ran out
// just then) is not deleted by that delete, whose receipt handle is no
// longer the latest, though SQS answers it with success. The batch does not
// report it deleted; the batch that received it again runs it after the
// first one's outcome has been applied, and deletes it.
func TestSQSDeletedListsOnlyMessagesReallyDeleted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := newFakeQueue(30 * time.Second)
		q.send("m1", "g1")
		var once sync.Once
		q.beforeDelete = func() {
			once.Do(func() {
				q.expire("m1")
				synctest.Wait() // the mapping receives m1 again before the delete lands
			})
		}
		var mu sync.Mutex
		var steps []string
		var results []SQSBatchResult
		handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, "invoke "+ev.Records[0].Attributes[receiveCountAttribute])
			return events.SQSEventResponse{}, nil
		}
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(handler),
			QueueURL: testQueueURL, BatchSize: 1, FunctionTimeout: 5 * time.Second,
			OnBatch: func(r SQSBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
				steps = append(steps, "settled "+r.Records[0].Attributes[receiveCountAttribute])
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "m1 to be deleted", func() bool { return len(q.deleted()) == 1 })
		stop()

		mu.Lock()
		defer mu.Unlock()
		var reported []string
		for _, r := range results {
			require.Equal(t, OutcomeSuccess, r.Outcome)
			reported = append(reported, r.Deleted...)
		}
		require.Equal(t, q.deleted(), reported, "Deleted must list exactly the deletions the queue made")
		require.Len(t, results, 2)
		require.Empty(t, results[0].Deleted, "deleted with a receipt handle a later receive replaced")
		require.Equal(t, []string{"m1"}, results[1].Deleted)
		require.Equal(t, []string{"invoke 1", "settled 1", "invoke 2", "settled 2"}, steps,
			"the message received again runs after the first invocation's outcome has been applied")
	})
}

// TestSQSResultsOfAGroupAreReportedInTheOrderItsBatchesRan: the batch that
// takes a group over runs only after OnBatch has returned for the batch it
// took the group from, so whoever watches OnBatch sees a group's results in
// order, even when OnBatch takes a while.
func TestSQSResultsOfAGroupAreReportedInTheOrderItsBatchesRan(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := newFakeQueue(360 * time.Second)
		q.deleteLatency = 50 * time.Millisecond // m2 is received while m1's delete is answered
		q.send("m1", "g1")
		q.send("m2", "g1")
		var mu sync.Mutex
		var steps []string
		handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, "invoke "+ev.Records[0].MessageId)
			return events.SQSEventResponse{}, nil
		}
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(handler),
			QueueURL: testQueueURL, BatchSize: 1, MaximumConcurrency: 2, FunctionTimeout: 60 * time.Second,
			OnBatch: func(r SQSBatchResult) {
				time.Sleep(time.Second) // a slow observer
				mu.Lock()
				defer mu.Unlock()
				steps = append(steps, "reported "+r.Records[0].MessageId)
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "both results to be reported", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(steps) == 4
		})
		stop()
		require.Equal(t, []string{"m1", "m2"}, q.deleted())
		require.Equal(t, []string{"invoke m1", "reported m1", "invoke m2", "reported m2"}, steps)
	})
}

// TestSQSNextMessageOfAGroupIsNotWithheldWhileItsPredecessorIsDeleted: SQS
// unlocks a group the moment the delete of its last message in flight
// lands, so a receive waiting on another connection gets the group's next
// message before the delete's answer arrives. That message is the group's
// next one, not a stray: it runs as soon as its predecessor's outcome has
// been applied, and is not withheld for a visibility timeout (which, for
// the commands queue, is 360 s, and uses up a receive).
func TestSQSNextMessageOfAGroupIsNotWithheldWhileItsPredecessorIsDeleted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const deleteLatency = 50 * time.Millisecond
		q := newFakeQueue(360 * time.Second)
		q.deleteLatency = deleteLatency
		q.send("m1", "g1")
		q.send("m2", "g1")
		var mu sync.Mutex
		invoked := map[string][]time.Time{}
		settled := map[string]time.Time{}
		var withheld []WithheldMessage
		handler := func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, rec := range ev.Records {
				invoked[rec.MessageId] = append(invoked[rec.MessageId], time.Now())
			}
			return events.SQSEventResponse{}, nil
		}
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(handler),
			QueueURL: testQueueURL, BatchSize: 1, MaximumConcurrency: 2, FunctionTimeout: 60 * time.Second, ReportBatchItemFailures: true,
			OnBatch: func(r SQSBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				withheld = append(withheld, r.Withheld...)
				for _, id := range r.Deleted {
					settled[id] = time.Now()
				}
			},
		})
		require.NoError(t, err)
		start := time.Now()
		stop := runMapping(t, m.Run)
		waitFor(t, time.Hour, "both messages to be deleted", func() bool { return len(q.deleted()) == 2 })
		stop()

		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []time.Time{start}, invoked["m1"])
		require.Len(t, invoked["m2"], 1, "m2 invoked more than once")
		require.Equal(t, deleteLatency, invoked["m2"][0].Sub(start),
			"m2 must run as soon as m1's delete is answered, not after a visibility timeout")
		require.Empty(t, withheld, "the group's next message was withheld")
		require.Equal(t, []string{"m1", "m2"}, q.deleted())
		require.False(t, invoked["m2"][0].Before(settled["m1"]), "m2 ran before m1's outcome was applied")
	})
}

// TestSQSResponseOverTheSizeLimitFailsTheBatch: a response over
// MaxResponseSize fails the whole batch, which deletes nothing and comes
// back after its visibility timeout.
func TestSQSResponseOverTheSizeLimitFailsTheBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := newFakeQueue(30 * time.Second)
		q.send("m1", "g1")
		q.send("m2", "g2")
		// A valid partial batch response reporting nothing failed, padded
		// to one byte over the limit.
		prefix, suffix := `{"batchItemFailures":[],"padding":`, `}`
		oversized := append(append([]byte(prefix), jsonOfSize(MaxResponseSize+1-len(prefix)-len(suffix))...), suffix...)
		require.Len(t, oversized, MaxResponseSize+1)
		handler := func(_ context.Context, ev events.SQSEvent) (json.RawMessage, error) {
			if ev.Records[0].Attributes[receiveCountAttribute] == "1" {
				return oversized, nil
			}
			return json.RawMessage(`{"batchItemFailures":[]}`), nil
		}
		var mu sync.Mutex
		var results []SQSBatchResult
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(handler),
			QueueURL: testQueueURL, FunctionTimeout: 5 * time.Second, ReportBatchItemFailures: true,
			OnBatch: func(r SQSBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "both messages to be deleted", func() bool { return len(q.deleted()) == 2 })
		stop()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, results, 2)
		require.Equal(t, OutcomeFunctionError, results[0].Outcome, "error: %v", results[0].Err)
		require.ErrorContains(t, results[0].Err, "Function.ResponseSizeTooLarge")
		require.ErrorContains(t, results[0].Err, "(6291557 bytes)")
		require.Len(t, results[0].Records, 2)
		require.Empty(t, results[0].Deleted, "a failed batch deletes nothing")
		require.Equal(t, OutcomeSuccess, results[1].Outcome)
		require.Equal(t, []string{"m1", "m2"}, results[1].Deleted, "back after the visibility timeout, whole")
	})
}

// TestStreamResponseOverTheSizeLimitIsRetried: a response over
// MaxResponseSize is a function error; the batch is retried like any.
func TestStreamResponseOverTheSizeLimitIsRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStreams{
			shards:    []fakeShard{{id: "s", keys: []string{"k1", "k2"}}},
			iterTypes: map[string][]streamtypes.ShardIteratorType{},
		}
		var mu sync.Mutex
		calls := 0
		handler := func(context.Context, events.DynamoDBEvent) (json.RawMessage, error) {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls == 1 {
				return jsonOfSize(MaxResponseSize + 1), nil
			}
			return json.RawMessage(`{}`), nil
		}
		var results []StreamBatchResult
		m, err := NewStreamMapping(StreamConfig{Client: f, Invoker: Func(handler),
			StreamARN: testStreamARN, PollInterval: 10 * time.Millisecond,
			OnBatch: func(r StreamBatchResult) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			},
		})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "the batch to succeed", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(results) > 0 && results[len(results)-1].Outcome == OutcomeSuccess
		})
		stop()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, results, 2)
		require.Equal(t, OutcomeFunctionError, results[0].Outcome, "error: %v", results[0].Err)
		require.ErrorContains(t, results[0].Err, "Function.ResponseSizeTooLarge")
		require.Len(t, results[0].Records, 2)
		require.Equal(t, 2, results[1].Attempt)
		require.Len(t, results[1].Records, 2, "the retry carries the whole batch")
	})
}

// flakyReceives fails the first failures ReceiveMessage calls and records
// when each call was made.
type flakyReceives struct {
	*fakeQueue
	mu       sync.Mutex
	failures int
	calls    []time.Time
}

func (f *flakyReceives) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	fail := len(f.calls) <= f.failures
	f.mu.Unlock()
	if fail {
		return nil, errors.New("connection refused")
	}
	return f.fakeQueue.ReceiveMessage(ctx, in, opts...)
}

// TestSQSReceiveFailuresBackOff: failed receives are retried after a
// jittered wait that doubles with each failure in a row, up to a cap, and
// a message is received once the queue answers again.
func TestSQSReceiveFailuresBackOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		q := &flakyReceives{fakeQueue: newFakeQueue(30 * time.Second), failures: 6}
		q.send("m1", "g1")
		m, err := NewSQSMapping(SQSConfig{Client: q, Invoker: Func(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, nil
		}), QueueURL: testQueueURL, FunctionTimeout: time.Second})
		require.NoError(t, err)
		stop := runMapping(t, m.Run)
		waitFor(t, time.Minute, "m1 to be deleted", func() bool { return len(q.deleted()) == 1 })
		stop()

		q.mu.Lock()
		defer q.mu.Unlock()
		require.GreaterOrEqual(t, len(q.calls), 7)
		for i := 1; i <= 6; i++ {
			want := min(retryBase<<(i-1), retryMax)
			wait := q.calls[i].Sub(q.calls[i-1])
			require.True(t, wait >= want/2 && wait <= want, "wait before retry %d: %v, want within [%v, %v]", i, wait, want/2, want)
		}
	})
}

func TestSQSPollWaitErrorNamesTheConfigurableRange(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{-time.Second, 21 * time.Second, 1500 * time.Millisecond} {
		err := SQSConfig{Client: &sqs.Client{}, Invoker: noop, QueueURL: "http://sqs.local/000000000000/q.fifo", PollWait: wait}.Validate()
		require.ErrorContains(t, err, "[1s, 20s]", "poll wait %v", wait)
		require.NotContains(t, err.Error(), "[0s", "poll wait %v", wait)
	}
	for _, wait := range []time.Duration{0, time.Second, 20 * time.Second} {
		require.NoError(t, SQSConfig{Client: &sqs.Client{}, Invoker: noop, QueueURL: "http://sqs.local/000000000000/q.fifo", PollWait: wait}.Validate(), "poll wait %v", wait)
	}
}
