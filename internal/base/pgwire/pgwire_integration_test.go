//go:build integration

package pgwire_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgcode"
	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// Each type the stores read and write goes to a real PostgreSQL 18 and
// back as the value it was: arguments inferred by the server from the
// statement's casts, results decoded by their column's type.
func TestValuesRoundTripThroughTheServer(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	at := time.Date(2026, 12, 2, 7, 36, 22, 123456000, time.FixedZone("", 5*3600+1800))
	var (
		i       int64
		f       float64
		b       bool
		s       string
		raw     []byte
		ts      time.Time
		null    sql.NullString
		doc     []byte
		day     time.Time
		num     string
		matched int64
	)
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT $1::bigint, $2::float8, $3::bool, $4::text, $5::bytea, $6::timestamptz,
		NULL::text, $7::text::jsonb, DATE '2026-12-02', 12.50::numeric,
		(SELECT count(*) FROM unnest($8::text[]) x WHERE x = ANY($9::text[]))`,
		int64(-1)<<62, 2.5, true, "é\"'\\", []byte{0, 1, 0xfe, 0xff}, at, `{"k": [1, "v"]}`,
		[]string{`a"b`, `c\d`, "e,f", "{g}", ""}, []string{`a"b`, `c\d`, "e,f", "{g}", ""}).
		Scan(&i, &f, &b, &s, &raw, &ts, &null, &doc, &day, &num, &matched))
	require.Equal(t, int64(-1)<<62, i)
	require.Equal(t, 2.5, f)
	require.True(t, b)
	require.Equal(t, "é\"'\\", s)
	require.Equal(t, []byte{0, 1, 0xfe, 0xff}, raw)
	require.True(t, at.Equal(ts), "%v", ts)
	require.False(t, null.Valid)
	require.JSONEq(t, `{"k": [1, "v"]}`, string(doc))
	require.True(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC).Equal(day))
	require.Equal(t, "12.50", num)
	require.Equal(t, int64(5), matched, "each element of the array arrived as it was")

	var nilIsNull, emptyIsNull bool
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT $1::bytea IS NULL, $2::bytea IS NULL`, []byte(nil), []byte{}).Scan(&nilIsNull, &emptyIsNull))
	require.True(t, nilIsNull, "a nil []byte is NULL")
	require.False(t, emptyIsNull, "an empty []byte is an empty bytea")

	var ids []int64
	rows, err := db.QueryContext(t.Context(), `SELECT x FROM unnest($1::bigint[]) x ORDER BY x`, []int64{3, -1, 2})
	require.NoError(t, err)
	for rows.Next() {
		var v int64
		require.NoError(t, rows.Scan(&v))
		ids = append(ids, v)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int64{-1, 2, 3}, ids)
}

// A server's error is *pgwire.Error with its SQLSTATE (what pgcode reads),
// and the connection that received it serves the next statement.
func TestAServersErrorLeavesTheConnectionUsable(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, `CREATE TABLE t (id text PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO t VALUES ($1)`, "a")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO t VALUES ($1)`, "a")
	var pe *pgwire.Error
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "23505", pe.Code)
	require.Equal(t, "t_pkey", pe.Constraint)
	require.True(t, pgcode.UniqueViolation(err))
	var n int64
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE id = $1`, "a").Scan(&n))
	require.Equal(t, int64(1), n)
	// A statement the server cannot parse, and one of two statements in a
	// query (the extended protocol takes one), are errors too.
	_, err = conn.QueryContext(ctx, `SELEC 1`)
	require.True(t, errors.As(err, &pe) && pe.Code == "42601", "%v", err)
	_, err = conn.QueryContext(ctx, `SELECT 1; SELECT 2`)
	require.True(t, errors.As(err, &pe) && pe.Code == "42601", "%v", err)
}

// Without arguments an Exec goes through the simple protocol, so a
// migration's several statements run in one call; its rows affected are
// the last statement's.
func TestAnExecWithoutArgumentsRunsSeveralStatements(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	res, err := db.ExecContext(t.Context(), `CREATE TABLE a (x int); INSERT INTO a VALUES (1), (2); UPDATE a SET x = x + 1`)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	// The second of three fails: the third never runs, and the first is
	// undone with it (the string is one implicit transaction).
	_, err = db.ExecContext(t.Context(), `INSERT INTO a VALUES (10); INSERT INTO nowhere VALUES (1); INSERT INTO a VALUES (11)`)
	code, _ := pgcode.Of(err)
	require.Equal(t, "42P01", code, "%v", err)
	var sum int64
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT sum(x) FROM a`).Scan(&sum))
	require.Equal(t, int64(2+3), sum, "a multi-statement string is one implicit transaction: none of it stays")
}

// A COMMIT of a transaction that failed is answered ROLLBACK: Commit says
// so, and nothing of it stays.
func TestCommitOfAFailedTransactionSaysRolledBack(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `CREATE TABLE t (id int PRIMARY KEY)`)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `INSERT INTO t VALUES ($1)`, 1)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `INSERT INTO t VALUES ($1)`, 1)
	require.Error(t, err)
	require.ErrorIs(t, tx.Commit(), pgwire.ErrCommitRolledBack)
	var n int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n))
	require.Zero(t, n)
}

// Transaction options reach the server: the isolation level and READ ONLY.
func TestTransactionOptions(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := t.Context()
	for level, want := range map[sql.IsolationLevel]string{
		sql.LevelDefault: "read committed", sql.LevelReadCommitted: "read committed",
		sql.LevelRepeatableRead: "repeatable read", sql.LevelSerializable: "serializable",
	} {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level, ReadOnly: true})
		require.NoError(t, err)
		var got, ro string
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')`).Scan(&got, &ro))
		require.Equal(t, want, got, level.String())
		require.Equal(t, "on", ro)
		require.NoError(t, tx.Rollback())
	}
	_, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelLinearizable})
	require.ErrorContains(t, err, "not supported")
}

