package lanes

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Engine runs the lanes of batches. It is safe for concurrent use.
type Engine struct {
	cfg Config
	// say is what its batches log and the errors they make, built once
	// from Config.Name and Config.Item.
	say words
}

// New returns an Engine with cfg. It fails with an error wrapping
// ErrInvalidConfig, naming the field, when cfg does not validate.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Engine{cfg: cfg, say: wordsOf(cfg.Name, cfg.Item)}, nil
}

// Plan is a batch of n items split into lanes: the items of one key, in
// index order. An item without a key is a lane of its own.
type Plan struct {
	next  []int // next[i]: the next item of item i's lane, or -1
	heads []int // the first item of each lane, in the order lanes are taken
	links []int // the room of both
}

// Plan splits n items into lanes by key, which returns item i's key and
// whether it has one. With a Concurrency smaller than the number of lanes,
// the longest lanes are taken first (a stable order otherwise: by first
// item).
func (e *Engine) Plan(n int, key func(i int) (string, bool)) *Plan {
	return e.Replan(nil, n, key)
}

// Replan is Plan, in the room of p (nil: none), a plan of a batch done
// with.
func (e *Engine) Replan(p *Plan, n int, key func(i int) (string, bool)) *Plan {
	if p == nil {
		p = new(Plan)
	}
	links := p.links // next and heads, one after the other
	if cap(links) < 2*n {
		links = make([]int, 2*n) // one allocation for both
	}
	*p = Plan{next: links[:n:n], heads: links[n : n : 2*n], links: links}
	for i := range p.next {
		p.next[i] = -1
	}
	if n <= smallPlan {
		p.linkFew(key)
	} else {
		p.linkMany(key)
	}
	if c := e.cfg.Concurrency; c > 0 && c < len(p.heads) {
		// Longest lanes first: with fewer slots than lanes, the batch then
		// ends closer to its longest lane.
		length := make([]int, n)
		for _, h := range p.heads {
			for i := h; i >= 0; i = p.next[i] {
				length[h]++
			}
		}
		slices.SortStableFunc(p.heads, func(x, y int) int { return length[y] - length[x] })
	}
	return p
}

// smallPlan is the most items Plan links by comparing each key with the
// lanes' so far: for a batch of SQS's 10, fewer string comparisons than
// a map costs in hashing and allocation.
const smallPlan = 16

// linkFew links p's items into lanes by key, comparing keys.
func (p *Plan) linkFew(key func(i int) (string, bool)) {
	var lanes [smallPlan]struct {
		key  string
		tail int
	}
	keyed := 0
	for i := range p.next {
		k, ok := key(i)
		if !ok {
			p.heads = append(p.heads, i)
			continue
		}
		l := 0
		for l < keyed && lanes[l].key != k {
			l++
		}
		if l < keyed {
			p.next[lanes[l].tail] = i
		} else {
			p.heads = append(p.heads, i)
			lanes[l].key = k
			keyed++
		}
		lanes[l].tail = i
	}
}

// linkMany links p's items into lanes by key, with a map.
func (p *Plan) linkMany(key func(i int) (string, bool)) {
	tails := make(map[string]int) // key -> last item seen of its lane
	for i := range p.next {
		k, ok := key(i)
		if !ok {
			p.heads = append(p.heads, i)
			continue
		}
		if tail, seen := tails[k]; seen {
			p.next[tail] = i
		} else {
			p.heads = append(p.heads, i)
		}
		tails[k] = i
	}
}

// Lanes returns the number of lanes.
func (p *Plan) Lanes() int { return len(p.heads) }

// Heads returns the first item of each lane, in the order lanes are taken.
// The caller must not change it.
func (p *Plan) Heads() []int { return p.heads }

// Next returns the item after item i in its lane, or -1 after the last:
// for i := head; i >= 0; i = p.Next(i) walks a lane.
func (p *Plan) Next(i int) int { return p.next[i] }

// Run is one batch's run: its items' context, its deadline and its stop.
type Run struct {
	// workers are Lanes' goroutines, part of the Run (no allocation of
	// their own): Lanes is called once at a time.
	workers     laneWorkers
	e           *Engine
	ctx         context.Context
	deadline    time.Time
	hasDeadline bool
	stopped     atomic.Bool
}

// Start begins a run under ctx. The run's context expires ResponseReserve
// before ctx's deadline; cancel releases it and must be called once the
// caller is done with the run.
func (e *Engine) Start(ctx context.Context) (r *Run, cancel context.CancelFunc) {
	r = &Run{}
	return r, e.start(r, ctx)
}

// start begins the run r (a Batch's own) under ctx, as Start does.
func (e *Engine) start(r *Run, ctx context.Context) (cancel context.CancelFunc) {
	*r = Run{e: e}
	r.deadline, r.hasDeadline = ctx.Deadline()
	if r.hasDeadline {
		r.ctx, cancel = context.WithDeadline(ctx, r.deadline.Add(-e.cfg.ResponseReserve))
	} else {
		r.ctx, cancel = context.WithCancel(ctx)
	}
	return cancel
}

