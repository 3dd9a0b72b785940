package sim_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/fifoworker/fifoworker/internal/sim"
)

var (
	seedFlag    = flag.Uint64("seed", 0, "run this seed only (its steps are printed with -v)")
	seedsFlag   = flag.Int("seeds", 100, "how many seeds TestSimulation runs, from -first")
	firstFlag   = flag.Uint64("first", 1, "the first seed TestSimulation runs")
	soakTime    = flag.Duration("soak-time", 0, "run seeds from -first until this much time has passed (instead of -seeds)")
	breakFlag   = flag.String("break", "", "run with a deliberate bug: quarantine-check")
	workersFlag = flag.Int("workers", runtime.GOMAXPROCS(0), "how many seeds run at once (each run is deterministic on its own)")
)

// TestSimulation runs a fixed set of seeds (-seeds from -first), or seeds
// for a time (-soak-time), or one seed (-seed, with its trace under -v).
// A failure names the seed and the command that replays it.
func TestSimulation(t *testing.T) {
	brk := parseBreak(t, *breakFlag)
	if *seedFlag != 0 {
		cfg := sim.Config{Seed: *seedFlag, Break: brk}
		if testing.Verbose() {
			cfg.Trace = os.Stdout
		}
		stats, err := sim.Run(cfg)
		if err != nil {
			t.Fatalf("%v\nreplay: %s", err, replay(*seedFlag, *breakFlag))
		}
		t.Logf("seed %d: %+v", *seedFlag, stats)
		return
	}
	var total sim.Stats
	start := time.Now()
	seeds, failed, err := runSeeds(*firstFlag, *seedsFlag, *soakTime, *workersFlag, brk, &total)
	if err != nil {
		t.Fatalf("after %d seeds: %v\nreplay: %s", failed-*firstFlag+1, err, replay(failed, *breakFlag))
	}
	elapsed := time.Since(start)
	t.Logf("%d seeds (%d to %d) in %s: %.1f seeds/s", seeds, *firstFlag, *firstFlag+uint64(seeds)-1, elapsed.Round(time.Millisecond),
		float64(seeds)/elapsed.Seconds())
	t.Logf("totals: %+v", total)
	fmt.Printf("sim: %d seeds in %s, %.1f seeds/s\n", seeds, elapsed.Round(time.Millisecond), float64(seeds)/elapsed.Seconds())
	if seeds >= 100 && brk == sim.BreakNone {
		// The seeds must reach every path the invariants are about.
		for name, n := range map[string]int{
			"jobs completed": total.Completed, "jobs failed": total.Failed, "jobs cancelled": total.Cancelled,
			"takeovers": total.Takeovers, "fenced writes": total.FencedWrites, "nudges": total.Nudges,
			"crashes": total.Crashes, "lost answers": total.LostAnswers, "delayed writes": total.Delayed,
			"dropped answers": total.DroppedAnswers, "timeouts": total.TimedOut, "stalls": total.Stalls,
			"records published again": total.Redelivered, "duplicates dropped": total.Deduplicated, "records lost": total.LostRecords,
			"parked": total.Parked, "dropped": total.Dropped, "deadline skips": total.SkippedDeadline,
			"redrives": total.Redrives, "released holds": total.Released, "poison messages": total.Poisons,
			"recoveries": total.Recoveries, "repairs": total.Repairs, "orphans deleted": total.OrphansDeleted,
			"intent conflicts": total.IntakeConflicts, "intent retries": total.IntakeRetries,
			"dead-lettered": total.DeadLettered, "dead-lettered redriven copies": total.DeadLetteredCopies,
			"hostile messages discarded": total.Discarded, "outages": total.Outages,
			"claims refused on a live lease": total.LeaseHeld,
			"forged events":                  total.ForgedEvents, "views put back from a forged version": total.ViewsPutBack,
		} {
			if n == 0 {
				t.Errorf("no seed had %s", name)
			}
		}
	}
}

// runSeeds runs seeds from first, n of them or for d, on workers
// goroutines, and stops at the first failure. Seeds are handed out in
// order and every seed handed out is run to its end, so the failure
// reported is the lowest failing seed, and every seed before it passed.
func runSeeds(first uint64, n int, d time.Duration, workers int, brk sim.Break, total *sim.Stats) (int, uint64, error) {
	var (
		mu     sync.Mutex
		next   = first
		ran    int
		failed uint64
		failE  error
		wg     sync.WaitGroup
	)
	start := time.Now()
	take := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failE != nil || (d > 0 && time.Since(start) >= d) || (d <= 0 && next >= first+uint64(n)) {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range max(workers, 1) {
		wg.Go(func() {
			for {
				seed, ok := take()
				if !ok {
					return
				}
				stats, err := sim.Run(sim.Config{Seed: seed, Break: brk})
				mu.Lock()
				ran++
				total.Add(stats)
				if err != nil && (failE == nil || seed < failed) {
					failed, failE = seed, err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ran, failed, failE
}

func replay(seed uint64, brk string) string {
	cmd := fmt.Sprintf("go test ./internal/sim -run 'TestSimulation$' -seed %d -v", seed)
	if brk != "" {
		cmd += " -break " + brk
	}
	return cmd
}

func parseBreak(t *testing.T, name string) sim.Break {
	t.Helper()
	for _, b := range []sim.Break{sim.BreakNone, sim.BreakQuarantineCheck} {
		if name == b.String() || (name == "" && b == sim.BreakNone) {
			return b
		}
	}
	t.Fatalf("unknown -break %q", name)
	return sim.BreakNone
}

// A seed replays exactly: two runs of it do the same.
func TestSameSeedSameRun(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{3, 17, 101} {
		a, errA := sim.Run(sim.Config{Seed: seed})
		b, errB := sim.Run(sim.Config{Seed: seed})
		if a != b || fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Errorf("seed %d ran differently:\n%+v %v\n%+v %v", seed, a, errA, b, errB)
		}
	}
}