// Params set the session at start-up, as the stores' tests under
// Repeatable Read need.
func TestParamsSetTheSession(t *testing.T) {
	t.Parallel()
	cfg := pgtest.Config(t)
	cfg.Params = map[string]string{"default_transaction_isolation": "repeatable read", "application_name": "pgwire-test"}
	db := sqlOpen(t, cfg)
	var level, app string
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_setting('transaction_isolation'), current_setting('application_name')`).Scan(&level, &app))
	require.Equal(t, "repeatable read", level)
	require.Equal(t, "pgwire-test", app)
}

// Trace sees each round trip: a transaction of one statement is three.
func TestTraceSeesEachRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := pgtest.Config(t)
	var seen []string
	var n atomic.Int64
	cfg.Trace = func(_ context.Context, q string) { n.Add(1); seen = append(seen, q) }
	db := sqlOpen(t, cfg)
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(t.Context(), `SELECT $1::int`, 1)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.Equal(t, []string{"BEGIN", "SELECT $1::int", "COMMIT"}, seen)
}

// backendPID is the server process behind conn.
func backendPID(t *testing.T, conn interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int64 {
	t.Helper()
	var pid int64
	require.NoError(t, conn.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	return pid
}

// A context that ends while a statement waits (here on a row lock) ends
// the call with the context's error and breaks that connection: the pool
// drops it and serves the next call on another session. What the call
// had sent is not withdrawn: the statement, once its lock is free, runs
// and commits, and its session ends when it finds the socket closed. An
// ended context loses the answer, not the write (as with pgx's default,
// which also only sets a deadline on the socket); the stores' fenced
// writes are built for such a lost answer.
func TestAnEndedContextLosesTheAnswerNotTheWrite(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(2)
	ctx := t.Context()
	_, err := db.ExecContext(ctx, `CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)`)
	require.NoError(t, err)
	holder, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, `UPDATE t SET v = v + $1 WHERE id = 1`, 1)
	require.NoError(t, err)

	waiter, err := db.Conn(ctx)
	require.NoError(t, err)
	pid := backendPID(t, waiter)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(wctx, `UPDATE t SET v = v + $1 WHERE id = 1`, 10)
		done <- err
	}()
	// Wait until the server shows the waiter blocked on the lock.
	for {
		var waiting int64
		require.NoError(t, holder.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, pid).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the waiter returned before it was cancelled: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	_, err = waiter.ExecContext(ctx, `SELECT 1`)
	require.ErrorIs(t, err, driver.ErrBadConn, "the session is broken, and says so before sending anything")
	_ = waiter.Close()
	require.NoError(t, holder.Commit())
	waitGone(t, db, pid)
	var v int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT v FROM t WHERE id = 1`).Scan(&v))
	require.Equal(t, int64(11), v, "the abandoned update ran once its lock was free")
}

// A session handed back to the pool inside a transaction it was not
// told of (a BEGIN by Exec) is not handed out again: the next call runs
// on another session, outside any transaction.
func TestASessionLeftInATransactionIsNotReused(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(1)
	ctx := t.Context()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	pid := backendPID(t, conn)
	_, err = conn.ExecContext(ctx, `BEGIN`)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	// SAVEPOINT outside a transaction block is refused (25P01).
	_, err = db.ExecContext(ctx, `SAVEPOINT s`)
	code, _ := pgcode.Of(err)
	require.Equal(t, "25P01", code, "the next call runs outside a transaction: %v", err)
	require.NotEqual(t, pid, backendPID(t, db))
}

// A server that is not there is an error naming its address.
func TestNoServer(t *testing.T) {
	t.Parallel()
	db, err := pgwire.Open("postgres://u@127.0.0.1:1/db?sslmode=disable")
	require.NoError(t, err, "Open dials nothing")
	defer func() { _ = db.Close() }()
	err = db.PingContext(t.Context())
	require.ErrorContains(t, err, "connect to 127.0.0.1:1")
}

// A session the server ends (pg_terminate_backend: an administrator's
// command) fails its next call with the server's reason, SQLSTATE 57P01,
// and is dropped: the pool's next call runs on a new session.
func TestASessionTheServerEndsIsDropped(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	db.SetMaxOpenConns(2)
	ctx := t.Context()
	victim, err := db.Conn(ctx)
	require.NoError(t, err)
	pid := backendPID(t, victim)
	var ok bool
	require.NoError(t, db.QueryRowContext(ctx, `SELECT pg_terminate_backend($1::int)`, pid).Scan(&ok))
	require.True(t, ok)
	waitGone(t, db, pid) // then the server's message has reached the socket
	_, err = victim.ExecContext(ctx, `SELECT $1::int`, 1)
	code, _ := pgcode.Of(err)
	require.Equal(t, "57P01", code, "%v", err)
	_, err = victim.ExecContext(ctx, `SELECT $1::int`, 1)
	require.ErrorIs(t, err, driver.ErrBadConn, "a session the server ended is broken")
	_ = victim.Close() // database/sql closed it on ErrBadConn
	require.NotEqual(t, pid, backendPID(t, db))
}
