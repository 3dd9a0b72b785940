package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The kinds of fault.
const (
	Latency     Kind = "latency"      // added delay, then forwarded
	ServerError Kind = "server_error" // 500 or 503, not forwarded
	Throttle    Kind = "throttle"     // the service's throttling error, not forwarded
	Reset       Kind = "reset"        // connection reset, not forwarded
	Drop        Kind = "drop"         // forwarded and applied, then the connection is reset
	Stall       Kind = "stall"        // held, never forwarded nor answered, until the client gives up (PostgreSQL proxy)
)

// Kinds are the kinds the HTTP proxy injects, in a stable order.
var Kinds = []Kind{Latency, ServerError, Throttle, Reset, Drop}

// PostgresKinds are the kinds the PostgreSQL proxy injects.
var PostgresKinds = []Kind{Latency, Reset, Drop, Stall}

// Service says which protocol the upstream speaks, and so which shape the
// injected errors take.
type Service int

// The services.
const (
	DynamoDB Service = iota + 1 // awsJson1_0, X-Amz-Target DynamoDB_20120810.*
	SQS                         // awsJson1_0 with the query-compatible error header, X-Amz-Target AmazonSQS.*
	S3                          // REST-XML, path-style
)

func (s Service) String() string {
	switch s {
	case DynamoDB:
		return "dynamodb"
	case SQS:
		return "sqs"
	case S3:
		return "s3"
	}
	return fmt.Sprintf("Service(%d)", int(s))
}

// Rates are the probabilities, each in [0, 1], that a request suffers each
// kind of fault. ServerError + Throttle + Reset + Drop + Stall must not
// exceed 1: one draw picks at most one of them. Latency is drawn on its
// own. The HTTP proxy does not stall; the PostgreSQL proxy neither throttles
// nor answers with a server error (see PostgresConfig).
type Rates struct {
	Latency     float64
	ServerError float64
	Throttle    float64
	Reset       float64
	Drop        float64
	Stall       float64
}

// validate checks the rates; field names them in the error (Rates,
// Operations[PutObject]). A kind in unsupported must have rate 0.
func (r Rates) validate(field string, unsupported map[Kind]float64) error {
	for k, v := range unsupported {
		if v != 0 {
			return fmt.Errorf("%w: %s: this proxy does not inject %s", ErrInvalidConfig, field, k)
		}
	}
	for k, v := range map[string]float64{"Latency": r.Latency, "ServerError": r.ServerError, "Throttle": r.Throttle, "Reset": r.Reset, "Drop": r.Drop, "Stall": r.Stall} {
		if v < 0 || v > 1 || math.IsNaN(v) {
			return fmt.Errorf("%w: %s.%s is %v, not in [0, 1]", ErrInvalidConfig, field, k, v)
		}
	}
	if s := r.ServerError + r.Throttle + r.Reset + r.Drop + r.Stall; s > 1+1e-9 {
		return fmt.Errorf("%w: %s's error rates add up to %v, more than 1", ErrInvalidConfig, field, s)
	}
	return nil
}

// ErrInvalidConfig is what New returns for a Config it cannot run.
var ErrInvalidConfig = errors.New("faultproxy: invalid configuration")

// Config configures a proxy.
type Config struct {
	// Service is the upstream's protocol (required).
	Service Service
	// Target is the upstream's base URL, such as http://127.0.0.1:8000
	// (required).
	Target string
	// Seed seeds every decision (default 0).
	Seed uint64
	// Rates apply to every operation not in Operations (default: no
	// fault).
	Rates Rates
	// Operations overrides Rates per operation ("UpdateItem",
	// "ReceiveMessage", "PutObject"); default none.
	Operations map[string]Rates
	// MinLatency and MaxLatency bound an injected delay. Each zero takes
	// its default on its own: MinLatency DefaultMinLatency, or MaxLatency
	// if that is less; MaxLatency DefaultMaxLatency, or MinLatency if that
	// is more. A default never crosses the bound that was set, so only two
	// bounds both set can be reversed.
	MinLatency, MaxLatency time.Duration
	// Sleep waits for an injected delay (tests replace it); by default a
	// timer that the end of ctx cuts short.
	Sleep func(ctx context.Context, d time.Duration) error
	// Hold, when set, picks one request to hold back (see Release); nil
	// holds nothing. It is asked with each request's operation (as Counts
	// names it) and body, one request at a time, until it first says yes.
	Hold func(operation string, body []byte) bool
}

