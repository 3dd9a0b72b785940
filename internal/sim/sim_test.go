package sim_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fifoworker/fifoworker/internal/sim"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

var (
	seedFlag      = flag.Uint64("seed", 0, "run this seed only (its steps are printed with -v)")
	seedsFlag     = flag.Int("seeds", 100, "how many seeds TestSimulation runs, from -first")
	firstFlag     = flag.Uint64("first", 1, "the first seed TestSimulation runs")
	soakTime      = flag.Duration("soak-time", 0, "run seeds from -first until this much time has passed (instead of -seeds)")
	breakFlag     = flag.String("break", "", "run with a deliberate bug: quarantine-check (SQS), commit-fence (Kafka)")
	transportFlag = flag.String("transport", "", "run each seed on this transport only: sqs or kafka (default: both, or sqs with -break)")
	workersFlag   = flag.Int("workers", runtime.GOMAXPROCS(0), "how many seeds run at once (each run is deterministic on its own)")
	outboxFlag    = flag.Bool("outbox-relay", false, "with -store postgres, the relay drains job_outbox (pgsource) instead of the journal's stream")
	storeFlag     = flag.String("store", "memory", "the stores each seed runs on: memory, or postgres (a new database per run on the server "+pgtest.DSNVar+" names)")
)

// TestSimulation runs a fixed set of seeds (-seeds from -first), or seeds
// for a time (-soak-time), or one seed (-seed, with its trace under -v),
// each on every transport (-transport: one), on the memory stores or
// (-store postgres) on PostgreSQL. A failure names the seed, the transport,
// the store and the command that replays it.
func TestSimulation(t *testing.T) {
	brk := parseBreak(t, *breakFlag)
	transports := parseTransports(t, *transportFlag, brk)
	run := runOn(t, parseStore(t, *storeFlag))
	if *seedFlag != 0 {
		for _, tr := range transports {
			cfg := sim.Config{Seed: *seedFlag, Break: brk, Transport: tr}
			if testing.Verbose() {
				cfg.Trace = os.Stdout
			}
			stats, err := run(cfg)
			if err != nil {
				t.Fatalf("%v\nreplay: %s", err, replay(*seedFlag, *breakFlag, tr, *storeFlag))
			}
			t.Logf("seed %d (%s): %+v", *seedFlag, tr, stats)
		}
		return
	}
	totals := make([]sim.Stats, len(transports))
	start := time.Now()
	seeds, failed, err := runSeeds(*firstFlag, *seedsFlag, *soakTime, *workersFlag, brk, transports, totals, run)
	if err != nil {
		t.Fatalf("after %d seeds: %v\nreplay: %s", failed.seed-*firstFlag+1, err, replay(failed.seed, *breakFlag, failed.transport, *storeFlag))
	}
	elapsed := time.Since(start)
	t.Logf("%d seeds (%d to %d) on %v (%s) in %s: %.1f seeds/s", seeds, *firstFlag, *firstFlag+uint64(seeds)-1, transports, *storeFlag, elapsed.Round(time.Millisecond),
		float64(seeds)/elapsed.Seconds())
	fmt.Printf("sim: %d seeds on %v (%s) in %s, %.1f seeds/s\n", seeds, transports, *storeFlag, elapsed.Round(time.Millisecond), float64(seeds)/elapsed.Seconds())
	for i, tr := range transports {
		t.Logf("totals (%s): %+v", tr, totals[i])
		if seeds >= 100 && brk == sim.BreakNone {
			for _, name := range unreached(tr, *outboxFlag, totals[i]) {
				t.Errorf("no seed had %s (%s)", name, tr)
			}
		}
	}
}

