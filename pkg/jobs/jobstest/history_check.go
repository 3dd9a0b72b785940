package jobstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// CheckHistory checks h against Model and the invariants the fencing
// exists for; it returns what is wrong, nil if nothing. On a
// linearizability failure it writes porcupine's visualisation to dir.
func CheckHistory(h History, maxGenerations int64, dir string) error {
	model := Model(maxGenerations)
	res, info := porcupine.CheckOperationsVerbose(model, h.Ops, time.Minute)
	if res != porcupine.Ok {
		path := filepath.Join(dir, "history.html")
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			return fmt.Errorf("history is not linearizable (%v); visualisation failed: %w", res, err)
		}
		return fmt.Errorf("history is not linearizable (%v); see %s", res, path)
	}
	accepted := map[string]map[string]bool{} // job → attempts whose accept succeeded
	granted := map[string]map[int64]string{} // job → generation → attempt that claimed it
	for _, op := range h.Ops {
		in, out := op.Input.(Op), op.Output.(Outcome)
		if out.Kind != "ok" {
			continue
		}
		switch in.Kind {
		case "accept":
			if accepted[in.JobID] == nil {
				accepted[in.JobID] = map[string]bool{}
			}
			accepted[in.JobID][in.AttemptID] = true
		case "claim":
			if granted[in.JobID] == nil {
				granted[in.JobID] = map[int64]string{}
			}
			if prev, ok := granted[in.JobID][out.G]; ok && prev != in.AttemptID {
				return fmt.Errorf("%s: generation %d granted to %s and %s", in.JobID, out.G, prev, in.AttemptID)
			}
			granted[in.JobID][out.G] = in.AttemptID
		}
	}
	// Only the holder of a generation writes with it.
	claims := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		in, out := op.Input.(Op), op.Output.(Outcome)
		if out.Kind != "ok" {
			continue
		}
		switch in.Kind {
		case "renew", "accept", "fail":
			if holder := granted[in.JobID][in.G]; holder != in.AttemptID {
				return fmt.Errorf("%s: %s wrote with generation %d, which was granted to %q", in.JobID, in.AttemptID, in.G, holder)
			}
		case "claim":
			claims[in.JobID] = append(claims[in.JobID], op)
		}
	}
	// Generations strictly increase in real time: a claim that returned
	// before another began holds a lower generation (or is the same attempt).
	for id, ops := range claims {
		for _, a := range ops {
			for _, b := range ops {
				ai, bi := a.Input.(Op), b.Input.(Op)
				if a.Return < b.Call && ai.AttemptID != bi.AttemptID && a.Output.(Outcome).G >= b.Output.(Outcome).G {
					return fmt.Errorf("%s: %s got generation %d after %s had got %d", id,
						bi.AttemptID, b.Output.(Outcome).G, ai.AttemptID, a.Output.(Outcome).G)
				}
			}
		}
	}
	for _, id := range h.Jobs {
		final := h.Final[id]
		if n := len(accepted[id]); n > 1 || (final.Status == jobs.StatusCompleted) != (n == 1) {
			return fmt.Errorf("%s: %d accepts succeeded, and it ended %s", id, n, final.Status)
		}
		for g := range granted[id] {
			if g > final.Generation {
				return fmt.Errorf("%s: generation %d granted beyond the final generation %d", id, g, final.Generation)
			}
		}
		if final.Status == jobs.StatusCompleted && !accepted[id][final.LeaseOwner] {
			return fmt.Errorf("%s: result of %s selected, whose accept did not succeed", id, final.LeaseOwner)
		}
	}
	return nil
}

// SeedEnv names the variable that fixes the history test's seed, to replay
// a failing run's operations.
const SeedEnv = "FIFOWORKER_HISTORY_SEED"

// DefaultHistory is the shape the suite runs: small enough for a 2-core
// machine against DynamoDB Local, large enough for takeovers, stale writes,
// exhausted recoveries and cancellations to meet.
var DefaultHistory = HistoryConfig{Jobs: 32, Workers: 8, OpsPerWorker: 40, MaxGenerations: 4}

func testHistoryIsLinearizable(t *testing.T, newStore NewStore) {
	cfg := DefaultHistory
	cfg.Seed = rand.Uint64()
	if env := os.Getenv(SeedEnv); env != "" {
		seed, err := strconv.ParseUint(env, 10, 64)
		require.NoError(t, err, "%s=%q", SeedEnv, env)
		cfg.Seed = seed
	}
	// The seed fixes each worker's choice of operations; the interleaving
	// of the goroutines still varies between runs.
	t.Logf("seed %d (replay the same operations with %s=%d)", cfg.Seed, SeedEnv, cfg.Seed)
	clock := NewClock(Start)
	store := newStore(t, jobs.Config{Now: clock.Now, Recovery: jobs.RecoveryPolicy{MaxGenerations: cfg.MaxGenerations}})
	h := RecordHistory(t, store, clock, cfg)
	// Not t.TempDir: a visualisation of a failure must outlive the test.
	dir, err := os.MkdirTemp("", "jobs-history-")
	require.NoError(t, err)
	err = CheckHistory(h, cfg.MaxGenerations, dir)
	if err == nil {
		_ = os.RemoveAll(dir)
	}
	require.NoError(t, err)
	counts := map[string]int{}
	for _, op := range h.Ops {
		in, out := op.Input.(Op), op.Output.(Outcome)
		counts[in.Kind+"/"+out.Kind]++
	}
	t.Logf("%d operations: %v", len(h.Ops), counts)
}
