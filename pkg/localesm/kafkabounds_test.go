package localesm

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

// TestKafkaPartitionAssignedBackRunsFromTheCommit: a partition revoked
// while a batch of it is in flight, then assigned back to the same member
// before that batch fails, is read again from the group's commit: the old
// batch is not retried under the new assignment, and every record from the
// commit is invoked, none skipped because the member had fetched it under
// the earlier one.
func TestKafkaPartitionAssignedBackRunsFromTheCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 2)
		var logA, logB kafkaLog
		release := make(chan struct{})
		unblock := sync.OnceFunc(func() { close(release) })
		defer unblock() // a failed check lets the blocked invocation end
		var calls int
		blockFirstP1 := func(_ context.Context, ev events.KafkaEvent) (json.RawMessage, error) {
			if _, ok := ev.Records[testTopic+"-1"]; ok {
				if calls++; calls == 1 {
					<-release
					return nil, errors.New("failed after its partition was revoked and assigned back")
				}
			}
			return nil, nil
		}
		runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &logA, blockFirstP1))
		k.produce(1, nil, []byte("0"))
		synctest.Wait() // A's invocation of offset 0 holds partition 1
		k.produce(1, nil, []byte("1"))
		k.produce(1, nil, []byte("2"))
		synctest.Wait() // A has fetched 1 and 2; they wait behind the invocation

		never := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			return nil, errors.New("B never finishes")
		}
		stopB := runKafka(t, k, testKafkaConfig(KafkaConfig{MaximumBatchingWindow: NoBatchingWindow}, &logB, never))
		require.NotEmpty(t, logB.batches(), "partition 1 went to B")
		stopB() // B leaves having committed nothing: partition 1 comes back to A
		synctest.Wait()
		unblock() // A's first invocation fails only now, under the new assignment
		time.Sleep(time.Minute)
		synctest.Wait()

		var p1 [][]int64
		for _, b := range logA.batches() {
			if offs, ok := b[testTopic+"-1"]; ok {
				p1 = append(p1, offs)
			}
		}
		require.Equal(t, [][]int64{{0}, {0, 1, 2}}, p1,
			"the old batch is not retried; A reads partition 1 again from the commit (none: TRIM_HORIZON) to its end")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 1}: 3}, k.committed("g"))
	})
}

// concurrencyInvoker runs the function and counts the invocations in
// flight; it declares a bound of n (ConcurrencyLimiter) without enforcing
// it, so that a mapping that exceeds the bound is seen doing it.
type concurrencyInvoker struct {
	Invoker
	n int

	mu            sync.Mutex
	inFlight, max int
}

func (c *concurrencyInvoker) MaxConcurrency() int { return c.n }

func (c *concurrencyInvoker) Invoke(ctx context.Context, inv Invocation) (Result, error) {
	c.mu.Lock()
	c.inFlight++
	c.max = max(c.max, c.inFlight)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	return c.Invoker.Invoke(ctx, inv)
}

// TestKafkaInvokesNoMoreThanTheInvokersBound: with an invoker that runs
// one invocation at a time (RIE), a mapping over several partitions never
// has two invocations in flight, and keeps invoking as each one ends.
func TestKafkaInvokesNoMoreThanTheInvokersBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		k := newFakeKafka(testTopic, 3)
		var log kafkaLog
		slow := func(context.Context, events.KafkaEvent) (json.RawMessage, error) {
			time.Sleep(time.Second)
			return nil, nil
		}
		inv := &concurrencyInvoker{Invoker: Func(log.wrap(slow)), n: 1}
		runKafka(t, k, testKafkaConfig(KafkaConfig{Invoker: inv, BatchSize: 1, MaximumBatchingWindow: NoBatchingWindow}, &log, nil))
		for range 3 {
			for p := range int32(3) {
				k.produce(p, nil, []byte("v"))
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, log.batches(), 9, "every record invoked, one batch after another")
		require.Equal(t, 1, inv.max, "never more invocations at once than the invoker runs")
		require.Equal(t, map[kafkaTP]int64{{testTopic, 0}: 3, {testTopic, 1}: 3, {testTopic, 2}: 3}, k.committed("g"))
	})
}