// unreached names the paths the invariants are about that no seed reached
// on the transport (with the outbox relay, whose rows are never lost but
// published again): a set of seeds must reach every one.
func unreached(tr sim.Transport, outboxRelay bool, total sim.Stats) []string {
	paths := map[string]int{
		"jobs completed": total.Completed, "jobs failed": total.Failed, "jobs cancelled": total.Cancelled,
		"takeovers": total.Takeovers, "fenced writes": total.FencedWrites, "nudges": total.Nudges,
		"crashes": total.Crashes, "lost answers": total.LostAnswers, "delayed writes": total.Delayed,
		"dropped answers": total.DroppedAnswers, "timeouts": total.TimedOut, "stalls": total.Stalls,
		"records published again": total.Redelivered, "records lost": total.LostRecords,
		"deadline skips": total.SkippedDeadline, "redrives": total.Redrives, "poison messages": total.Poisons,
		"recoveries": total.Recoveries, "repairs": total.Repairs, "orphans deleted": total.OrphansDeleted,
		"intent conflicts": total.IntakeConflicts, "intent retries": total.IntakeRetries,
		"hostile messages discarded": total.Discarded, "outages": total.Outages,
		"claims refused on a live lease": total.LeaseHeld,
		"forged events":                  total.ForgedEvents, "views put back from a forged version": total.ViewsPutBack,
	}
	if outboxRelay {
		delete(paths, "records lost")
		paths["publishes whose answer was lost"] = total.LostPublishes
	}
	switch tr {
	case sim.TransportSQS:
		maps.Copy(paths, map[string]int{
			"duplicates dropped": total.Deduplicated, "parked": total.Parked, "dropped": total.Dropped,
			"released holds": total.Released, "dead-lettered": total.DeadLettered, "dead-lettered redriven copies": total.DeadLetteredCopies,
		})
	case sim.TransportKafka:
		maps.Copy(paths, map[string]int{
			"rebalances": total.Rebalances, "rebalances mid-batch": total.MidBatchRebalances, "commits refused after a rebalance": total.FencedCommits,
			"records delivered again": total.RecordsRedelivered, "retries": total.KafkaRetries, "batches given up": total.GaveUp,
			"records sent to the on-failure destination": total.OnFailure, "records compacted away": total.Compacted,
			"records of aborted transactions": total.Aborted,
			"parked":                          total.Parked, "dropped": total.Dropped, "released holds": total.Released,
			"records without a key refused by a compacted topic": total.RefusedNullKeys,
			"batches bisected": total.Bisections, "records past MaximumRecordAge": total.Expired,
			"records too large for an event": total.TooLargeForEvent, "batches closed at the event's size limit": total.SizeClosed,
			"batches sent at the end of their batching window": total.WindowEnded, "header bombs": total.HeaderBombs,
			"records refused over max.message.bytes": total.RefusedTooLarge, "partition count changes": total.PartitionChanges,
			"records parked for another partition count": total.CountHeld, "records refused in another partition than their key's hold": total.MovedRefused,
		})
	}
	var out []string
	for name, n := range paths {
		if n == 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// failure is the run runSeeds reports: the lowest failing seed, on the
// first of the transports it failed on.
type failure struct {
	seed      uint64
	transport sim.Transport
}

// runSeeds runs seeds from first, n of them or for d, each on every
// transport, on workers goroutines, adding each transport's stats to its
// totals, and stops at the first failure. Seeds are handed out in order
// and every seed handed out is run to its end, so the failure reported is
// the lowest failing seed, and every seed before it passed.
func runSeeds(first uint64, n int, d time.Duration, workers int, brk sim.Break, transports []sim.Transport, totals []sim.Stats,
	run func(sim.Config) (sim.Stats, error)) (int, failure, error) {
	var (
		mu     sync.Mutex
		next   = first
		ran    int
		failed failure
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
				for i, tr := range transports {
					stats, err := run(sim.Config{Seed: seed, Break: brk, Transport: tr})
					mu.Lock()
					totals[i].Add(stats)
					if err != nil && (failE == nil || seed < failed.seed) {
						failed, failE = failure{seed, tr}, err
					}
					mu.Unlock()
					if err != nil {
						break
					}
				}
				mu.Lock()
				ran++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ran, failed, failE
}

func replay(seed uint64, brk string, tr sim.Transport, store string) string {
	cmd := fmt.Sprintf("go test ./internal/sim -run 'TestSimulation$' -seed %d -transport %s -v", seed, tr)
	if brk != "" {
		cmd += " -break " + brk
	}
	if store != sim.StoreMemory.String() {
		cmd = pgtest.DSNVar + "=... " + cmd + " -store " + store
	}
	return cmd
}

// parseStore reads -store.
func parseStore(t *testing.T, name string) sim.Store {
	t.Helper()
	for _, s := range []sim.Store{sim.StoreMemory, sim.StorePostgres} {
		if name == s.String() {
			return s
		}
	}
	t.Fatalf("unknown -store %q: memory or postgres", name)
	return sim.StoreMemory
}

// runOn returns how a run goes on store. On PostgreSQL each run has a new
// database, made and dropped by a subtest of t (named after the run), so
// that runSeeds' workers may each make theirs: a subtest may be started
// from any goroutine. The run's outcome is returned, not failed in the
// subtest, so that the caller reports the lowest failing seed.
func runOn(t *testing.T, store sim.Store) func(sim.Config) (sim.Stats, error) {
	if store == sim.StoreMemory {
		if *outboxFlag {
			t.Fatal("-outbox-relay needs -store postgres: only PostgreSQL has an outbox table")
		}
		return sim.Run
	}
	return func(cfg sim.Config) (sim.Stats, error) {
		var (
			stats sim.Stats
			err   = errors.New("the run's database could not be made")
		)
		t.Run(fmt.Sprintf("seed %d %s", cfg.Seed, cfg.Transport), func(t *testing.T) {
			cfg.Store, cfg.DB = sim.StorePostgres, pgtest.DB(t)
			cfg.OutboxRelay = cfg.OutboxRelay || *outboxFlag
			cfg.DB.SetMaxOpenConns(4) // one fiber runs at a time: one connection at a time is used
			stats, err = sim.Run(cfg)
		})
		return stats, err
	}
}

func parseBreak(t *testing.T, name string) sim.Break {
	t.Helper()
	for _, b := range []sim.Break{sim.BreakNone, sim.BreakQuarantineCheck, sim.BreakCommitFence} {
		if name == b.String() || (name == "" && b == sim.BreakNone) {
			return b
		}
	}
	t.Fatalf("unknown -break %q", name)
	return sim.BreakNone
}

// parseTransports reads -transport: one transport, or both when it is
// empty (with a deliberate bug, the transport it breaks).
func parseTransports(t *testing.T, name string, brk sim.Break) []sim.Transport {
	t.Helper()
	all := []sim.Transport{sim.TransportSQS, sim.TransportKafka}
	switch {
	case name == "" && brk != sim.BreakNone:
		return []sim.Transport{brk.Transport()}
	case name == "":
		return all
	}
	for _, tr := range all {
		if name == tr.String() {
			return []sim.Transport{tr}
		}
	}
	t.Fatalf("unknown -transport %q: sqs or kafka", name)
	return nil
}

// A seed replays exactly: two runs of it do the same.
func TestSameSeedSameRun(t *testing.T) {
	t.Parallel()
	for _, tr := range []sim.Transport{sim.TransportSQS, sim.TransportKafka} {
		for _, seed := range []uint64{3, 17, 101} {
			a, errA := sim.Run(sim.Config{Seed: seed, Transport: tr})
			b, errB := sim.Run(sim.Config{Seed: seed, Transport: tr})
			if a != b || fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Errorf("seed %d (%s) ran differently:\n%+v %v\n%+v %v", seed, tr, a, errA, b, errB)
			}
		}
	}
}
