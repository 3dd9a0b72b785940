package jobstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// Op is the input of one recorded operation.
type Op struct {
	Kind      string // claim, renew, accept, fail, cancel, get
	JobID     string
	AttemptID string
	G, V      int64
	Until     int64 // lease end, epoch ms
	Progress  int64
	Key       string // result key (accept)
	// NowLo and NowHi bracket the clock reading the store made: the clock
	// before the call and after the return (epoch ms).
	NowLo, NowHi int64
}

// Outcome is the output of one recorded operation.
type Outcome struct {
	Kind  string // ok, stale, held, final, notfound, invalid
	State        // ok: the job returned; held: the holder's owner, generation and until; stale: generation, version and status
}

// State is the model's view of one job.
type State struct {
	Status   jobs.Status
	G, V     int64
	Owner    string
	Until    int64
	Key      string
	Progress int64
}

func stateOf(j jobs.Job) State {
	s := State{Status: j.Status, G: j.Generation, V: j.Version, Owner: j.LeaseOwner, Key: j.Result.Key, Progress: j.Progress}
	if !j.LeaseExpiresAt.IsZero() {
		s.Until = j.LeaseExpiresAt.UnixMilli()
	}
	return s
}

// Model is the job state machine as porcupine sees it, partitioned by job
// id; every job starts pending at generation and version 0. A claim's
// lease check may have read any time between NowLo and NowHi.
func Model(maxGenerations int64) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byJob := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				id := op.Input.(Op).JobID
				if _, ok := byJob[id]; !ok {
					order = append(order, id)
				}
				byJob[id] = append(byJob[id], op)
			}
			parts := make([][]porcupine.Operation, 0, len(order))
			for _, id := range order {
				parts = append(parts, byJob[id])
			}
			return parts
		},
		Init: func() any { return State{Status: jobs.StatusPending} },
		Step: func(state, input, output any) (bool, any) {
			return step(state.(State), input.(Op), output.(Outcome), maxGenerations)
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(Op), output.(Outcome)
			return fmt.Sprintf("%s(%s g%d v%d) → %s %+v", in.Kind, in.AttemptID, in.G, in.V, out.Kind, out.State)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%+v", state) },
	}
}

func step(s State, in Op, out Outcome, maxGenerations int64) (bool, any) {
	final := s.Status.Final()
	if out.Kind == "invalid" {
		return in.Until <= in.NowHi, s
	}
	switch in.Kind {
	case "get":
		return out.Kind == "ok" && out.State == s, s
	case "claim":
		switch out.Kind {
		case "ok":
			if s.Status == jobs.StatusRunning && s.Owner == in.AttemptID {
				return out.State == s, s // recognised retry
			}
			next := State{Status: jobs.StatusRunning, G: s.G + 1, V: s.V + 1, Owner: in.AttemptID, Until: in.Until}
			ok := s.Status == jobs.StatusPending ||
				(s.Status == jobs.StatusRunning && s.Until < in.NowHi && s.G < maxGenerations)
			return ok && out.State == next, next
		case "held":
			ok := s.Status == jobs.StatusRunning && s.Owner != in.AttemptID && s.Until >= in.NowLo &&
				out.Owner == s.Owner && out.G == s.G && out.Until == s.Until
			return ok, s
		case "final":
			if final {
				return out.Status == s.Status, s
			}
			next := s
			next.Status, next.G, next.V = jobs.StatusFailed, s.G+1, s.V+1
			ok := s.Status == jobs.StatusRunning && s.Owner != in.AttemptID && s.Until < in.NowHi &&
				s.G >= maxGenerations && out.Status == jobs.StatusFailed
			return ok, next
		}
		return false, s
	case "cancel":
		switch out.Kind {
		case "ok":
			if s.Status == jobs.StatusCancelled {
				return out.State == s, s
			}
			next := s
			next.Status, next.G, next.V = jobs.StatusCancelled, s.G+1, s.V+1
			return !final && out.State == next, next
		case "final":
			return final && s.Status != jobs.StatusCancelled && out.Status == s.Status, s
		}
		return false, s
	case "renew", "accept", "fail":
		var done State // the state the write leads to
		done = s
		done.V = in.V + 1
		switch in.Kind {
		case "renew":
			done.Status, done.Until, done.Progress = jobs.StatusRunning, in.Until, in.Progress
		case "accept":
			done.Status, done.Key, done.Progress = jobs.StatusCompleted, in.Key, in.Progress
		case "fail":
			done.Status = jobs.StatusFailed
		}
		// The caller's own write, already applied: recognised. (Fail's
		// failure code is the same in every recorded request.)
		recognised := s.G == in.G && s.Owner == in.AttemptID && s.V == in.V+1 && s == done
		if recognised {
			return out.Kind == "ok" && out.State == s, s
		}
		switch out.Kind {
		case "ok":
			ok := s.Status == jobs.StatusRunning && s.G == in.G && s.V == in.V && s.Owner == in.AttemptID
			return ok && out.State == done, done
		case "stale":
			ok := s.G != in.G || (!final && (s.Status != jobs.StatusRunning || s.V != in.V || s.Owner != in.AttemptID))
			return ok && out.G == s.G && out.V == s.V && out.Status == s.Status, s
		case "final":
			return s.G == in.G && final && out.Status == s.Status, s
		}
		return false, s
	}
	return false, s
}

