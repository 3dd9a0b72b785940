package faultproxy

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"
)

// ledger draws each request's fault and counts what a proxy saw and
// injected; the HTTP proxy and the PostgreSQL proxy share it, so their
// decisions replay alike.
type ledger struct {
	seed                   uint64
	rates                  Rates
	ops                    map[string]Rates
	minLatency, maxLatency time.Duration

	mu       sync.Mutex
	gens     map[string]*rand.Rand // per operation
	enabled  bool
	requests map[string]int
	injected map[Kind]map[string]int
	delays   []time.Duration // every injected delay, for tests
}

func newLedger(seed uint64, rates Rates, ops map[string]Rates, lo, hi time.Duration) ledger {
	return ledger{
		seed: seed, rates: rates, ops: ops, minLatency: lo, maxLatency: hi, enabled: true,
		gens: map[string]*rand.Rand{}, requests: map[string]int{}, injected: map[Kind]map[string]int{},
	}
}

// SetEnabled turns injection on (the default) or off; while off, every
// request is forwarded untouched (and still counted as seen). It does not
// change Hold, which picks its one request either way.
func (l *ledger) SetEnabled(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled = on
}

// decision is what happens to one request.
type decision struct {
	delay time.Duration // 0: none
	fault Kind          // "" or ServerError, Throttle, Reset, Drop, Stall
	alt   bool          // the second variant: 503 rather than 500, the other throttling code
}

// decide draws the request's fault from its operation's generator and
// counts it.
func (l *ledger) decide(op string) decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[op]++
	if !l.enabled {
		return decision{}
	}
	g, ok := l.gens[op]
	if !ok {
		h := fnv.New64a()
		_, _ = h.Write([]byte(op))
		g = rand.New(rand.NewPCG(l.seed, h.Sum64()))
		l.gens[op] = g
	}
	r, ok := l.ops[op]
	if !ok {
		r = l.rates
	}
	// A fixed number of draws per request, whatever is decided, so that the
	// n-th request of an operation always sees the same numbers.
	u, lat, spread, alt := g.Float64(), g.Float64(), g.Float64(), g.IntN(2) == 1
	var d decision
	switch {
	case u < r.ServerError:
		d.fault = ServerError
	case u < r.ServerError+r.Throttle:
		d.fault = Throttle
	case u < r.ServerError+r.Throttle+r.Reset:
		d.fault = Reset
	case u < r.ServerError+r.Throttle+r.Reset+r.Drop:
		d.fault = Drop
	case u < r.ServerError+r.Throttle+r.Reset+r.Drop+r.Stall:
		d.fault = Stall
	}
	d.alt = alt
	if lat < r.Latency {
		d.delay = l.minLatency + time.Duration(spread*float64(l.maxLatency-l.minLatency))
		l.count(Latency, op)
		l.delays = append(l.delays, d.delay)
	}
	if d.fault != "" {
		l.count(d.fault, op)
	}
	return d
}

// seen counts a request that draws no fault: a held one.
func (l *ledger) seen(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[op]++
}

func (l *ledger) count(k Kind, op string) {
	m := l.injected[k]
	if m == nil {
		m = map[string]int{}
		l.injected[k] = m
	}
	m[op]++
}

// Counts returns a copy of the counts so far.
func (l *ledger) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Counts{Requests: map[string]int{}, Injected: map[Kind]map[string]int{}}
	for op, n := range l.requests {
		c.Requests[op] = n
	}
	for k, m := range l.injected {
		c.Injected[k] = map[string]int{}
		for op, n := range m {
			c.Injected[k][op] = n
		}
	}
	return c
}

// Delays returns every delay injected so far, in order.
func (l *ledger) Delays() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.delays...)
}