// Context returns the context the items run under: it expires
// ResponseReserve before the deadline of Start's context.
func (r *Run) Context() context.Context { return r.ctx }

// TimeToStart reports whether an item may start now: the run's context is
// live and, if Start's context has a deadline, at least DeadlineMargin is
// left before it. Once it says no for a lane, the lane should not ask
// again: the deadline is wall-clock time and the wall clock can step back.
func (r *Run) TimeToStart() bool {
	if r.ctx.Err() != nil {
		return false
	}
	return !r.hasDeadline || r.deadline.Sub(r.e.cfg.Now()) >= r.e.cfg.DeadlineMargin
}

// timeToStartAt is TimeToStart with the time read: now, which the caller
// read if the run has a deadline.
func (r *Run) timeToStartAt(now time.Time) bool {
	if r.ctx.Err() != nil {
		return false
	}
	return !r.hasDeadline || r.deadline.Sub(now) >= r.e.cfg.DeadlineMargin
}

// Stop records that no further item should start anywhere in the run
// (a failure under stop-on-first-failure); Stopped reads it.
func (r *Run) Stop() { r.stopped.Store(true) }

// Stopped reports whether Stop was called.
func (r *Run) Stopped() bool { return r.stopped.Load() }

// Runner runs lanes: RunLane is called with the first item of a lane, and
// walks the lane with Plan.Next.
type Runner interface {
	RunLane(head int)
}

// RunnerFunc is a func as a Runner.
type RunnerFunc func(head int)

// RunLane calls f(head).
func (f RunnerFunc) RunLane(head int) { f(head) }

// Lanes calls lane.RunLane once for the head of each lane of p, each lane on one
// goroutine, at most Concurrency at once, and returns when every call has
// returned. One Run's Lanes calls must not overlap. If RunLane ends its goroutine with runtime.Goexit, a replacement
// goroutine takes the remaining lanes; the lane that exited is not resumed.
// No goroutine started here outlives the call. A panic in RunLane is not
// recovered here: RunLane contains its own (see Contain).
//
// The goroutines start one at a time: a goroutine about to run a lane
// starts the next, if lanes are left, none started is still on its way
// and the bound allows one more. Lanes that wait (on I/O) each get a
// goroutine within a few microseconds of each other, as if all had been
// started at once; lanes that do not wait are run by the first
// goroutines, without a goroutine each.
func (r *Run) Lanes(p *Plan, lane Runner) {
	if len(p.heads) == 0 {
		return
	}
	workers := len(p.heads)
	if c := r.e.cfg.Concurrency; c > 0 && c < workers {
		workers = c
	}
	l := &r.workers
	*l = laneWorkers{run: r, plan: p, lane: lane, most: int64(workers)}
	l.work = l.takeLanes // one func value for every goroutine
	l.live.Store(1)
	l.start()
	l.wg.Wait()
}

// laneWorkers are the goroutines of one call of Run.Lanes.
type laneWorkers struct {
	run  *Run
	plan *Plan
	lane Runner
	work func()
	next atomic.Int64 // index into plan.heads of the next lane to take
	// live counts the goroutines started, up to most (a replacement takes
	// its predecessor's place); starting those started that have not taken
	// a lane yet.
	live, starting atomic.Int64
	most           int64
	wg             sync.WaitGroup
}

// start starts a goroutine; the caller counted it in live.
func (l *laneWorkers) start() {
	l.starting.Add(1)
	l.wg.Add(1) // legal during Wait: the caller's goroutine still counts, or Wait has not begun
	go l.work()
}

// takeLanes takes lanes until none is left, starting the next goroutine
// before it runs each (see Run.Lanes). If RunLane ends the goroutine with
// runtime.Goexit, a replacement takes its place.
func (l *laneWorkers) takeLanes() {
	exited := true
	defer func() {
		if exited {
			if log := l.run.e.cfg.Logger; log != nil {
				_ = Guard(PanicInLogger, func() { log.Debug("lanes: a lane's goroutine called runtime.Goexit; replaced") })
			}
			l.start() // in this one's place in live
		}
		l.wg.Done()
	}()
	l.starting.Add(-1)
	heads := l.plan.heads
	for {
		k := int(l.next.Add(1) - 1)
		if k >= len(heads) {
			exited = false
			return
		}
		if k+1 < len(heads) && l.starting.Load() == 0 && l.live.Load() < l.most {
			if l.live.Add(1) <= l.most {
				l.start()
			} else {
				l.live.Add(-1) // another goroutine took the last place
			}
		}
		l.lane.RunLane(heads[k])
	}
}
