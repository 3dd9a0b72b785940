//go:build integration

package sim_test

import (
	"bytes"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fifoworker/fifoworker/internal/sim"
)

var postgresSeeds = flag.Int("postgres-seeds", 10, "how many seeds (from 1) TestSimulationOnPostgres runs on each transport")

// Seeds 1 to -postgres-seeds, each on both transports, run on the
// PostgreSQL stores of a real server, a new database per run, with the
// invariants of the memory runs and the outbox's (each job_outbox row is
// its transition as the journal saw it). Each also runs on the memory
// stores, and must do exactly the same: one fiber runs at a time, so the
// stores see the same calls in the same order, and two stores that decide
// alike answer them alike (the runs' traces were seen byte for byte equal,
// but for the wording of the stores' errors).
func TestSimulationOnPostgres(t *testing.T) {
	transports := []sim.Transport{sim.TransportSQS, sim.TransportKafka}
	memory := map[sim.Transport][]sim.Stats{}
	for _, tr := range transports {
		for seed := uint64(1); seed <= uint64(*postgresSeeds); seed++ {
			stats, err := sim.Run(sim.Config{Seed: seed, Transport: tr})
			if err != nil {
				t.Fatalf("on the memory stores: %v", err)
			}
			memory[tr] = append(memory[tr], stats)
		}
	}
	onPostgres := runOn(t, sim.StorePostgres)
	compared := func(cfg sim.Config) (sim.Stats, error) {
		stats, err := onPostgres(cfg)
		if want := memory[cfg.Transport][cfg.Seed-1]; err == nil && stats != want {
			err = fmt.Errorf("seed %d (%s, postgres) ran otherwise than on the memory stores:\n%+v\n%+v", cfg.Seed, cfg.Transport, stats, want)
		}
		return stats, err
	}
	totals := make([]sim.Stats, len(transports))
	start := time.Now()
	seeds, failed, err := runSeeds(1, *postgresSeeds, 0, runtime.GOMAXPROCS(0), sim.BreakNone, transports, totals, compared)
	if err != nil {
		t.Fatalf("after %d seeds: %v\nreplay: %s", failed.seed, err, replay(failed.seed, "", failed.transport, sim.StorePostgres.String()))
	}
	t.Logf("%d seeds on %v on PostgreSQL in %s", seeds, transports, time.Since(start).Round(time.Millisecond))
	for i, tr := range transports {
		t.Logf("totals (%s): %+v", tr, totals[i])
		if totals[i].Jobs == 0 || totals[i].Accepts == 0 || totals[i].Takeovers == 0 || totals[i].FencedWrites == 0 {
			t.Errorf("the seeds on %s reached too little: %+v", tr, totals[i])
		}
	}
}

// A seed replays exactly on PostgreSQL: two runs of it, each on a new
// database, write the same trace, byte for byte, and end the same.
func TestSameSeedSameRunOnPostgres(t *testing.T) {
	for _, tr := range []sim.Transport{sim.TransportSQS, sim.TransportKafka} {
		for _, seed := range []uint64{3, 17} {
			var traces [2]bytes.Buffer
			var stats [2]sim.Stats
			var errs [2]error
			for i := range traces {
				stats[i], errs[i] = runOn(t, sim.StorePostgres)(sim.Config{Seed: seed, Transport: tr, Trace: &traces[i]})
			}
			if traces[0].Len() == 0 || !bytes.Equal(traces[0].Bytes(), traces[1].Bytes()) || stats[0] != stats[1] || fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
				t.Errorf("seed %d (%s) ran differently on PostgreSQL: %d and %d bytes of trace\n%+v %v\n%+v %v",
					seed, tr, traces[0].Len(), traces[1].Len(), stats[0], errs[0], stats[1], errs[1])
			}
		}
	}
}

// postgresMutants are bugs the simulation on PostgreSQL catches: one of
// the memory runs' mutants, in the decisions every store shares
// (PostgresStore renders decide's guard as its WHERE, so a fence decide
// drops goes with it), and one in the PostgreSQL job store's statement,
// which no memory run executes.
func postgresMutants(t *testing.T) []mutant {
	var shared mutant
	for _, m := range mutants {
		if m.name == "jobs-accept-ignores-the-fence" {
			shared = m
		}
	}
	if shared.name == "" {
		t.Fatal("the mutant jobs-accept-ignores-the-fence is gone from mutants")
	}
	shared.name += "-on-postgres"
	shared.store = sim.StorePostgres.String()
	return []mutant{shared, {
		// A transition's outbox row holds the job after it as its previous
		// image too. Caught by the outbox's invariant at the first
		// transition after a creation.
		name: "jobs-outbox-prev-is-the-new-image", file: "pkg/jobs/postgres.go", fn: "updateStatement",
		old: "`, img, prev, `", new: "`, img, img, `",
		store: sim.StorePostgres.String(), transport: sim.TransportSQS.String(),
		within: 1,
	}}
}

// The mutants of postgresMutants are caught on PostgreSQL.
func TestMutantsAreCaughtOnPostgres(t *testing.T) {
	runMutants(t, postgresMutants(t))
}
