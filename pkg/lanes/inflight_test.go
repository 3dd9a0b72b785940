package lanes_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/lanes"
)

// runLanes runs n lanes of one item each under concurrency, each lane
// calling the func newLane returns, in a synctest bubble: a run that cannot
// finish (lanes waiting for one another with too few in flight) fails as a
// deadlock. newLane runs in the bubble, so that its channels are the
// bubble's.
func runLanes(t *testing.T, concurrency, n int, newLane func() func()) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(t, lanes.Config{Concurrency: concurrency})
		p := e.Plan(n, func(int) (string, bool) { return "", false })
		run, cancel := e.Start(t.Context())
		defer cancel()
		lane := newLane()
		run.Lanes(p, lanes.RunnerFunc(func(int) { lane() }))
	})
}

// Concurrency N is N lanes in flight: the first N lanes each wait until N
// lanes have started, which only N goroutines at once can do (the
// goroutines start one at a time, each as the one before it takes a lane).
func TestConcurrencyNRunsNLanesAtOnce(t *testing.T) {
	for _, tc := range []struct{ concurrency, lanes int }{
		{1, 3}, {2, 2}, {2, 5}, {3, 7}, {4, 9}, {16, 17}, {17, 17}, {0, 6}, {0, 40},
	} {
		t.Run(fmt.Sprintf("%d of %d", tc.concurrency, tc.lanes), func(t *testing.T) {
			n := tc.concurrency
			if n == 0 {
				n = tc.lanes
			}
			var arrived, done atomic.Int64
			runLanes(t, tc.concurrency, tc.lanes, func() func() {
				all := make(chan struct{})
				return func() {
					switch k := arrived.Add(1); {
					case k == int64(n):
						close(all)
					case k < int64(n):
						<-all
					}
					done.Add(1)
				}
			})
			require.Equal(t, int64(tc.lanes), done.Load())
		})
	}
}

// Lanes that block, ignoring their context, keep only their own slots: the
// first N-1 lanes block until every other lane has run, in the one slot
// left.
func TestBlockedLanesKeepOnlyTheirSlots(t *testing.T) {
	for _, tc := range []struct{ concurrency, lanes int }{{2, 5}, {3, 9}, {4, 4}, {0, 8}} {
		t.Run(fmt.Sprintf("%d of %d", tc.concurrency, tc.lanes), func(t *testing.T) {
			blocked := tc.concurrency - 1
			if tc.concurrency == 0 {
				blocked = tc.lanes - 1
			}
			others := int64(tc.lanes - blocked)
			var arrived, ran atomic.Int64
			runLanes(t, tc.concurrency, tc.lanes, func() func() {
				release := make(chan struct{})
				return func() {
					if arrived.Add(1) <= int64(blocked) {
						<-release
						return
					}
					if ran.Add(1) == others {
						close(release)
					}
				}
			})
			require.Equal(t, others, ran.Load())
		})
	}
}

// Plan links up to 16 items by comparing keys and more with a map: both
// give each key one lane, in index order, at 16 and at 17 items with
// every key distinct, and for any mix of keys and keyless items, in fresh
// room or in the room of another plan.
func TestPlanLinksAroundSixteenItems(t *testing.T) {
	e := newEngine(t, lanes.Config{})
	for _, n := range []int{15, 16, 17} {
		keys := make([]string, n)
		want := make([][]int, n)
		for i := range keys {
			keys[i], want[i] = fmt.Sprintf("k%d", i), []int{i}
		}
		require.Equal(t, want, lanesOf(e.Plan(n, func(i int) (string, bool) { return keys[i], true })), "%d distinct keys", n)
	}
	r := rand.New(rand.NewPCG(17, 16))
	var old *lanes.Plan
	for range 5000 {
		n := r.IntN(40)
		keys := make([]string, n)
		for i := range keys {
			if r.IntN(5) > 0 {
				keys[i] = fmt.Sprintf("k%d", r.IntN(1+r.IntN(20)))
			}
		}
		key := func(i int) (string, bool) { return keys[i], keys[i] != "" }
		want := wantLanes(keys)
		require.Equal(t, want, lanesOf(e.Plan(n, key)), keys)
		old = e.Replan(old, n, key)
		require.Equal(t, want, lanesOf(old), "in the room of another plan: %q", keys)
	}
}

// wantLanes is Plan's lanes of keys, by definition: one lane per key in
// order of first item, an item without a key alone.
func wantLanes(keys []string) [][]int {
	var out [][]int
	lane := map[string]int{}
	for i, k := range keys {
		if j, ok := lane[k]; ok && k != "" {
			out[j] = append(out[j], i)
			continue
		}
		lane[k] = len(out)
		out = append(out, []int{i})
	}
	return out
}