// HistoryConfig shapes a concurrent run.
type HistoryConfig struct {
	Jobs           int   // jobs worked on concurrently
	Workers        int   // goroutines
	OpsPerWorker   int   // operations each worker starts
	MaxGenerations int64 // the store's recovery policy
	Seed           uint64
}

// History is what RecordHistory observed.
type History struct {
	Ops   []porcupine.Operation
	Jobs  []string
	Final map[string]jobs.Job // each job after the run
}

// RecordHistory creates cfg.Jobs jobs and lets cfg.Workers goroutines claim,
// a few at a time,
// renew, accept, fail, cancel and read them while the clock advances in
// steps that make leases expire mid-attempt. Stalled workers keep going with
// their old generation, and some requests are sent twice, as after a lost
// response. It records each operation's call and return, inputs and
// outputs. An error no Store may return fails the test.
func RecordHistory(t *testing.T, store jobs.Store, clock *Clock, cfg HistoryConfig) History {
	t.Helper()
	ctx := t.Context()
	suffix := randomHex(t)
	h := History{Final: map[string]jobs.Job{}}
	for i := range cfg.Jobs {
		res, err := store.Create(ctx, jobs.CreateRequest{
			JobID: fmt.Sprintf("job-%d-%s", 42+i, suffix), IntentID: fmt.Sprintf("export-intent-%d", 7+i), Tenant: "t-" + suffix,
		})
		require.NoError(t, err)
		h.Jobs = append(h.Jobs, res.Job.ID)
	}

	var (
		mu    sync.Mutex
		start = time.Now()
		pool  = &jobPool{ids: h.Jobs, ended: map[string]bool{}}
	)
	// The clock moves with the operations, not with the wall clock, so a
	// fast store and a slow one see leases expire alike: a third of the
	// operations first advance it by 300 ms, against leases of 1 to 3 s.
	record := func(client int, rng *rand.Rand, in Op, call func() (jobs.Job, error)) (jobs.Job, error) {
		if rng.IntN(3) == 0 {
			clock.Advance(300 * time.Millisecond)
		}
		in.NowLo = clock.Now().UnixMilli()
		t0 := time.Since(start).Nanoseconds()
		j, err := call()
		t1 := time.Since(start).Nanoseconds()
		in.NowHi = clock.Now().UnixMilli()
		out, known := outcome(in, j, err)
		if !known {
			t.Errorf("%s %s: unexpected error: %v", in.Kind, in.JobID, err)
			return j, err
		}
		if out.Status.Final() {
			pool.end(in.JobID)
		}
		mu.Lock()
		h.Ops = append(h.Ops, porcupine.Operation{ClientId: client, Input: in, Call: t0, Output: out, Return: t1})
		mu.Unlock()
		return j, err
	}

	var wg sync.WaitGroup
	for w := range cfg.Workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			wk := &worker{ctx: ctx, store: store, clock: clock, rng: rng, client: w, record: record, pool: pool}
			wk.run(cfg.OpsPerWorker)
		})
	}
	wg.Wait()

	for _, id := range h.Jobs {
		j, err := store.Get(ctx, id)
		require.NoError(t, err)
		h.Final[id] = j
	}
	return h
}

// outcome turns a store's answer into the model's; known is false for an
// error outside the Store contract.
func outcome(in Op, j jobs.Job, err error) (Outcome, bool) {
	var (
		held  *jobs.LeaseHeldError
		stale *jobs.StaleError
		final *jobs.FinalError
	)
	switch {
	case err == nil:
		return Outcome{Kind: "ok", State: stateOf(j)}, true
	case errors.As(err, &held):
		return Outcome{Kind: "held", State: State{Owner: held.Owner, G: held.Generation, Until: held.Until.UnixMilli()}}, true
	case errors.As(err, &stale):
		return Outcome{Kind: "stale", State: State{G: stale.Generation, V: stale.Version, Status: stale.Status}}, true
	case errors.As(err, &final):
		return Outcome{Kind: "final", State: State{Status: final.Status}}, true
	case errors.Is(err, jobs.ErrNotFound):
		return Outcome{Kind: "notfound"}, true
	case errors.Is(err, jobs.ErrInvalid) && in.Until != 0 && in.Until <= in.NowHi:
		// The clock passed the requested lease end before the store read it.
		return Outcome{Kind: "invalid"}, true
	}
	return Outcome{}, false
}

