package jobstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

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
// renew, accept, fail, cancel, nudge (as the sweeper does: read, then nudge
// what was read) and read them while the clock advances in
// steps that make leases expire mid-attempt. Stalled workers keep going with
// their old generation, and some requests are sent twice, as after a lost
// response (a claim sometimes later, with a new lease end, after its first
// lease has ended). It records each operation's call and return, inputs and
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
		case p < 10:
			n += w.nudge(id)
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

// nudge is the sweeper's: read the job, nudge it at what was read (the
// store decides whether it may), sometimes twice as after a lost response.
// It returns how many operations it made.
func (w *worker) nudge(id string) int {
	j, err := w.record(w.client, w.rng, Op{Kind: "get", JobID: id}, func() (jobs.Job, error) { return w.store.Get(w.ctx, id) })
	if err != nil {
		return 1
	}
	req := jobs.NudgeRequest{JobID: id, Generation: j.Generation, Version: j.Version, Reason: "stuck"}
	in := Op{Kind: "nudge", JobID: id, G: j.Generation, V: j.Version}
	ops := 1
	for range 1 + w.rng.IntN(2) {
		_, _ = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Nudge(w.ctx, req) })
		ops++
	}
	return ops
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
	if w.rng.IntN(10) == 0 { // the claim again, as after a lost response
		again, againIn := claim, in
		if w.rng.IntN(2) == 0 {
			// Retried later with the lease end computed anew: by then the
			// first lease may have ended, and the claim is a takeover.
			if w.rng.IntN(2) == 0 {
				w.clock.Advance(lease)
			}
			again.LeaseUntil = w.clock.Now().Add(lease)
			againIn.Until = again.LeaseUntil.UnixMilli()
		}
		r, err := w.record(w.client, w.rng, againIn, func() (jobs.Job, error) { return w.store.Claim(w.ctx, again) })
		ops++
		if err == nil {
			j = r
		}
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
		Result: result(id, attempt, g), Progress: int64(100 + w.rng.IntN(100))}
	in = Op{Kind: "accept", JobID: id, AttemptID: attempt, G: g, V: v, Key: accept.Result.Key, Progress: accept.Progress}
	_, err = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Accept(w.ctx, accept) })
	ops++
	if err == nil && w.rng.IntN(4) == 0 { // sent twice
		_, _ = w.record(w.client, w.rng, in, func() (jobs.Job, error) { return w.store.Accept(w.ctx, accept) })
		ops++
	}
	return ops
}
