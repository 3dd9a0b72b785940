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
	"strconv"
	"strings"
)

// PostgresReleased is the server's answer to a released round trip, read
// through its ReadyForQuery.
type PostgresReleased struct {
	// Tags are the CommandComplete tags, in order ("UPDATE 0",
	// "SELECT 1").
	Tags []string
	// Rows are the DataRow messages' values as the server sent them: text,
	// or the binary format's bytes when the Bind asked for it (a bool is
	// then one byte, 0 or 1); a NULL is nil.
	Rows [][][]byte
	// Err is the server's ErrorResponse, or why the round trip could not
	// be sent or its answer read.
	Err error
}

// RowsAffected is the number ending the last tag (an UPDATE's rows, a
// SELECT's), or -1 if there is none.
func (r PostgresReleased) RowsAffected() int64 {
	if len(r.Tags) == 0 {
		return -1
	}
	tag := r.Tags[len(r.Tags)-1]
	n, err := strconv.ParseInt(tag[strings.LastIndexByte(tag, ' ')+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// pgHeld is the round trip Hold picked: what a connection of the proxy's
// own sends to replay it.
type pgHeld struct {
	startup []byte // the caller's startup message: the same user and database
	msgs    []byte // the round trip, behind the Parse of each statement it binds and does not parse
}

// pgRoundTrip is what the proxy reads of a round trip's Parse and Bind
// messages, for Hold and for a release on another connection.
type pgRoundTrip struct {
	parsed []string // statements it parses
	bound  []string // statements it binds
	args   []string // its first Bind's parameters
	binds  int
}

// bind records a Bind of statement stmt; body is the Bind's body.
func (rt *pgRoundTrip) bind(stmt string, body []byte) {
	rt.bound = append(rt.bound, stmt)
	if rt.binds++; rt.binds == 1 {
		rt.args = bindArgs(body)
	}
}

// bindArgs decodes a Bind's parameter values (after the portal's and the
// statement's names, the format codes): each as its bytes, the text of a
// text-format value; "" for NULL. A malformed Bind gives what it could read.
func bindArgs(body []byte) []string {
	for range 2 { // the portal's and the statement's names
		i := slices.Index(body, 0)
		if i < 0 {
			return nil
		}
		body = body[i+1:]
	}
	if len(body) < 2 {
		return nil
	}
	formats := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+2*formats+2 {
		return nil
	}
	body = body[2+2*formats:]
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	args := make([]string, 0, n)
	for range n {
		if len(body) < 4 {
			return args
		}
		size := int32(binary.BigEndian.Uint32(body)) //nolint:gosec // the protocol's signed length, -1 for NULL
		body = body[4:]
		if size < 0 {
			args = append(args, "")
			continue
		}
		if int(size) > len(body) {
			return args
		}
		args = append(args, string(body[:size]))
		body = body[size:]
	}
	return args
}

// hold reports whether Hold picks the round trip; if so it keeps it for
// Release (counted as seen: it draws no fault), answers nothing, and waits
// for the caller to give up or the proxy to close. True ends the session.
func (s *pgSession) hold(op, sql string, rt *pgRoundTrip, msgs []byte) bool {
	p := s.p
	if p.cfg.Hold == nil || !p.holding.pick(func() bool { return p.cfg.Hold(op, sql, rt.args) }) {
		return false
	}
	p.seen(op)

	// On the proxy's own connection no statement is prepared: the Parse of
	// each statement the round trip binds goes first.
	var replay []byte
	for _, name := range rt.bound {
		if parse, ok := s.parses[name]; ok && !slices.Contains(rt.parsed, name) {
			replay = append(replay, parse...)
		}
	}
	replay = append(replay, msgs...)
	// What the caller pipelined before it is answered first.
	s.awaitAnswers()
	p.holding.keep(&pgHeld{startup: slices.Clone(s.started), msgs: replay})
	p.heldMu.Lock()
	p.heldClient = s.client
	p.heldMu.Unlock()
	select {
	case <-p.closing:
		p.resetHeldClient()
	default:
	}
	_, _ = io.Copy(io.Discard, s.cin) // until the caller gives up, or Close
	p.heldMu.Lock()
	if p.heldClient == s.client {
		p.heldClient = nil
	}
	p.heldMu.Unlock()
	return true
}

// resetHeldClient resets the connection of a held round trip's caller, if
// it still waits: Close's answer to it.
func (p *PostgresProxy) resetHeldClient() {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	if p.heldClient != nil {
		resetConn(p.heldClient)
		p.heldClient = nil
	}
}

// Held reports whether the round trip Hold picked is waiting for
// Release.
func (p *PostgresProxy) Held() bool {
	return p.holding.has()
}

// Release sends the held round trip to the server now, on a connection of
// the proxy's own that starts as its caller's did (the same user and
// database; the server must not ask for a password, as the local stack's
// does not), and returns the server's answer: a statement that arrives
// after its sender has gone, as from a slow network. It runs outside any
// transaction its caller had open. ErrNothingHeld if none is held.
func (p *PostgresProxy) Release(ctx context.Context) PostgresReleased {
	h := p.holding.take()
	if h == nil {
		return PostgresReleased{Err: ErrNothingHeld}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.cfg.Target)
	if err != nil {
		return PostgresReleased{Err: fmt.Errorf("faultproxy: release: %w", err)}
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	r := bufio.NewReader(conn)
	if _, err := conn.Write(h.startup); err != nil {
		return PostgresReleased{Err: fmt.Errorf("faultproxy: release: %w", err)}
	}
	if got := readAnswer(r); got.Err != nil {
		return PostgresReleased{Err: fmt.Errorf("faultproxy: release: start: %w", got.Err)}
	}
	if _, err := conn.Write(h.msgs); err != nil {
		return PostgresReleased{Err: fmt.Errorf("faultproxy: release: %w", err)}
	}
	got := readAnswer(r)
	_, _ = conn.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
	return got
}

// readAnswer reads the server's messages through ReadyForQuery. An
// authentication request other than AuthenticationOk is an error: the
// proxy has no password to give.
func readAnswer(r *bufio.Reader) PostgresReleased {
	var got PostgresReleased
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return PostgresReleased{Tags: got.Tags, Rows: got.Rows, Err: errors.Join(got.Err, err)}
		}
		body := msg[5:]
		switch typ {
		case 'R':
			if len(body) < 4 || binary.BigEndian.Uint32(body) != 0 {
				return PostgresReleased{Err: errors.New("the server asks for a password")}
			}
		case 'C':
			if f := cstrings(body); len(f) > 0 {
				got.Tags = append(got.Tags, f[0])
			}
		case 'D':
			got.Rows = append(got.Rows, dataRow(body))
		case 'E':
			got.Err = errors.Join(got.Err, serverError(body))
		case 'Z':
			return got
		}
	}
}

// dataRow decodes a DataRow's values; a NULL is nil.
func dataRow(body []byte) [][]byte {
	if len(body) < 2 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	row := make([][]byte, 0, n)
	for range n {
		if len(body) < 4 {
			return row
		}
		size := int32(binary.BigEndian.Uint32(body)) //nolint:gosec // the protocol's signed length, -1 for NULL
		body = body[4:]
		if size < 0 {
			row = append(row, nil)
			continue
		}
		if int(size) > len(body) {
			return row
		}
		row = append(row, slices.Clone(body[:size]))
		body = body[size:]
	}
	return row
}

// serverError is an ErrorResponse as an error: its severity, SQLSTATE and
// message.
func serverError(body []byte) error {
	fields := map[byte]string{}
	for len(body) > 1 && body[0] != 0 {
		code := body[0]
		i := slices.Index(body[1:], 0)
		if i < 0 {
			break
		}
		fields[code] = string(body[1 : 1+i])
		body = body[2+i:]
	}
	return fmt.Errorf("faultproxy: the server: %s: %s (SQLSTATE %s)", fields['S'], fields['M'], fields['C'])
}
