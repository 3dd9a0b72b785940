package projectiontest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// ledger records what the store said it did: which versions each Apply
// counted and which ranges each Recover skipped, with what they added.
type ledger struct {
	mu         sync.Mutex
	applied    map[string][]int64    // job id → versions counted by their event
	skipped    map[string][][2]int64 // job id → (from, to] counted by a recovery
	processed  int64
	completed  int64
	recoveries int
}

func (l *ledger) apply(e *outbox.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applied[e.JobID] = append(l.applied[e.JobID], e.Version)
	l.processed += e.Delta
	if e.Status == jobs.StatusCompleted {
		l.completed++
	}
}

func (l *ledger) recover(jobID string, r *projection.Recovery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recoveries++
	if !r.Moved() {
		return
	}
	l.skipped[jobID] = append(l.skipped[jobID], [2]int64{r.From.Version, r.To.Version})
	l.processed += r.Processed
	l.completed += r.Completed
}

// counted returns the versions of the job counted, each as often as it was.
func (l *ledger) counted(jobID string) []int64 {
	vs := slices.Clone(l.applied[jobID])
	for _, r := range l.skipped[jobID] {
		for v := r[0] + 1; v <= r[1]; v++ {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	return vs
}

// testConcurrentDeliveries has several goroutines deliver every event of
// three jobs twice, each in its own random order, and retry those that find
// a gap. Half of them also recover: now and then to a random snapshot of a
// job's history (a job item read at that moment), and, like the projector,
// to the job's last snapshot when an event found a gap three times. They
// alone deliver a fourth job whose version 3 never arrives, which only a
// recovery can get past. No version may be counted twice (by its event and
// by a recovery that skipped it, or by two deliveries), only events that
// add are applied, and each job's final version is counted; the totals
// must equal the sum of what the store said it counted, and the jobs'
// final progress; every view must end at its job's last version.
func testConcurrentDeliveries(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	histories := [][]outbox.Event{
		Lifecycle(b.id("job-42"), b.tenant),
		Lifecycle(b.id("job-43"), b.tenant),
		Failing(b.id("job-44"), b.tenant),
		Lifecycle(b.id("job-45"), b.tenant),
	}
	var delivered, holed []outbox.Event
	for _, h := range histories[:3] {
		delivered = append(delivered, h...)
	}
	for _, e := range histories[3] {
		if e.Version != 3 {
			holed = append(holed, e)
		}
	}
	l := &ledger{applied: map[string][]int64{}, skipped: map[string][][2]int64{}}

	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := make(chan struct{})
	for w := range workers {
		d := &deliverer{b: b, l: l, rng: rand.New(rand.NewPCG(seed, uint64(w))), histories: histories, recovers: w%2 == 1}
		pending := append(slices.Clone(delivered), delivered...) // every event, twice
		if d.recovers {
			pending = append(pending, holed...)
		}
		d.rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
		wg.Go(func() {
			<-start
			if err := d.run(pending); err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("recoveries: %d; ranges they counted: %v", l.recoveries, l.skipped)

	var processed, completed int64
	for _, h := range histories {
		last := &h[len(h)-1]
		// At most once: no version counted twice, by two events or by
		// an event and a recovery that skipped it. Not every version need
		// be counted: an event that adds nothing is skipped, and events
		// that net to nothing may be passed by a later one that starts from
		// the cursor's state; exactness is the totals' check below.
		counted := l.counted(last.JobID)
		require.Equal(t, slices.Compact(slices.Clone(counted)), counted, "versions of %s counted (by events %v, by recoveries %v)",
			last.JobID, l.applied[last.JobID], l.skipped[last.JobID])
		require.Contains(t, counted, last.Version, "the final version of %s is counted", last.JobID)
		for _, v := range l.applied[last.JobID] {
			require.True(t, Adds(&h[v-1]), "%s: version %d adds nothing yet was applied", last.JobID, v)
		}
		b.requireCursor(t, last.JobID, last)
		b.requireView(t, last)
		processed += last.Progress
		if last.Status == jobs.StatusCompleted {
			completed++
		}
	}
	require.Equal(t, processed, l.processed, "what the store reported counting is the jobs' final progress")
	require.Equal(t, completed, l.completed)
	b.requireTotals(t, b.tenant, processed, completed)
}

// recoverAfter is how many gaps an event meets before a recovering
// deliverer recovers its job, like the projector's default threshold.
const recoverAfter = 3

// deliverer is one goroutine of the concurrent test.
type deliverer struct {
	b         *bundle
	l         *ledger
	rng       *rand.Rand
	histories [][]outbox.Event
	recovers  bool
}

// run applies pending until none is left, retrying the events that find a
// gap in later rounds.
func (d *deliverer) run(pending []outbox.Event) error {
	gaps := map[string]int{}
	for round := 0; len(pending) > 0; round++ {
		if round > 100 {
			return fmt.Errorf("no progress after %d rounds; %d events left", round, len(pending))
		}
		var later []outbox.Event
		for i := range pending {
			e := &pending[i]
			if d.recovers && d.rng.IntN(6) == 0 {
				h := d.histories[d.rng.IntN(len(d.histories))]
				if err := d.recover(&h[d.rng.IntN(len(h))]); err != nil {
					return err
				}
			}
			res, err := d.b.store.Apply(d.b.ctx, view(e), e.Delta)
			if errors.Is(err, projection.ErrGap) {
				if gaps[e.EventID]++; d.recovers && gaps[e.EventID] >= recoverAfter {
					if err := d.recover(d.last(e.JobID)); err != nil {
						return err
					}
				}
				later = append(later, *e)
				continue
			}
			if err != nil {
				return fmt.Errorf("apply %s: %w", e.EventID, err)
			}
			if res.Outcome == projection.Applied {
				d.l.apply(e)
			}
		}
		pending = later
	}
	return nil
}

func (d *deliverer) recover(snap *outbox.Event) error {
	r, err := d.b.store.Recover(d.b.ctx, view(snap))
	if err != nil {
		return fmt.Errorf("recover to %s: %w", snap.EventID, err)
	}
	d.l.recover(snap.JobID, &r)
	return nil
}

// last is the job's last snapshot: what its item holds now.
func (d *deliverer) last(jobID string) *outbox.Event {
	for _, h := range d.histories {
		if h[0].JobID == jobID {
			return &h[len(h)-1]
		}
	}
	panic("projectiontest: unknown job " + jobID)
}
