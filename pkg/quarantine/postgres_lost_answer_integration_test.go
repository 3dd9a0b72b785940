//go:build integration

package quarantine_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// losingConnector hands out the driver's connections, and when armed lets the
// next write statement (WITH h AS ...) run to its end on the server,
// committed, and then loses its answer as a connection reset after the
// commit would: an error that is not the server's (no SQLSTATE), and the
// connection discarded. It is not driver.ErrBadConn, which database/sql
// retries: the driver returns that only when nothing was sent.
type losingConnector struct {
	driver.Connector
	armed  atomic.Bool
	before bool // lose the connection before the statement is sent instead
	lost   atomic.Int64
}

func (c *losingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &losingConn{Conn: conn, c: c}, nil
}

type losingConn struct {
	driver.Conn
	c   *losingConnector
	bad bool
}

func (l *losingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if l.c.before && strings.HasPrefix(query, "WITH h AS") && l.c.armed.CompareAndSwap(true, false) {
		l.bad = true
		l.c.lost.Add(1)
		return nil, fmt.Errorf("the connection failed before the statement was sent: %w", io.ErrUnexpectedEOF)
	}
	rows, err := l.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil || !strings.HasPrefix(query, "WITH h AS") || !l.c.armed.CompareAndSwap(true, false) {
		return rows, err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(dest)
	}
	_ = rows.Close()
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	l.bad = true
	l.c.lost.Add(1)
	return nil, fmt.Errorf("the answer was lost after the commit: %w", io.ErrUnexpectedEOF)
}

func (l *losingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return l.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (l *losingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return l.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (l *losingConn) IsValid() bool { return !l.bad }

// A write whose answer is lost after it committed is recognised as the
// store's own, as DynamoStore recognises a write the SDK retried: the
// call succeeds and counts once, and returns the hold stored.
func TestPostgresLostAnswersAreRecognised(t *testing.T) {
	ctx := t.Context()
	lc := &losingConnector{Connector: pgtest.Connector(t, pgtest.Config(t))}
	db := sql.OpenDB(lc)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(4)
	require.NoError(t, quarantine.MigratePostgres(ctx, db))
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	const queue = "orders.fifo"
	one, two := seqKey(t, "1"), seqKey(t, "2")
	lost := func(op string, call func() (quarantine.HoldRecord, error)) quarantine.HoldRecord {
		t.Helper()
		before := lc.lost.Load()
		lc.armed.Store(true)
		h, err := call()
		require.NoError(t, err, "%s after a lost answer", op)
		require.Equal(t, before+1, lc.lost.Load(), "%s: the answer was lost", op)
		got, err := store.Hold(ctx, queue, "g")
		require.NoError(t, err)
		require.Equal(t, got, h, op)
		return h
	}
	h := lost("park", func() (quarantine.HoldRecord, error) {
		return store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: one}, {Sequence: two}}, true, "boom", t0)
	})
	require.Equal(t, int64(2), h.Parked)
	h = lost("redrive", func() (quarantine.HoldRecord, error) {
		return store.BeginRedrive(ctx, queue, "g", t0.Add(1e9))
	})
	require.Equal(t, int64(1), h.Epoch, "a redrive whose answer was lost raised the epoch once")
	h = lost("done", func() (quarantine.HoldRecord, error) {
		return store.Done(ctx, queue, "g", one, 1, t0.Add(2e9))
	})
	require.Equal(t, int64(1), h.Parked)
	h = lost("discard", func() (quarantine.HoldRecord, error) {
		return store.Discard(ctx, queue, "g", two, t0.Add(3e9))
	})
	require.Equal(t, quarantine.StateReleased, h.State)
	require.Zero(t, h.Parked)
}

// A write that failed without reaching the server is not taken for made:
// the error stands and nothing changed.
func TestPostgresAFailedWriteIsNotTakenForMade(t *testing.T) {
	ctx := t.Context()
	lc := &losingConnector{Connector: pgtest.Connector(t, pgtest.Config(t)), before: true}
	db := sql.OpenDB(lc)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(4)
	require.NoError(t, quarantine.MigratePostgres(ctx, db))
	store, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	const queue = "orders.fifo"
	one := seqKey(t, "1")
	_, err = store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: one}}, true, "boom", t0)
	require.NoError(t, err)
	before, err := store.Hold(ctx, queue, "g")
	require.NoError(t, err)
	for op, call := range map[string]func() (quarantine.HoldRecord, error){
		"park": func() (quarantine.HoldRecord, error) {
			return store.Park(ctx, queue, "g", []quarantine.Parked{{Sequence: seqKey(t, "2")}}, true, "boom", t0.Add(1e9))
		},
		"redrive": func() (quarantine.HoldRecord, error) { return store.BeginRedrive(ctx, queue, "g", t0.Add(1e9)) },
		"discard": func() (quarantine.HoldRecord, error) { return store.Discard(ctx, queue, "g", one, t0.Add(1e9)) },
	} {
		lc.armed.Store(true)
		_, err := call()
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, op)
		got, err := store.Hold(ctx, queue, "g")
		require.NoError(t, err)
		require.Equal(t, before, got, "%s: nothing written", op)
	}
}
