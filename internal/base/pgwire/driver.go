package pgwire

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// ErrCommitRolledBack is a COMMIT the server answered with ROLLBACK: the
// transaction had failed, and nothing of it was kept.
var ErrCommitRolledBack = errors.New("pgwire: commit: the transaction had failed and was rolled back")

// Connector opens connections with one Config; sql.OpenDB(NewConnector(cfg))
// is a pool.
type Connector struct{ cfg Config }

// NewConnector returns a Connector for cfg, or cfg's problem.
func NewConnector(cfg Config) (*Connector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Connector{cfg: cfg}, nil
}

// Open returns a pool on the server dsn names (ParseDSN).
func Open(dsn string) (*sql.DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// Connect opens one session.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := connect(ctx, &c.cfg)
	if err != nil {
		return nil, err
	}
	return &Conn{c: cn}, nil
}

// Driver returns the Driver, which opens a connection string.
func (c *Connector) Driver() driver.Driver { return Driver{} }

// Driver opens connections from connection strings (ParseDSN), for
// sql.Register; fifoworker's own code uses a Connector.
type Driver struct{}

// Open opens one session on the server dsn names.
func (Driver) Open(dsn string) (driver.Conn, error) {
	c, err := Driver{}.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector returns a Connector for dsn.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// Conn is one session, used by one goroutine at a time (database/sql's
// contract).
type Conn struct{ c *conn }

var (
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
)

// run runs query on the session with ctx watched: with arguments as the
// unnamed statement of the extended protocol, without through the simple
// protocol.
func (cn *Conn) run(ctx context.Context, query string, args []driver.NamedValue) (*result, error) {
	if cn.c.bad != nil {
		return nil, driver.ErrBadConn // nothing sent: database/sql retries on another connection
	}
	if cn.c.cfg.Trace != nil {
		cn.c.cfg.Trace(ctx, query)
	}
	var res *result
	err := cn.c.guard(ctx, func() error {
		var err error
		if len(args) == 0 {
			res, err = cn.c.simple(query)
		} else {
			res, err = cn.c.extended(query, args)
		}
		return err
	})
	return res, err
}

// ExecContext runs a statement (several, without arguments) and returns
// the rows its command tag counts.
func (cn *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := cn.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(res.rowsAffected()), nil
}

// QueryContext runs a statement and returns its rows, read whole.
func (cn *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		// One statement, as a query is: the extended protocol refuses
		// several, where the simple one would return the last's rows only.
		args = []driver.NamedValue{}
		if cn.c.bad != nil {
			return nil, driver.ErrBadConn
		}
		if cn.c.cfg.Trace != nil {
			cn.c.cfg.Trace(ctx, query)
		}
		var res *result
		err := cn.c.guard(ctx, func() error {
			var err error
			res, err = cn.c.extended(query, args)
			return err
		})
		if err != nil {
			return nil, err
		}
		return &rows{res: res}, nil
	}
	res, err := cn.run(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return &rows{res: res}, nil
}

// CheckNamedValue lets []string and []int64 through as arrays (the
// relay's ANY($1::text[])); every other value takes database/sql's
// default conversion. A named argument is refused: PostgreSQL's are
// numbered.
func (cn *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if nv.Name != "" {
		return fmt.Errorf("pgwire: named argument %q: statements take $1, $2, …", nv.Name)
	}
	switch nv.Value.(type) {
	case []string, []int64:
		return nil
	}
	return driver.ErrSkip
}

// BeginTx starts a transaction at opts' isolation level (the server's
// default when none), read only when opts says so.
func (cn *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	begin := "BEGIN"
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadUncommitted:
		begin += " ISOLATION LEVEL READ UNCOMMITTED"
	case sql.LevelReadCommitted:
		begin += " ISOLATION LEVEL READ COMMITTED"
	case sql.LevelRepeatableRead, sql.LevelSnapshot:
		begin += " ISOLATION LEVEL REPEATABLE READ"
	case sql.LevelSerializable:
		begin += " ISOLATION LEVEL SERIALIZABLE"
	default:
		return nil, fmt.Errorf("pgwire: isolation level %v is not supported", sql.IsolationLevel(opts.Isolation))
	}
	if opts.ReadOnly {
		begin += " READ ONLY"
	}
	if _, err := cn.run(ctx, begin, nil); err != nil {
		return nil, err
	}
	return &tx{cn: cn}, nil
}

// Begin starts a transaction at the server's default level.
func (cn *Conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

// PrepareContext returns a statement that runs query each time as the
// unnamed statement: no statement is prepared on the server.
func (cn *Conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return &stmt{cn: cn, query: query}, nil
}

// Prepare is PrepareContext.
func (cn *Conn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

// Ping sends an empty query.
func (cn *Conn) Ping(ctx context.Context) error {
	_, err := cn.run(ctx, "", nil)
	return err
}

// ResetSession refuses a broken session, one left in a transaction
// database/sql did not open, and one the server ended while it sat idle
// in the pool (nothing is sent on it, so database/sql runs the call on a
// new session): the pool drops it, and the server rolls a transaction
// back when the socket closes.
func (cn *Conn) ResetSession(context.Context) error {
	if cn.c.bad != nil || cn.c.tx != 'I' {
		return driver.ErrBadConn
	}
	if cn.c.r.Buffered() > 0 || endedWhileIdle(cn.c.raw) {
		cn.c.bad = errEndedWhileIdle
		_ = cn.c.nc.Close()
		return driver.ErrBadConn
	}
	return nil
}

// errEndedWhileIdle is why a session found ended in the pool is broken.
var errEndedWhileIdle = errors.New("pgwire: the server ended the session while it was idle")

// IsValid is false for a broken session.
func (cn *Conn) IsValid() bool { return cn.c.bad == nil }

// Close ends the session.
func (cn *Conn) Close() error { return cn.c.close() }

// tx is a transaction on a session.
type tx struct{ cn *Conn }

// Commit ends the transaction; ErrCommitRolledBack when it had failed.
func (t *tx) Commit() error {
	if t.cn.c.bad != nil {
		return fmt.Errorf("pgwire: commit: %w: %w", ErrBroken, t.cn.c.bad)
	}
	res, err := t.cn.run(context.Background(), "COMMIT", nil)
	if err != nil {
		return fmt.Errorf("pgwire: commit: %w", err)
	}
	if res.tag == "ROLLBACK" {
		return ErrCommitRolledBack
	}
	return nil
}

// Rollback ends the transaction, undoing it. On a broken session the
// server has rolled it back already.
func (t *tx) Rollback() error {
	if !t.cn.IsValid() {
		return nil // the socket is closed: the server ended the transaction with the session
	}
	_, err := t.cn.run(context.Background(), "ROLLBACK", nil)
	return err
}

// stmt is a query run as the unnamed statement at each execution.
type stmt struct {
	cn    *Conn
	query string
}

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return -1 }

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.cn.ExecContext(ctx, s.query, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.cn.QueryContext(ctx, s.query, args)
}

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error { return s.cn.CheckNamedValue(nv) }

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// rows walks a result read whole.
type rows struct {
	res  *result
	next int
}

func (r *rows) Columns() []string { return r.res.columns }
func (r *rows) Close() error      { r.next = len(r.res.rows); return nil }

func (r *rows) Next(dest []driver.Value) error {
	if r.next >= len(r.res.rows) {
		return io.EOF
	}
	copy(dest, r.res.rows[r.next])
	r.next++
	return nil
}
