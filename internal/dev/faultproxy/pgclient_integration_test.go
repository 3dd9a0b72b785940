//go:build integration

package faultproxy_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// pgRig is a database of its own, a proxy in front of its server, a pool
// through the proxy, and a direct pool that sees what was applied.
type pgRig struct {
	proxy  *faultproxy.PostgresProxy
	direct *sql.DB
	via    pgwire.Config // connects through the proxy
	pool   *sql.DB       // on via; keeps no idle session, so each connect opens one
}

func newPGRig(t *testing.T, cfg faultproxy.PostgresConfig) *pgRig {
	t.Helper()
	db := pgtest.Config(t)
	port := db.Port
	if port == 0 {
		port = pgwire.DefaultPort
	}
	cfg.Target = net.JoinHostPort(db.Host, strconv.Itoa(port))
	p, err := faultproxy.NewPostgres(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	direct := sql.OpenDB(pgtest.Connector(t, db))
	direct.SetMaxOpenConns(2)
	t.Cleanup(func() { _ = direct.Close() })
	_, err = direct.ExecContext(t.Context(), `CREATE TABLE t (id int PRIMARY KEY)`)
	require.NoError(t, err)
	via := db
	host, pn, err := net.SplitHostPort(p.Addr)
	require.NoError(t, err)
	via.Host = host
	via.Port, err = strconv.Atoi(pn)
	require.NoError(t, err)
	pool := sql.OpenDB(pgtest.Connector(t, via))
	pool.SetMaxIdleConns(0)
	t.Cleanup(func() { _ = pool.Close() })
	return &pgRig{proxy: p, direct: direct, via: via, pool: pool}
}

// connect opens a session of the functions' driver through the proxy.
func (r *pgRig) connect(t *testing.T) *sql.Conn {
	t.Helper()
	c, err := r.pool.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (r *pgRig) applied(t *testing.T, id int) bool {
	t.Helper()
	var n int
	require.NoError(t, r.direct.QueryRowContext(t.Context(), `SELECT count(*) FROM t WHERE id = $1`, id).Scan(&n))
	return n == 1
}

// pgClient runs a statement through the proxy as one kind of driver does,
// and returns its error.
type pgClient interface {
	exec(ctx context.Context, sql string, args ...any) error
	close()
}

// The kinds of driver a proxy must serve, by what they send:
//   - extended: the functions' driver (pgwire) with arguments, the unnamed
//     statement's Parse, Bind, Describe, Execute and Sync in one round trip;
//   - simple: the same driver without arguments (the values written into
//     the SQL as literals, as pgx's simple protocol mode does): a 'Q';
//   - cached: a driver that caches statements (pgx's default, for
//     instance), which pgwire never is: a connection's first use of a
//     statement is a round trip that only prepares it (Parse of a named
//     statement, Describe, Sync), then each use binds it (Bind, Describe,
//     Execute, Sync). Written here on the protocol (rawFrontend).
const (
	extended = "extended"
	simple   = "simple"
	cached   = "cached"
)

// client opens a new session through the proxy that runs statements as
// mode says.
func (r *pgRig) client(t *testing.T, mode string) pgClient {
	t.Helper()
	switch mode {
	case extended, simple:
		return sqlClient{c: r.connect(t), literal: mode == simple}
	case cached:
		return &cachingClient{f: dialRaw(t, r.proxy.Addr, r.via), names: map[string]string{}}
	}
	t.Fatalf("no client mode %q", mode)
	return nil
}

// sqlClient runs statements on a session of the functions' driver.
type sqlClient struct {
	c       *sql.Conn
	literal bool // the arguments are written into the SQL: the simple protocol
}

func (s sqlClient) exec(ctx context.Context, query string, args ...any) error {
	if s.literal {
		_, err := s.c.ExecContext(ctx, withLiterals(query, args))
		return err
	}
	_, err := s.c.ExecContext(ctx, query, args...)
	return err
}

func (s sqlClient) close() { _ = s.c.Close() }

// withLiterals writes args into query in place of $1, $2, …: integers as
// they are, strings quoted.
func withLiterals(query string, args []any) string {
	for i := len(args); i > 0; i-- { // $10 before $1
		var lit string
		switch a := args[i-1].(type) {
		case int:
			lit = strconv.Itoa(a)
		case string:
			lit = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		default:
			panic(fmt.Sprintf("withLiterals: %T", a))
		}
		query = strings.ReplaceAll(query, "$"+strconv.Itoa(i), lit)
	}
	return query
}

// cachingClient is a driver that caches statements: it prepares each
// statement once per connection, in a round trip of its own, under a name.
type cachingClient struct {
	f     *rawFrontend
	names map[string]string // statement names by SQL
}

func (c *cachingClient) exec(ctx context.Context, query string, args ...any) error {
	stop := c.f.watch(ctx)
	err := c.run(query, args)
	stop()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

func (c *cachingClient) run(query string, args []any) error {
	name, ok := c.names[query]
	if !ok {
		name = "stmt_" + strconv.Itoa(len(c.names)+1)
		if err := c.f.roundTrip(pgParse(name, query), pgDescribe('S', name), pgSync()); err != nil {
			return err
		}
		c.names[query] = name
	}
	text := make([]string, len(args))
	for i, a := range args {
		text[i] = fmt.Sprint(a)
	}
	return c.f.roundTrip(pgBind("", name, text...), pgDescribe('P', ""), pgExecute(""), pgSync())
}

func (c *cachingClient) close() { _ = c.f.conn.Close() }

// rawFrontend is a client of the PostgreSQL protocol written message by
// message: for what no driver of ours sends (a statement prepared in a
// round trip of its own, pipelined round trips, COPY).
type rawFrontend struct {
	conn net.Conn
	r    *bufio.Reader
	addr string
	key  []byte // the session's BackendKeyData (process id, secret key), for a CancelRequest
}

// dialRaw connects to addr and starts a session as cfg's user on its
// database, without TLS or password (the local server trusts 127.0.0.1).
// Every read and write is bounded by 5 s.
func dialRaw(t *testing.T, addr string, cfg pgwire.Config) *rawFrontend {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	f := &rawFrontend{conn: conn, r: bufio.NewReader(conn), addr: addr}
	var startup []byte
	startup = binary.BigEndian.AppendUint32(startup, 0)
	startup = binary.BigEndian.AppendUint32(startup, 3<<16) // protocol 3.0
	for _, s := range []string{"user", cfg.User, "database", cfg.Database, ""} {
		startup = append(append(startup, s...), 0)
	}
	binary.BigEndian.PutUint32(startup, uint32(len(startup))) //nolint:gosec // a few bytes
	require.NoError(t, f.send(startup))
	require.NoError(t, f.untilReady(), "start-up")
	return f
}

// watch ends f's reads and writes when ctx ends (so that an error then is
// ctx's), and after 10 s in any case; the returned stop is
// context.AfterFunc's.
func (f *rawFrontend) watch(ctx context.Context) func() bool {
	_ = f.conn.SetDeadline(time.Now().Add(10 * time.Second))
	return context.AfterFunc(ctx, func() { _ = f.conn.SetDeadline(time.Unix(1, 0)) })
}

// send writes msgs in one write.
func (f *rawFrontend) send(msgs ...[]byte) error {
	_, err := f.conn.Write(joinMsgs(msgs))
	return err
}

func joinMsgs(msgs [][]byte) []byte {
	var all []byte
	for _, m := range msgs {
		all = append(all, m...)
	}
	return all
}

// receive reads one message: its type and body.
func (f *rawFrontend) receive() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<20 {
		return 0, nil, fmt.Errorf("message %q of %d bytes", hdr[0], n)
	}
	body := make([]byte, n-4)
	_, err := io.ReadFull(f.r, body)
	return hdr[0], body, err
}

// untilReady reads through ReadyForQuery and returns the first
// ErrorResponse, or why the answer could not be read. An authentication
// request other than AuthenticationOk is an error.
func (f *rawFrontend) untilReady() error {
	var failed error
	for {
		typ, body, err := f.receive()
		if err != nil {
			return errors.Join(failed, err)
		}
		switch typ {
		case 'R':
			if len(body) < 4 || binary.BigEndian.Uint32(body) != 0 {
				return errors.New("the server asks for a password")
			}
		case 'E':
			if failed == nil {
				failed = fmt.Errorf("the server: %q", body)
			}
		case 'K':
			f.key = body
		case 'Z':
			return failed
		}
	}
}

// cancel sends a CancelRequest for f's session on a connection of its
// own to the same address, as a driver does when a call's context ends
// (pgx does): the server cancels what the session is running then.
func (f *rawFrontend) cancel() error {
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	req := binary.BigEndian.AppendUint32(nil, uint32(8+len(f.key))) //nolint:gosec // 16 bytes
	req = binary.BigEndian.AppendUint32(req, 80877102)              // the CancelRequest code
	_, err = c.Write(append(req, f.key...))
	return err
}

// roundTrip sends msgs and reads their answer through ReadyForQuery.
func (f *rawFrontend) roundTrip(msgs ...[]byte) error {
	if err := f.send(msgs...); err != nil {
		return err
	}
	return f.untilReady()
}

// pgMsg is a frontend message of type typ with body's parts.
func pgMsg(typ byte, parts ...[]byte) []byte {
	body := joinMsgs(parts)
	msg := binary.BigEndian.AppendUint32([]byte{typ}, uint32(4+len(body))) //nolint:gosec // a test's small messages
	return append(msg, body...)
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func pgQuery(query string) []byte { return pgMsg('Q', cstr(query)) }

// pgParse parses query as statement name, every parameter's type inferred.
func pgParse(name, query string) []byte { return pgMsg('P', cstr(name), cstr(query), []byte{0, 0}) }

// pgBind binds statement stmt to portal with text arguments, results in
// text.
func pgBind(portal, stmt string, args ...string) []byte {
	var b []byte
	// Every parameter in text (no format codes), then the values.
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(args))) //nolint:gosec // a test's few arguments
	for _, a := range args {
		b = binary.BigEndian.AppendUint32(b, uint32(len(a))) //nolint:gosec // a test's short values
		b = append(b, a...)
	}
	b = append(b, 0, 0) // every result in text
	return pgMsg('B', cstr(portal), cstr(stmt), b)
}

// pgDescribe describes a statement ('S') or a portal ('P').
func pgDescribe(kind byte, name string) []byte { return pgMsg('D', []byte{kind}, cstr(name)) }

// pgExecute runs portal to its end.
func pgExecute(portal string) []byte { return pgMsg('E', cstr(portal), []byte{0, 0, 0, 0}) }

func pgSync() []byte { return pgMsg('S') }

func pgCopyData(data string) []byte { return pgMsg('d', []byte(data)) }

func pgCopyDone() []byte { return pgMsg('c') }
