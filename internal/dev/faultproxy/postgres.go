package faultproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// PostgresConfig configures a PostgreSQL proxy: a TCP proxy that reads the
// PostgreSQL wire protocol (version 3) between a client and one server and
// injects faults per round trip.
//
// A round trip is what a client sends up to a point where it waits for the
// server: a simple query ('Q') or an extended-protocol run ending in Sync
// ('S'). The proxy holds the round trip's messages until that point, then
// draws its fault:
//
//   - Reset: the client's connection is reset and the server's closed
//     before anything of the round trip is forwarded. The server rolls back
//     the session's open transaction: not applied. Round trips the client
//     pipelined before it are answered first (they were forwarded).
//   - Drop: the round trip is forwarded and the server's whole answer read,
//     through its ReadyForQuery, and then the client's connection is reset
//     instead of answering. A statement outside a transaction (or a COMMIT)
//     has committed: the answer is lost after the commit.
//     A round trip the client pipelined behind it is not forwarded.
//   - Stall: nothing is forwarded and nothing answered until the client
//     gives up and closes (its context's deadline), or the proxy closes;
//     then the server's connection is closed: not applied.
//   - Latency: the round trip waits before it is forwarded, on top of any
//     other fault.
//
// ServerError and Throttle are HTTP faults and must be 0.
type PostgresConfig struct {
	// Target is the server's host:port (required).
	Target string
	// Seed seeds every decision (default 0).
	Seed uint64
	// Rates apply to every operation not in Operations (default: no
	// fault).
	Rates Rates
	// Operations overrides Rates per operation, as Operation names them;
	// default none.
	Operations map[string]Rates
	// Operation names a round trip's operation from the SQL of the first
	// statement it executes. Default: PostgresOperation. A round trip that
	// executes no statement is not named by it: one that parses or
	// describes (the first use of a statement on a connection by a driver
	// that caches statements, pgx's default for instance) is
	// PostgresPrepare, one with nothing at all (a bare Sync)
	// "SYNC". So the n-th execution of an operation draws the same fault
	// whether or not its connection had the statement prepared, and a Drop
	// of an operation's round trip is always one that executed it.
	Operation func(sql string) string
	// MinLatency and MaxLatency bound an injected delay, with Config's
	// defaults.
	MinLatency, MaxLatency time.Duration
	// Sleep waits for an injected delay (tests replace it); by default a
	// timer that the end of ctx cuts short.
	Sleep func(ctx context.Context, d time.Duration) error
	// Hold picks the one round trip to hold until Release (pghold.go):
	// asked for each round trip that executes a statement, with its
	// operation, the SQL it executes first and its first Bind's
	// parameters (nil for a simple query), until it first says yes.
	// Default nil: none is held.
	Hold func(operation, sql string, args []string) bool
}

// Validate reports the first setting NewPostgres cannot run with, naming it.
func (c PostgresConfig) Validate() error {
	if _, _, err := net.SplitHostPort(c.Target); err != nil || c.Target == "" {
		return fmt.Errorf("%w: Target %q is not host:port", ErrInvalidConfig, c.Target)
	}
	unsupported := func(r Rates) map[Kind]float64 {
		return map[Kind]float64{ServerError: r.ServerError, Throttle: r.Throttle}
	}
	if err := c.Rates.validate("Rates", unsupported(c.Rates)); err != nil {
		return err
	}
	for op, r := range c.Operations {
		if err := r.validate("Operations["+op+"]", unsupported(r)); err != nil {
			return err
		}
	}
	return Config{Service: DynamoDB, Target: "http://x", MinLatency: c.MinLatency, MaxLatency: c.MaxLatency}.Validate()
}

// PostgresPrepare is the operation of a round trip that parses or
// describes statements and executes none: it applies nothing, so a fault
// there never loses a commit's answer.
const PostgresPrepare = "PREPARE"

// PostgresOperation is the default operation of a round trip: the first
// keyword of its SQL, upper case, after any leading blanks and comments
// ("UPDATE", "WITH", "BEGIN", "COMMIT"); "SYNC" for a round trip without
// SQL.
func PostgresOperation(sql string) string {
	s := sql
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return "SYNC"
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return "SYNC"
			}
			s = s[i+2:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
			if end < 0 {
				end = len(s)
			}
			if end == 0 {
				return "SYNC"
			}
			return strings.ToUpper(s[:end])
		}
	}
}

// PostgresProxy is a running PostgreSQL proxy.
type PostgresProxy struct {
	// Addr is the proxy's host:port on 127.0.0.1: what clients connect to
	// instead of the server.
	Addr string

	cfg PostgresConfig
	ln  net.Listener
	ledger

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	connsMu   sync.Mutex
	conns     map[net.Conn]struct{}

	holding    holding[pgHeld] // the round trip PostgresConfig.Hold picks, until Release
	heldMu     sync.Mutex
	heldClient net.Conn // its caller's connection while it waits; guarded by heldMu
}