// Validate reports the first setting New cannot run with, naming it.
func (c Config) Validate() error {
	if c.Service < DynamoDB || c.Service > S3 {
		return fmt.Errorf("%w: Service %v is none of DynamoDB, SQS, S3", ErrInvalidConfig, c.Service)
	}
	u, err := url.Parse(c.Target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%w: Target %q is not a base URL", ErrInvalidConfig, c.Target)
	}
	if err := c.Rates.validate("Rates", map[Kind]float64{Stall: c.Rates.Stall}); err != nil {
		return err
	}
	for op, r := range c.Operations {
		if err := r.validate("Operations["+op+"]", map[Kind]float64{Stall: r.Stall}); err != nil {
			return err
		}
	}
	if c.MinLatency < 0 {
		return fmt.Errorf("%w: MinLatency %v is negative", ErrInvalidConfig, c.MinLatency)
	}
	if c.MaxLatency < 0 {
		return fmt.Errorf("%w: MaxLatency %v is negative", ErrInvalidConfig, c.MaxLatency)
	}
	if lo, hi := c.latencyBounds(); hi < lo {
		return fmt.Errorf("%w: MaxLatency %v is below MinLatency %v", ErrInvalidConfig, hi, lo)
	}
	return nil
}

// The latency bounds' defaults.
const (
	DefaultMinLatency = 20 * time.Millisecond
	DefaultMaxLatency = 200 * time.Millisecond
)

// latencyBounds are MinLatency and MaxLatency with their defaults.
func (c Config) latencyBounds() (time.Duration, time.Duration) {
	lo, hi := c.MinLatency, c.MaxLatency
	if lo == 0 {
		lo = DefaultMinLatency
		if hi != 0 {
			lo = min(lo, hi)
		}
	}
	if hi == 0 {
		hi = max(DefaultMaxLatency, lo)
	}
	return lo, hi
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is what clients use as the service's endpoint.
	URL string

	cfg    Config
	target *url.URL
	srv    *http.Server
	client *http.Client

	ledger
	holding holding[outbound] // the request Config.Hold picks, until Release

	closing   chan struct{} // closed by Close: a held request's caller is answered with a reset
	closeOnce sync.Once
}

// New starts a proxy on a free port of 127.0.0.1 that forwards to
// cfg.Target. Close stops it.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.Target) // Validate parsed it
	cfg.MinLatency, cfg.MaxLatency = cfg.latencyBounds()
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		URL: "http://" + l.Addr().String(), cfg: cfg, target: u, closing: make(chan struct{}),
		ledger: newLedger(cfg.Seed, cfg.Rates, cfg.Operations, cfg.MinLatency, cfg.MaxLatency),
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:               nil,
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 64,
				IdleConnTimeout:     30 * time.Second,
				DisableCompression:  true, // bytes pass through as the upstream sent them
			},
			// Redirects are the client's to follow, not the proxy's.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the proxy: it stops accepting, resets a held request's
