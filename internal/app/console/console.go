package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
)

// Console is the operator's web console, an http.Handler. It is safe for
// concurrent use.
type Console struct {
	cfg   Config
	hosts map[string]bool // the Host headers it answers
	// session is the cookie's value: derived from the token, so the cookie
	// is not the printed token itself.
	session string
	mux     *http.ServeMux
	pages   *pages
	// inFlight are the actions running, for a console that stops.
	inFlight inFlight
	// acting are the groups an action runs on now.
	acting acting
}

// acting is the set of groups, by queue, an action of this console runs
// on. An action holds its group from the check of its form against the
// hold to its end: the check and the operator's action are separate
// steps, and a discard neither changes the epoch nor ends at once (a
// discard-all archives each message first), so without it a redrive
// posted meanwhile from another tab would send copies of messages the
// discard then drops. It is this console's own: the CLI, or another
// console process, acting on the group at the same time is not excluded.
type acting struct {
	mu  sync.Mutex
	now map[[2]string]bool
}

// take holds group g of queue for one action, reporting false when an
// action holds it already; release ends the hold.
func (a *acting) take(queue, g string) (release func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := [2]string{queue, g}
	if a.now[k] {
		return nil, false
	}
	if a.now == nil {
		a.now = map[[2]string]bool{}
	}
	a.now[k] = true
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.now, k)
	}, true
}

// inFlight is the set of actions running, each said in words.
type inFlight struct {
	mu   sync.Mutex
	next int
	now  map[int]string
}

// begin adds what; the func it returns removes it.
func (f *inFlight) begin(what string) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.now == nil {
		f.now = map[int]string{}
	}
	id := f.next
	f.next++
	f.now[id] = what
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.now, id)
	}
}

// InFlight says the actions running now (a redrive of group g on
// commands), for a console that stops: its process waits for them or
// says which it interrupted.
func (c *Console) InFlight() []string {
	c.inFlight.mu.Lock()
	defer c.inFlight.mu.Unlock()
	out := make([]string, 0, len(c.inFlight.now))
	for _, what := range c.inFlight.now {
		out = append(out, what)
	}
	slices.Sort(out)
	return out
}

// New returns the console of cfg, or an error wrapping ErrInvalidConfig
// that names the fields that cannot work.
func New(cfg Config) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg.withDefaults(), hosts: allowedHosts(cfg.Addr), session: mac(cfg.Token, "session"), pages: pg}
	c.mux = c.routes()
	return c, nil
}

// routes are the console's pages and actions. An action's GET is its
// confirmation page; only its POST acts.
func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", c.overview)
	m.HandleFunc("GET /jobs", c.jobsList)
	m.HandleFunc("GET /jobs/{id}", c.job)
	m.HandleFunc("GET /quarantine/{queue}", c.holds)
	m.HandleFunc("GET /quarantine/{queue}/{group}", c.group)
	m.HandleFunc("GET /quarantine/{queue}/{group}/redrive", c.action(c.confirmRedrive))
	m.HandleFunc("POST /quarantine/{queue}/{group}/redrive", c.action(c.redrive))
	m.HandleFunc("GET /quarantine/{queue}/{group}/discard", c.action(c.confirmDiscard))
	m.HandleFunc("POST /quarantine/{queue}/{group}/discard", c.action(c.discard))
	m.HandleFunc("GET /quarantine/{queue}/{group}/report", c.action(c.report))
	m.HandleFunc("GET "+stylePath, serveStyle)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	return m
}

// ServeHTTP answers r: its Host must be the console's, and it must carry
// the token (or the session cookie the token gave), before any page is
// read.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if !c.hosts[hostOf(r)] {
		// Plain text: a rebound page must learn nothing of the console.
		http.Error(w, "console: this console answers only requests addressed to "+c.cfg.Addr+" or loopback with its port (the Host header is checked against DNS rebinding)", http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == stylePath {
		c.mux.ServeHTTP(w, r) // the stylesheet holds nothing secret; the 401 page uses it
		return
	}
	if !c.authenticate(w, r) {
		return
	}
	c.mux.ServeHTTP(w, r)
}

// mac is the hex HMAC-SHA256 of msg under key.
func mac(key, msg string) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}
