package kafka_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// storeLike is a fakeQuarantine whose Failed behaves as a store's request
// does with its context: refused once the context is done, and, with
// hang, answered only when the context ends (a store that does not
// answer). It records when Failed's context ends and when it returned.
type storeLike struct {
	*fakeQuarantine
	hang     bool
	deadline time.Time // of Failed's context
	returned time.Time
}

func (s *storeLike) Failed(ctx context.Context, key kafka.TopicKey, hold kafka.Hold, rec *kafka.Record, cause error) (kafka.Attempts, error) {
	s.deadline, _ = ctx.Deadline()
	defer func() { s.returned = time.Now() }()
	if s.hang {
		<-ctx.Done()
	}
	if err := ctx.Err(); err != nil {
		return kafka.Attempts{}, err
	}
	return s.fakeQuarantine.Failed(ctx, key, hold, rec, cause)
}

// A handler that runs into its deadline (it returns when its context
// ends, ResponseReserve before the invocation's) fails, and that failure
// is counted: the count is written on a context that outlives the
// handlers' but ends before the invocation's deadline, half the reserve
// before it, so that the response still goes out in time. Without it such
// a record would never be parked, and the mapping would give it up while
// its key's later records run. No goroutine outlives Process (the bubble
// checks).
func TestQuarantineCountsAFailureAtTheDeadline(t *testing.T) {
	t.Parallel()
	const reserve = 300 * time.Millisecond
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "the count lands", true: "a store that does not answer"}[hang], func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				deadline := time.Now().Add(10 * time.Second)
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				defer cancel()
				q := &storeLike{fakeQuarantine: &fakeQuarantine{}, hang: hang}
				p := newProcessor(t, kafka.Config{Handler: func(ctx context.Context, r kafka.Record) error {
					if name(r) == "t-0/1" {
						<-ctx.Done()
						return ctx.Err()
					}
					return nil
				}, Quarantine: q, QuarantineThreshold: testThreshold, ResponseReserve: reserve})
				resp, err := p.Process(ctx, records(t, "t-0/1:a", "t-0/2:a", "t-0/3:b"))
				require.NoError(t, err)
				require.Less(t, time.Now(), deadline, "Process answered before the invocation's deadline")
				require.Equal(t, []string{"t-0/1", "t-0/2"}, failed(resp))
				require.Equal(t, deadline.Add(-reserve/2), q.deadline, "the count's context ends half the reserve before the deadline")
				require.Less(t, q.returned, deadline)
				if hang {
					require.Empty(t, q.Of("a"))
					return
				}
				require.Equal(t, []string{"failed t-0/1"}, q.Of("a"))
				require.NoError(t, q.Nth(t, "a", 0).Err)
				require.True(t, errors.Is(q.Nth(t, "a", 0).Cause, context.DeadlineExceeded), "the cause counted is the handler's")
				require.Equal(t, 1, q.HoldOf("a").Attempts.Failed)
			})
		})
	}
}