// connection, waits up to 2 s for requests in flight, then closes every
// connection.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() { close(p.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.srv.Close()
	}
	p.client.CloseIdleConnections()
	return err
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client went away while sending; nothing to answer.
		return
	}
	op := p.operation(r)
	out := newOutbound(r, body)
	if p.hold(op, out) {
		p.await(w, r)
		return
	}
	d := p.decide(op)
	if d.delay > 0 {
		if err := p.cfg.Sleep(r.Context(), d.delay); err != nil {
			return // the caller gave up meanwhile
		}
	}
	switch d.fault {
	case ServerError, Throttle:
		status, hdr, b := errorResponse(p.cfg.Service, d.fault, d.alt, r.Method)
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return
	case Reset:
		reset(w)
		return
	}
	status, header, respBody, err := p.forward(r.Context(), out)
	if err != nil {
		// The upstream failed (or the caller gave up): the caller sees a
		// gateway error, as it would behind any proxy.
		if r.Context().Err() == nil {
			http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	if d.fault == Drop {
		reset(w) // applied upstream; the answer is lost
		return
	}
	for k, vs := range header {
		if hopByHop[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if r.Method != http.MethodHead {
		w.Header().Set("Content-Length", fmt.Sprint(len(respBody)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(respBody)
}

// hopByHop are the headers a proxy does not pass on (RFC 9110, 7.6.1).
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// outbound is what the proxy sends upstream of a request, kept apart from
// the request so that a held one can be sent after its caller has gone.
type outbound struct {
	method, host string
	path         url.URL // the request's path, raw path and query
	header       http.Header
	body         []byte
}

func newOutbound(r *http.Request, body []byte) outbound {
	header := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		if !hopByHop[k] {
			header[k] = append([]string(nil), vs...)
		}
	}
	return outbound{method: r.Method, host: r.Host, path: *r.URL, header: header, body: body}
}

// forward sends the request upstream with its own Host header, so that a
// signature over it stays valid, and reads the whole answer: its status,
// headers and body.
func (p *Proxy) forward(ctx context.Context, o outbound) (int, http.Header, []byte, error) {
	u := *p.target
	u.Path = strings.TrimSuffix(p.target.Path, "/") + o.path.Path
	u.RawPath = ""
	if o.path.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.target.EscapedPath(), "/") + o.path.RawPath
	}
	u.RawQuery = o.path.RawQuery
	req, err := http.NewRequestWithContext(ctx, o.method, u.String(), bytes.NewReader(o.body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = o.header.Clone()
	req.Host = o.host
	req.ContentLength = int64(len(o.body))
	if len(o.body) == 0 {
		req.Body = http.NoBody
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// reset ends the connection with a TCP reset and no answer.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // closes the connection without an answer
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	_ = conn.Close()
}

// operation names the request's operation.
func (p *Proxy) operation(r *http.Request) string {
	if p.cfg.Service == S3 {
		return S3Operation(r.Method, r.URL.Path, r.URL.Query(), r.Header)
	}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			return t[i+1:]
		}
		return t
	}
	return r.Method + " " + r.URL.Path
}

// Counts is what a proxy saw and injected.
type Counts struct {
	// Requests is how many requests of each operation arrived.
	Requests map[string]int
	// Injected is, per kind, how many requests of each operation got it.
	Injected map[Kind]map[string]int
}

// Total is how many requests got fault k.
func (c Counts) Total(k Kind) int {
	n := 0
	for _, v := range c.Injected[k] {
		n += v
	}
	return n
}

// Seen is how many requests arrived.
func (c Counts) Seen() int {
	n := 0
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// Add returns the sum of c and o.
func (c Counts) Add(o Counts) Counts {
	out := Counts{Requests: map[string]int{}, Injected: map[Kind]map[string]int{}}
	for _, x := range []Counts{c, o} {
		for op, n := range x.Requests {
			out.Requests[op] += n
		}
		for k, m := range x.Injected {
			if out.Injected[k] == nil {
				out.Injected[k] = map[string]int{}
			}
			for op, n := range m {
				out.Injected[k][op] += n
			}
		}
	}
	return out
}

// String renders the counts as a table: one line per operation, with the
// requests seen and the faults of each kind, then the totals.
func (c Counts) String() string {
	ops := make([]string, 0, len(c.Requests))
	for op := range c.Requests {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	kinds := Kinds
	if c.Total(Stall) > 0 {
		kinds = append(kinds[:len(kinds):len(kinds)], Stall)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-26s %8s", "operation", "requests")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %12s", k)
	}
	b.WriteByte('\n')
	line := func(name string, seen int, n func(Kind) int) {
		fmt.Fprintf(&b, "%-26s %8d", name, seen)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %12d", n(k))
		}
		b.WriteByte('\n')
	}
	for _, op := range ops {
		line(op, c.Requests[op], func(k Kind) int { return c.Injected[k][op] })
	}
	line("total", c.Seen(), c.Total)
	return b.String()
}
