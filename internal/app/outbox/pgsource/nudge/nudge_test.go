package nudge_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// sends records the nudges sent; fail, when set, refuses them.
type sends struct {
	mu   sync.Mutex
	got  []nudge.Payload
	fail error
}

func (s *sends) Send(_ context.Context, p nudge.Payload) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.got = append(s.got, p)
	return nil
}

func (s *sends) commits() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, p := range s.got {
		out = append(out, p.Commits)
	}
	return out
}

func coalescer(t *testing.T, s nudge.Sender, interval time.Duration) *nudge.Coalescer {
	t.Helper()
	c, err := nudge.NewCoalescer(nudge.CoalescerConfig{Sender: s, Interval: interval})
	require.NoError(t, err)
	return c
}

// A burst of commits sends one nudge at once, for the first; the rest go
// with the next nudge, which the first Nudge at exactly Interval after the
// last sends (one before it does not), and Flush sends what is left.
func TestABurstSendsOneNudgePerInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &sends{}
		c := coalescer(t, s, 100*time.Millisecond)
		start := time.Now()
		for range 50 {
			require.NoError(t, c.Nudge(t.Context()))
		}
		require.Equal(t, []int{1}, s.commits(), "the first at once, the 49 others held")
		require.Equal(t, start, s.got[0].FirstCommit)
		time.Sleep(100*time.Millisecond - time.Nanosecond)
		require.NoError(t, c.Nudge(t.Context()))
		require.Equal(t, []int{1}, s.commits(), "1ns before the interval: held")
		time.Sleep(time.Nanosecond)
		require.NoError(t, c.Nudge(t.Context()))
		require.Equal(t, []int{1, 51}, s.commits(), "at exactly the interval: the 49, the one before and this one")
		require.Equal(t, start, s.got[1].FirstCommit, "the first commit it stands for")
		require.NoError(t, c.Nudge(t.Context()))
		require.NoError(t, c.Flush(t.Context()))
		require.Equal(t, []int{1, 51, 1}, s.commits(), "Flush sends what is held, whenever the last was sent")
		require.NoError(t, c.Flush(t.Context()))
		require.Equal(t, []int{1, 51, 1}, s.commits(), "nothing held: nothing sent")
	})
}

// A nudge that cannot be sent says so, and its commits are counted into
// the next one: none is dropped.
func TestAFailedNudgeIsCountedIntoTheNext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &sends{fail: errors.New("throttled")}
		c := coalescer(t, s, time.Second)
		start := time.Now()
		require.ErrorContains(t, c.Nudge(t.Context()), "throttled")
		time.Sleep(time.Millisecond)
		require.NoError(t, c.Nudge(t.Context()), "within the interval: held")
		s.fail = nil
		require.NoError(t, c.Flush(t.Context()))
		require.Equal(t, []int{2}, s.commits())
		require.Equal(t, start, s.got[0].FirstCommit)
	})
}

// A send is bounded by Timeout: a Lambda API that does not answer holds
// the writer that long, and the nudge's commits wait for the next.
func TestASendIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := nudge.NewCoalescer(nudge.CoalescerConfig{Timeout: 300 * time.Millisecond,
			Sender: senderFunc(func(ctx context.Context, _ nudge.Payload) error {
				<-ctx.Done()
				return ctx.Err()
			})})
		require.NoError(t, err)
		start := time.Now()
		require.ErrorIs(t, c.Nudge(t.Context()), context.DeadlineExceeded)
		require.Equal(t, 300*time.Millisecond, time.Since(start))
	})
}

// Concurrent commits of one writer share the nudges: one send for all.
func TestConcurrentNudgesSendOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &sends{}
		c := coalescer(t, s, time.Second)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { _ = c.Nudge(t.Context()) })
		}
		wg.Wait()
		require.NoError(t, c.Flush(t.Context()))
		require.Equal(t, []int{1, 19}, s.commits())
	})
}

type senderFunc func(ctx context.Context, p nudge.Payload) error

func (f senderFunc) Send(ctx context.Context, p nudge.Payload) error { return f(ctx, p) }

func TestNewCoalescerRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   nudge.CoalescerConfig
	}{
		{"Sender", nudge.CoalescerConfig{}},
		{"Interval", nudge.CoalescerConfig{Sender: &sends{}, Interval: -1}},
		{"Timeout", nudge.CoalescerConfig{Sender: &sends{}, Timeout: -1}},
	} {
		c, err := nudge.NewCoalescer(tc.cfg)
		require.ErrorIs(t, err, nudge.ErrInvalidConfig, tc.field)
		require.ErrorContains(t, err, tc.field)
		require.Nil(t, c)
	}
}
