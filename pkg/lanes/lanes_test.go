package lanes_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   lanes.Config
		field string
	}{
		{"negative concurrency", lanes.Config{Concurrency: -1}, "Concurrency"},
		{"negative margin", lanes.Config{DeadlineMargin: -1}, "DeadlineMargin"},
		{"negative reserve", lanes.Config{ResponseReserve: -1}, "ResponseReserve"},
		{"reserve over the margin", lanes.Config{DeadlineMargin: time.Second, ResponseReserve: time.Second + 1}, "ResponseReserve"},
		{"reserve over the default margin", lanes.Config{ResponseReserve: lanes.DefaultDeadlineMargin + 1}, "ResponseReserve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := lanes.New(tc.cfg)
			require.ErrorIs(t, err, lanes.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.field)
			assert.Nil(t, e)
		})
	}
	// At exactly its bound, the reserve is valid.
	_, err := lanes.New(lanes.Config{DeadlineMargin: time.Second, ResponseReserve: time.Second})
	require.NoError(t, err)
}

func newEngine(t *testing.T, cfg lanes.Config) *lanes.Engine {
	t.Helper()
	e, err := lanes.New(cfg)
	require.NoError(t, err)
	return e
}

func lanesOf(p *lanes.Plan) [][]int {
	var out [][]int
	for _, h := range p.Heads() {
		var lane []int
		for i := h; i >= 0; i = p.Next(i) {
			lane = append(lane, i)
		}
		out = append(out, lane)
	}
	return out
}

func TestPlanPutsEachKeyInOneLaneInOrder(t *testing.T) {
	keys := []string{"a", "b", "", "a", "", "b", "a"}
	key := func(i int) (string, bool) { return keys[i], keys[i] != "" }
	p := newEngine(t, lanes.Config{}).Plan(len(keys), key)
	assert.Equal(t, [][]int{{0, 3, 6}, {1, 5}, {2}, {4}}, lanesOf(p))
	assert.Equal(t, 4, p.Lanes())

	// Fewer slots than lanes: the longest lanes first, stable otherwise.
	p = newEngine(t, lanes.Config{Concurrency: 3}).Plan(len(keys), key)
	assert.Equal(t, [][]int{{0, 3, 6}, {1, 5}, {2}, {4}}, lanesOf(p))
	keys = []string{"x", "b", "a", "b", "a", "a"}
	p = newEngine(t, lanes.Config{Concurrency: 2}).Plan(len(keys), key)
	assert.Equal(t, [][]int{{2, 4, 5}, {1, 3}, {0}}, lanesOf(p))
	// At exactly the number of lanes, the order is the items'.
	p = newEngine(t, lanes.Config{Concurrency: 3}).Plan(len(keys), key)
	assert.Equal(t, [][]int{{0}, {1, 3}, {2, 4, 5}}, lanesOf(p))
	// Concurrency 0 runs every lane at once: the order is the items' too.
	p = newEngine(t, lanes.Config{}).Plan(len(keys), key)
	assert.Equal(t, [][]int{{0}, {1, 3}, {2, 4, 5}}, lanesOf(p))
}

// maxRunning runs lanes lanes of one item each, each waiting a second of
// the bubble's clock, and returns how many ran at once at most.
func maxRunning(t *testing.T, concurrency, lanesN int) int {
	var peak int64
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, lanes.Config{Concurrency: concurrency})
		p := e.Plan(lanesN, func(int) (string, bool) { return "", false })
		run, cancel := e.Start(t.Context())
		defer cancel()
		var now atomic.Int64
		run.Lanes(p, lanes.RunnerFunc(func(int) {
			n := now.Add(1)
			for {
				old := atomic.LoadInt64(&peak)
				if n <= old || atomic.CompareAndSwapInt64(&peak, old, n) {
					break
				}
			}
			time.Sleep(time.Second)
			now.Add(-1)
		}))
	})
	return int(peak)
}

func TestConcurrencyBoundsTheLanesAtExactlyItsValue(t *testing.T) {
	assert.Equal(t, 3, maxRunning(t, 3, 7))
	assert.Equal(t, 3, maxRunning(t, 3, 3))
	assert.Equal(t, 1, maxRunning(t, 1, 3))
	assert.Equal(t, 7, maxRunning(t, 0, 7))
}

func TestTimeToStartAtExactlyTheMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const margin, reserve = 2 * time.Second, 500 * time.Millisecond
		e := newEngine(t, lanes.Config{DeadlineMargin: margin, ResponseReserve: reserve})
		deadline := time.Now().Add(margin + time.Second)
		ctx, cancelDeadline := context.WithDeadline(t.Context(), deadline)
		defer cancelDeadline()
		run, cancel := e.Start(ctx)
		defer cancel()

		got, ok := run.Context().Deadline()
		require.True(t, ok)
		assert.Equal(t, deadline.Add(-reserve), got, "the items' context expires the reserve before the deadline")

		assert.True(t, run.TimeToStart())
		time.Sleep(time.Second) // exactly the margin left
		assert.True(t, run.TimeToStart(), "exactly the margin left")
		time.Sleep(time.Nanosecond)
		assert.False(t, run.TimeToStart(), "a nanosecond less than the margin")
	})
}

func TestTimeToStartReadsConfigNow(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	now := deadline.Add(-time.Second)
	e := newEngine(t, lanes.Config{Now: func() time.Time { return now }})
	ctx, cancelDeadline := context.WithDeadline(context.Background(), deadline)
	defer cancelDeadline()
	run, cancel := e.Start(ctx)
	defer cancel()
	assert.True(t, run.TimeToStart(), "exactly the default margin left")
	now = now.Add(time.Nanosecond)
	assert.False(t, run.TimeToStart())
	now = now.Add(-time.Minute) // the wall clock stepped back
	assert.True(t, run.TimeToStart())
}

func TestTimeToStartIsFalseOnceTheContextIsDone(t *testing.T) {
	e := newEngine(t, lanes.Config{})
	ctx, cancelParent := context.WithCancel(context.Background())
	run, cancel := e.Start(ctx)
	defer cancel()
	assert.True(t, run.TimeToStart(), "no deadline")
	cancelParent()
	assert.False(t, run.TimeToStart())
}

func TestStopIsSeenByEveryLane(t *testing.T) {
	e := newEngine(t, lanes.Config{Concurrency: 1})
	p := e.Plan(3, func(int) (string, bool) { return "", false })
	run, cancel := e.Start(context.Background())
	defer cancel()
	var ran []int
	run.Lanes(p, lanes.RunnerFunc(func(head int) {
		if run.Stopped() {
			return
		}
		ran = append(ran, head)
		run.Stop()
	}))
	assert.Equal(t, []int{0}, ran)
}

func TestContainReturnsAPanicWithItsStack(t *testing.T) {
	assert.Nil(t, lanes.Contain(lanes.PanicInLogger, func() {}))
	p := lanes.Contain(lanes.PanicInLogger, func() { panic("boom") })
	require.NotNil(t, p)
	assert.Equal(t, "boom", p.Value)
	assert.EqualError(t, p, "logger panicked: boom")
	assert.Contains(t, string(p.Stack), "TestContainReturnsAPanicWithItsStack")
}

func TestGuardAbsorbsGoexitAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		assert.Nil(t, lanes.Guard(lanes.PanicInMetrics, func() {}))
		p := lanes.Guard(lanes.PanicInMetrics, runtime.Goexit)
		require.NotNil(t, p)
		assert.EqualError(t, p, "metrics hook panicked: called runtime.Goexit")
		assert.Nil(t, p.Stack, "a Goexit has no stack")
		p = lanes.Guard(lanes.PanicInMetrics, func() { panic(errors.New("boom")) })
		require.NotNil(t, p)
		assert.EqualError(t, p.Value.(error), "boom")
		assert.NotNil(t, p.Stack)
	})
}

func TestALaneThatCallsGoexitIsReplacedAndNoGoroutineOutlivesTheRun(t *testing.T) {
	for _, concurrency := range []int{0, 1, 2} {
		synctest.Test(t, func(t *testing.T) {
			var log strings.Builder
			e := newEngine(t, lanes.Config{Concurrency: concurrency, Logger: newLogger(&log)})
			keys := []string{"a", "b", "a", "c", "b"}
			p := e.Plan(len(keys), func(i int) (string, bool) { return keys[i], true })
			run, cancel := e.Start(t.Context())
			defer cancel()
			var mu sync.Mutex
			var ran []int
			run.Lanes(p, lanes.RunnerFunc(func(head int) {
				for i := head; i >= 0; i = p.Next(i) {
					mu.Lock()
					ran = append(ran, i)
					mu.Unlock()
					if i == 1 {
						runtime.Goexit() // the rest of lane b is not resumed
					}
					time.Sleep(time.Millisecond)
				}
			}))
			assert.ElementsMatch(t, []int{0, 2, 1, 3}, ran, "concurrency %d", concurrency)
			assert.Contains(t, log.String(), "runtime.Goexit")
			// synctest.Test fails if a goroutine of the bubble is left.
		})
	}
}
