package faultproxy

import (
	"context"
	"errors"
	"net/http"
	"sync"
)

// ErrNothingHeld is what Release answers when no request is held: Hold has
// picked none yet, or its request was released already.
var ErrNothingHeld = errors.New("faultproxy: no request is held")

// Released is the upstream's answer to a released request.
type Released struct {
	Status int
	Body   string
	Err    error
}

// holding is the one request (HTTP) or round trip (PostgreSQL) a proxy
// holds back for Release: its Hold is asked about each until it first says
// yes, and never after. The zero value holds nothing.
type holding[T any] struct {
	// askMu serialises Hold's calls. It is neither mu nor the proxy's
	// lock: a picker may ask the proxy (Held, Counts), and a test may call
	// Held under a lock its picker takes.
	askMu  sync.Mutex
	picked bool // Hold has said yes; guarded by askMu

	mu   sync.Mutex
	held *T // what waits for Release; guarded by mu
}

// pick reports whether Hold, asked through ask unless it said yes before,
// picks this one: a proxy holds one at most.
func (h *holding[T]) pick(ask func() bool) bool {
	h.askMu.Lock()
	defer h.askMu.Unlock()
	if h.picked || !ask() {
		return false
	}
	h.picked = true
	return true
}

// keep keeps what pick picked until take.
func (h *holding[T]) keep(v *T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = v
}

// has reports whether something is kept: what the proxies' Held answer.
func (h *holding[T]) has() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held != nil
}

// take returns what is kept, or nil, and keeps nothing after: a release
// sends it once.
func (h *holding[T]) take() *T {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := h.held
	h.held = nil
	return v
}

// hold reports whether the request is the one Config.Hold picks, and
// keeps it if so, counted as seen (it draws no fault) before it is kept,
// so that a caller who sees it Held finds it in Counts.
func (p *Proxy) hold(op string, o outbound) bool {
	if p.cfg.Hold == nil || !p.holding.pick(func() bool { return p.cfg.Hold(op, o.body) }) {
		return false
	}
	p.seen(op)
	p.holding.keep(&o)
	return true
}

// await gives a held request no answer: its caller gives up at its own
// deadline, or the proxy's Close resets the connection.
func (p *Proxy) await(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.closing:
		reset(w)
	}
}

// Held reports whether the request Hold picked is waiting for Release.
func (p *Proxy) Held() bool {
	return p.holding.has()
}

// Release sends the held request upstream now, as its caller sent it, and
// returns the upstream's answer: a write that arrives after its sender has
// given up, as from a slow network. AWS takes a signed request within
// five minutes of its time stamp, in most cases (the IAM User Guide's
// page on SigV4 request signing), so a release within that is what the
// service would take.
func (p *Proxy) Release(ctx context.Context) Released {
	o := p.holding.take()
	if o == nil {
		return Released{Err: ErrNothingHeld}
	}
	status, _, body, err := p.forward(ctx, *o)
	return Released{Status: status, Body: string(body), Err: err}
}