type worker struct {
	ctx    context.Context
	store  jobs.Store
	clock  *Clock
	rng    *rand.Rand
	client int
	record func(int, *rand.Rand, Op, func() (jobs.Job, error)) (jobs.Job, error)
	pool   *jobPool
	seq    int
}

// jobPool hands workers the jobs to work on: a window of the first few that
// have not been seen ending, so that the run moves on to fresh jobs instead
// of hammering finished ones.
type jobPool struct {
	mu    sync.Mutex
	ids   []string
	ended map[string]bool
}

const poolWindow = 3

func (p *jobPool) pick(rng *rand.Rand) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var window []string
	for _, id := range p.ids {
		if !p.ended[id] {
			window = append(window, id)
			if len(window) == poolWindow {
				break
			}
		}
	}
	if len(window) == 0 {
		return "", false
	}
	return window[rng.IntN(len(window))], true
}

func (p *jobPool) end(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended[id] = true
}

func (w *worker) run(ops int) {
	for n := 0; n < ops; {
		id, ok := w.pool.pick(w.rng)
		if !ok {
			return
		}
		switch p := w.rng.IntN(100); {
		case p < 4:
			w.cancel(id)
			n++
		case p < 20:
			w.get(id)
			n++
		default:
			n += w.attempt(id)
		}
	}
}

func (w *worker) get(id string) {
	_, _ = w.record(w.client, w.rng, Op{Kind: "get", JobID: id}, func() (jobs.Job, error) { return w.store.Get(w.ctx, id) })
}

func (w *worker) cancel(id string) {
	_, _ = w.record(w.client, w.rng, Op{Kind: "cancel", JobID: id}, func() (jobs.Job, error) {
		return w.store.Cancel(w.ctx, jobs.CancelRequest{JobID: id})
	})
}

// attempt is one worker attempt: claim, a few renewals, then accept or
// fail. It returns how many operations it made.
func (w *worker) attempt(id string) int {
	w.seq++
	attempt := fmt.Sprintf("w%d-a%d", w.client, w.seq)
	lease := time.Duration(1+w.rng.IntN(3)) * time.Second
	claim := jobs.ClaimRequest{JobID: id, AttemptID: attempt, LeaseUntil: w.clock.Now().Add(lease)}
	in := Op{Kind: "claim", JobID: id, AttemptID: attempt, Until: claim.LeaseUntil.UnixMilli()}
	j, err := w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Claim(w.ctx, claim) })
	ops := 1
	if err != nil {
		return ops
	}
	if w.rng.IntN(10) == 0 { // the same claim again, as after a lost response
		_, _ = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Claim(w.ctx, claim) })
		ops++
	}
	g, v := j.Generation, j.Version
	for range w.rng.IntN(4) {
		if w.rng.IntN(4) == 0 {
			time.Sleep(time.Duration(w.rng.IntN(5)) * time.Millisecond) // a stall: the lease may expire
		}
		renew := jobs.RenewRequest{JobID: id, AttemptID: attempt, Generation: g, Version: v,
			LeaseUntil: w.clock.Now().Add(lease), Progress: int64(w.rng.IntN(100))}
		in := Op{Kind: "renew", JobID: id, AttemptID: attempt, G: g, V: v, Until: renew.LeaseUntil.UnixMilli(), Progress: renew.Progress}
		r, err := w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Renew(w.ctx, renew) })
		ops++
		if err == nil {
			v = r.Version
		}
	}
	if v > 1 && w.rng.IntN(8) == 0 {
		v-- // a bug in the caller: a version it has moved past
	}
	if w.rng.IntN(8) == 0 {
		fail := jobs.FailRequest{JobID: id, AttemptID: attempt, Generation: g, Version: v, Failure: jobs.Failure{Code: "task_failed"}}
		in := Op{Kind: "fail", JobID: id, AttemptID: attempt, G: g, V: v}
		_, _ = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Fail(w.ctx, fail) })
		return ops + 1
	}
	accept := jobs.AcceptRequest{JobID: id, AttemptID: attempt, Generation: g, Version: v,
		Result: result(attempt, g), Progress: int64(100 + w.rng.IntN(100))}
	in = Op{Kind: "accept", JobID: id, AttemptID: attempt, G: g, V: v, Key: accept.Result.Key, Progress: accept.Progress}
	_, err = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Accept(w.ctx, accept) })
	ops++
	if err == nil && w.rng.IntN(4) == 0 { // sent twice
		_, _ = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Accept(w.ctx, accept) })
		ops++
	}
	return ops
}

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
	store := newStore(t, jobs.WithClock(clock.Now), jobs.WithRecovery(jobs.RecoveryPolicy{MaxGenerations: cfg.MaxGenerations}))
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