// NewPostgres starts a PostgreSQL proxy on a free port of 127.0.0.1 that
// forwards to cfg.Target. Close stops it.
func NewPostgres(cfg PostgresConfig) (*PostgresProxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lat := Config{MinLatency: cfg.MinLatency, MaxLatency: cfg.MaxLatency}
	cfg.MinLatency, cfg.MaxLatency = lat.latencyBounds()
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Operation == nil {
		cfg.Operation = PostgresOperation
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &PostgresProxy{
		Addr: ln.Addr().String(), cfg: cfg, ln: ln, closing: make(chan struct{}), conns: map[net.Conn]struct{}{},
		ledger: newLedger(cfg.Seed, cfg.Rates, cfg.Operations, cfg.MinLatency, cfg.MaxLatency),
	}
	p.wg.Go(p.accept)
	return p, nil
}

// Close stops accepting and closes every connection, client's and
// server's; a stalled round trip is never forwarded. A second Close
// waits for the first and returns nil.
func (p *PostgresProxy) Close() error {
	first := false
	p.closeOnce.Do(func() { close(p.closing); first = true })
	if !first {
		p.wg.Wait()
		return nil
	}
	err := p.ln.Close()
	p.resetHeldClient()
	p.connsMu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.connsMu.Unlock()
	p.wg.Wait()
	return err
}

func (p *PostgresProxy) track(c net.Conn) bool {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	select {
	case <-p.closing:
		_ = c.Close()
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *PostgresProxy) untrack(c net.Conn) {
	p.connsMu.Lock()
	delete(p.conns, c)
	p.connsMu.Unlock()
	_ = c.Close()
}

func (p *PostgresProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.session(c) })
	}
}

// session proxies one client connection.
func (p *PostgresProxy) session(client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.cfg.Target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	s := &pgSession{p: p, client: client, server: server, cin: bufio.NewReader(client), sin: bufio.NewReader(server),
		stmts: map[string]string{}, parses: map[string][]byte{}}
	s.answered.L = &s.mu
	if err := s.startup(); err != nil {
		return
	}
	done := make(chan struct{})
	p.wg.Go(func() {
		defer close(done)
		defer s.answersEnded()
		s.answers()
	})
	s.requests()
	_ = server.Close()
	_ = client.Close()
	<-done
}

// pgSession is one client's connection and its server connection.
type pgSession struct {
	p              *PostgresProxy
	client, server net.Conn
	cin, sin       *bufio.Reader

	stmts   map[string]string // prepared statements' SQL by name ("" the unnamed one)
	parses  map[string][]byte // the Parse message of each prepared statement, by name
	started []byte            // the client's startup message, as it came
	portals map[string]string // portals' statement names

	mu       sync.Mutex
	answered sync.Cond // signalled when pending empties or answers ends
	pending  []Kind    // the fault of each round trip forwarded and not yet answered, in order
	ended    bool      // answers has returned
}

// The protocol's special startup codes.
const (
	pgSSLRequest    = 80877103
	pgGSSEncRequest = 80877104
	pgCancelRequest = 80877102
	pgMaxMessage    = 1 << 30
)

// startup passes the startup message through, refusing encryption for the
// server ('N': the client goes on in plain text, or gives up if it
// requires TLS), so that the proxy can read what follows.
func (s *pgSession) startup() error {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(s.cin, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 8 || n > 10000 {
			return fmt.Errorf("faultproxy: startup message of %d bytes", n)
		}
		rest := make([]byte, n-8)
		if _, err := io.ReadFull(s.cin, rest); err != nil {
			return err
		}
		switch binary.BigEndian.Uint32(hdr[4:]) {
		case pgSSLRequest, pgGSSEncRequest:
			if _, err := s.client.Write([]byte{'N'}); err != nil {
				return err
			}
			continue
		case pgCancelRequest:
			_, err := s.server.Write(append(hdr[:], rest...))
			return errors.Join(err, errors.New("faultproxy: cancel request passed on"))
		}
		s.started = append(hdr[:], rest...)
		_, err := s.server.Write(s.started)
		return err
	}
}

