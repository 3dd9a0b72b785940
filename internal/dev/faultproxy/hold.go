package faultproxy

import (
	"context"
	"errors"
	"net/http"
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

// hold reports whether the request is the one Config.Hold picks, and
// keeps it if so (counted as seen: it draws no fault). Hold is asked under
// holdMu, not mu: a picker may ask the proxy (Held, Counts), and a test
// may call Held under a lock its picker takes.
func (p *Proxy) hold(op string, o outbound) bool {
	p.holdMu.Lock()
	defer p.holdMu.Unlock()
	if p.cfg.Hold == nil || p.picked || !p.cfg.Hold(op, o.body) {
		return false
	}
	p.picked = true
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[op]++
	p.held = &o
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
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held != nil
}

// Release sends the held request upstream now, as its caller sent it, and
// returns the upstream's answer: a write that arrives after its sender has
// given up, as from a slow network. AWS takes a signed request within
// five minutes of its time stamp, in most cases (the IAM User Guide's
// page on SigV4 request signing), so a release within that is what the
// service would take.
func (p *Proxy) Release(ctx context.Context) Released {
	p.mu.Lock()
	o := p.held
	p.held = nil
	p.mu.Unlock()
	if o == nil {
		return Released{Err: ErrNothingHeld}
	}
	status, _, body, err := p.forward(ctx, *o)
	return Released{Status: status, Body: string(body), Err: err}
}
