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
	for tr, total := range runPostgresSeeds(t, transports, compared, "") {
		if total.Jobs == 0 || total.Accepts == 0 || total.Takeovers == 0 || total.FencedWrites == 0 {
			t.Errorf("the seeds on %s reached too little: %+v", tr, total)
		}
	}
}

// runPostgresSeeds runs seeds 1 to -postgres-seeds on each transport
// through run, fails the test at the lowest failing seed with the command
// that replays it (flags added), and returns each transport's totals.
func runPostgresSeeds(t *testing.T, transports []sim.Transport, run func(sim.Config) (sim.Stats, error), flags string) map[sim.Transport]sim.Stats {
	totals := make([]sim.Stats, len(transports))
	start := time.Now()
	seeds, failed, err := runSeeds(1, *postgresSeeds, 0, runtime.GOMAXPROCS(0), sim.BreakNone, transports, totals, run)
	if err != nil {
		t.Fatalf("after %d seeds: %v\nreplay: %s%s", failed.seed, err, replay(failed.seed, "", failed.transport, sim.StorePostgres.String()), flags)
	}
	t.Logf("%d seeds on %v on PostgreSQL%s in %s", seeds, transports, flags, time.Since(start).Round(time.Millisecond))
	out := map[sim.Transport]sim.Stats{}
	for i, tr := range transports {
		t.Logf("totals (%s): %+v", tr, totals[i])
		out[tr] = totals[i]
	}
	return out
}

// Seeds 1 to -postgres-seeds, each on both transports, on PostgreSQL with
// the outbox relay: the real pgsource.Relay drains job_outbox into the
// simulated queues or topics, under the relay's faults (sends refused,
// answers lost, messages sent twice, a Kafka round's transaction aborted).
// The invariants are the memory runs' and the outbox's: at the end each
// job's rows left are the end of its stream, and each row the relay took
// was published.
func TestSimulationOnPostgresThroughTheOutboxRelay(t *testing.T) {
	transports := []sim.Transport{sim.TransportSQS, sim.TransportKafka}
	onPostgres := runOn(t, sim.StorePostgres)
	viaOutbox := func(cfg sim.Config) (sim.Stats, error) {
		cfg.OutboxRelay = true
		return onPostgres(cfg)
	}
	for tr, total := range runPostgresSeeds(t, transports, viaOutbox, " -outbox-relay") {
		if total.Jobs == 0 || total.Redelivered == 0 || total.Refused == 0 || total.LostPublishes == 0 {
			t.Errorf("the seeds on %s reached too little: %+v", tr, total)
		}
	}
}

// A seed replays exactly on PostgreSQL, with either relay: two runs of it,
// each on a new database, write the same trace, byte for byte, and end the
// same.
func TestSameSeedSameRunOnPostgres(t *testing.T) {
	for _, tr := range []sim.Transport{sim.TransportSQS, sim.TransportKafka} {
		for _, c := range []struct {
			seed   uint64
			outbox bool
		}{{3, false}, {17, false}, {3, true}} {
			seed := c.seed
			var traces [2]bytes.Buffer
			var stats [2]sim.Stats
			var errs [2]error
			for i := range traces {
				stats[i], errs[i] = runOn(t, sim.StorePostgres)(sim.Config{Seed: seed, Transport: tr, OutboxRelay: c.outbox, Trace: &traces[i]})
			}
			if traces[0].Len() == 0 || !bytes.Equal(traces[0].Bytes(), traces[1].Bytes()) || stats[0] != stats[1] || fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
				t.Errorf("seed %d (%s, outbox relay %v) ran differently on PostgreSQL: %d and %d bytes of trace\n%+v %v\n%+v %v",
					seed, tr, c.outbox, traces[0].Len(), traces[1].Len(), stats[0], errs[0], stats[1], errs[1])
			}
		}
	}
}

// postgresMutants are bugs the simulation on PostgreSQL catches: one of
// the memory runs' mutants, in the decisions every store shares
// (PostgresStore renders decide's guard as its WHERE, so a fence decide
// drops goes with it), one in the PostgreSQL job store's statement, which
// no memory run executes, and one in the outbox relay (-outbox-relay).
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
	}, {
		// The outbox relay deletes every row it read, published or not: a
		// row whose message the transport refused is gone for good.
		// Caught at the end: the relay took the row and never published it.
		name: "pgsource-deletes-unpublished-rows", file: "internal/app/outbox/pgsource/pgsource.go", fn: "rowsWithin",
		old: "for n < len(l.ends) && l.ends[n] <= acked {", new: "for n < len(l.ends) {",
		store: sim.StorePostgres.String(), outboxRelay: true, transport: sim.TransportSQS.String(),
		within: 5,
	}}
}

// The mutants of postgresMutants are caught on PostgreSQL.
func TestMutantsAreCaughtOnPostgres(t *testing.T) {
	runMutants(t, postgresMutants(t))
}