// readMessage reads one typed message: its type, and the whole message as
// it came (type, length, body).
func readMessage(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > pgMaxMessage {
		return 0, nil, fmt.Errorf("faultproxy: message %q of %d bytes", hdr[0], n)
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// cstrings splits a message body into its NUL-terminated strings.
func cstrings(body []byte) []string {
	var out []string
	for len(body) > 0 {
		i := 0
		for i < len(body) && body[i] != 0 {
			i++
		}
		out = append(out, string(body[:i]))
		if i == len(body) {
			break
		}
		body = body[i+1:]
	}
	return out
}

// requests reads the client's messages, holds each round trip until its
// end, and then applies its fault. It returns when either side is gone or
// a fault ended the session.
func (s *pgSession) requests() {
	var held []byte
	var sql string    // the SQL the round trip executes first
	var prepares bool // it parses or describes a statement
	var rt pgRoundTrip
	if s.portals == nil {
		s.portals = map[string]string{}
	}
	for {
		typ, msg, err := readMessage(s.cin)
		if err != nil {
			return
		}
		held = append(held, msg...)
		body := msg[5:]
		switch typ {
		case 'P': // Parse: name, query, ...
			if f := cstrings(body); len(f) >= 2 {
				s.stmts[f[0]] = f[1]
				s.parses[f[0]] = msg
				rt.parsed = append(rt.parsed, f[0])
			}
			prepares = true
			continue
		case 'B': // Bind: portal, statement, ...
			if f := cstrings(body); len(f) >= 2 {
				s.portals[f[0]] = f[1]
				rt.bind(f[1], body)
			}
			continue
		case 'E': // Execute: portal, row limit
			if f := cstrings(body); len(f) >= 1 && sql == "" {
				sql = s.stmts[s.portals[f[0]]]
			}
			continue
		case 'Q': // a simple query: a round trip of its own
			if f := cstrings(body); len(f) >= 1 {
				sql = f[0]
			}
		case 'S': // Sync: the end of an extended-protocol round trip
		case 'X': // Terminate
			_, _ = s.server.Write(held)
			return
		case 'D': // Describe: a statement's or a portal's
			prepares = true
			continue
		default: // Close, Flush, CopyData...: on with the round trip
			if typ == 'H' || typ == 'd' || typ == 'c' || typ == 'f' || typ == 'p' {
				// Flush, COPY data and the authentication exchange's
				// answers ('p') want no Sync before the server answers:
				// pass them on as they are, without a fault.
				if _, err := s.server.Write(held); err != nil {
					return
				}
				held = held[:0]
			}
			continue
		}
		op := "SYNC"
		switch {
		case sql != "":
			op = s.p.cfg.Operation(sql)
		case prepares:
			op = PostgresPrepare
		}
		if sql != "" && s.hold(op, sql, &rt, held) {
			return
		}
		if !s.roundTrip(op, held) {
			return
		}
		held, sql, prepares, rt = held[:0], "", false, pgRoundTrip{}
	}
}

// roundTrip applies op's fault to the held messages of one round trip;
// false ends the session.
func (s *pgSession) roundTrip(op string, held []byte) bool {
	d := s.p.decide(op)
	if d.delay > 0 {
		ctx, cancel := s.untilClosed()
		err := s.p.cfg.Sleep(ctx, d.delay)
		cancel()
		if err != nil {
			return false
		}
	}
	switch d.fault {
	case Reset:
		s.awaitAnswers()
		resetConn(s.client)
		return false
	case Stall:
		// Wait for the client to give up (a read that ends) or the proxy to
		// close; nothing is forwarded.
		_, _ = io.Copy(io.Discard, s.cin)
		return false
	}
	// Behind a dropped answer the session ends at that answer's
	// ReadyForQuery: a round trip the client pipelined after it is not
	// forwarded (not applied), rather than applied or not as fast as the
	// server reads it before the proxy closes the connection.
	s.mu.Lock()
	behindDrop := slices.Contains(s.pending, Drop)
	if !behindDrop {
		s.pending = append(s.pending, d.fault)
	}
	s.mu.Unlock()
	if behindDrop {
		return true
	}
	_, err := s.server.Write(held)
	return err == nil
}

// awaitAnswers waits until every round trip forwarded has been answered
// (or the answers can no longer come): a round trip the client pipelined
// before a reset one was forwarded, and is applied; closing the server's
// connection with its answer unread would send the server a TCP reset that
// may undo it, as fast as the server was.
func (s *pgSession) awaitAnswers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 && !s.ended {
		s.answered.Wait()
	}
}

// answersEnded records that answers has returned, waking awaitAnswers.
func (s *pgSession) answersEnded() {
	s.mu.Lock()
	s.ended = true
	s.answered.Broadcast()
	s.mu.Unlock()
}

// untilClosed is a context that ends when the proxy closes.
func (s *pgSession) untilClosed() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.p.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// answers passes the server's messages to the client; a round trip marked
// Drop has its answer read through its ReadyForQuery and then the client's
// connection is reset instead.
func (s *pgSession) answers() {
	w := bufio.NewWriter(s.client)
	var buffered bool // the answer being read belongs to a dropped round trip
	for {
		typ, msg, err := readMessage(s.sin)
		if err != nil {
			_ = w.Flush()
			_ = s.client.Close()
			return
		}
		s.mu.Lock()
		dropping := len(s.pending) > 0 && s.pending[0] == Drop
		s.mu.Unlock()
		// A CopyInResponse (or CopyBothResponse) is what a client waits for
		// before it sends a COPY's rows: the round trip cannot reach its
		// commit without it, so it passes even when the answer is dropped.
		buffered = dropping && typ != 'G' && typ != 'W'
		if !buffered {
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
		if typ != 'Z' { // not ReadyForQuery: more of the answer follows
			if s.sin.Buffered() == 0 && !buffered {
				if err := w.Flush(); err != nil {
					return
				}
			}
			continue
		}
		s.mu.Lock()
		if len(s.pending) > 0 {
			s.pending = s.pending[1:]
		}
		if len(s.pending) == 0 {
			s.answered.Broadcast()
		}
		s.mu.Unlock()
		if buffered {
			_ = w.Flush() // what came before this round trip's answer
			resetConn(s.client)
			_ = s.server.Close()
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// resetConn ends c with a TCP reset.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
