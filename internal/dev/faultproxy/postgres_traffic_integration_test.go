//go:build integration

package faultproxy_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// pgx's default mode caches statements: a connection's first execution of
// a statement is two round trips (Parse, Describe, Sync; then Bind,
// Execute, Sync), the next ones one. A dropped answer is the answer of the
// round trip that executes: the row is applied, whichever round trip the
// connection needs first.
func TestPostgresProxyDropsTheExecutionsAnswerUnderStatementCaching(t *testing.T) {
	r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"INSERT": {Drop: 1}}}, pgx.QueryExecModeCacheStatement)
	c := r.connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, 1)
	require.Error(t, err, "the answer is lost")
	require.True(t, r.applied(t, 1), "a dropped round trip is one that executed and committed")
	require.Equal(t, 1, r.proxy.Counts().Injected[faultproxy.Drop]["INSERT"])
}

// The n-th execution of an operation meets the same fault whether its
// connection had the statement prepared already (one round trip) or not
// (two): a pool hands out connections in no fixed order, and the seed must
// still replay.
func TestPostgresProxyDecisionsReplayWhateverTheStatementCache(t *testing.T) {
	rates := map[string]faultproxy.Rates{"INSERT": {Reset: 0.3, Drop: 0.3}}
	run := func(fresh bool) []int {
		r := newPGRig(t, faultproxy.PostgresConfig{Seed: 7, Operations: rates}, pgx.QueryExecModeCacheStatement)
		var failed []int
		var c *pgx.Conn
		for i := range 30 {
			if c == nil || fresh {
				c = r.connect(t)
			}
			if _, err := c.Exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, i); err != nil {
				failed = append(failed, i)
				c = nil // a fault ends the connection
			}
		}
		require.NotEmpty(t, failed)
		return failed
	}
	require.Equal(t, run(true), run(false))
}

// COPY FROM STDIN under a dropped answer: the server's CopyInResponse is
// what the client waits for before it sends the rows, so it passes; the
// rest of the answer (through ReadyForQuery, after the commit) is lost.
func TestPostgresProxyDropsACopysAnswerAfterItsRows(t *testing.T) {
	r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"COPY": {Drop: 1}}}, pgx.QueryExecModeCacheStatement)
	c := r.connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id"}, pgx.CopyFromRows([][]any{{11}, {12}}))
	require.Error(t, err, "the answer is lost")
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the client must not wait for an answer the proxy holds back")
	require.True(t, r.applied(t, 11) && r.applied(t, 12), "the COPY committed")
	require.Equal(t, 1, r.proxy.Counts().Injected[faultproxy.Drop]["COPY"])
}

// Close ends every goroutine of the proxy, whatever its connections were
// doing: a stalled round trip, a delayed one, an idle session.
func TestPostgresProxyCloseLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{
		"INSERT": {Stall: 1}, "UPDATE": {Latency: 1},
	}, MinLatency: time.Hour, MaxLatency: time.Hour}, pgx.QueryExecModeExec)
	idle, stalled, delayed := r.connect(t), r.connect(t), r.connect(t)
	_ = idle
	errs := make(chan error, 2)
	go func() { _, err := stalled.Exec(t.Context(), `INSERT INTO t (id) VALUES (1)`); errs <- err }()
	go func() { _, err := delayed.Exec(t.Context(), `UPDATE t SET id = 2`); errs <- err }()
	require.Eventually(t, func() bool {
		c := r.proxy.Counts()
		return c.Requests["INSERT"] == 1 && c.Requests["UPDATE"] == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, r.proxy.Close())
	require.Error(t, <-errs)
	require.Error(t, <-errs)
	for _, c := range []*pgx.Conn{idle, stalled, delayed} {
		_ = c.Close(context.Background())
	}
}

// insertOf names operation name the INSERT of row id (as pipelinedPair
// writes it), and every other statement as PostgresOperation does: a fault
// for one of two round trips of the same shape.
func insertOf(id int, name string) func(sql string) string {
	marker := fmt.Sprintf("(%d)", id)
	return func(sql string) string {
		if strings.Contains(sql, marker) {
			return name
		}
		return faultproxy.PostgresOperation(sql)
	}
}

// pipelinedPair inserts rows first and second through r's proxy, each in
// a round trip of its own (its own Sync), both sent before any answer is
// read, and reads answers until the first error: the end of a session a
// fault ends, or of the pipeline.
func pipelinedPair(t *testing.T, r *pgRig, first, second int) {
	t.Helper()
	c := r.connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	pl := c.PgConn().StartPipeline(ctx)
	for _, id := range []int{first, second} {
		pl.SendQueryParams(fmt.Sprintf(`INSERT INTO t (id) VALUES (%d)`, id), nil, nil, nil, nil)
		pl.SendPipelineSync()
	}
	require.NoError(t, pl.Flush())
	var err error
	for err == nil {
		_, err = pl.GetResults()
	}
	_ = pl.Close()
}

// A client that pipelines a second round trip behind one whose answer is
// dropped: the session ends at the dropped answer's ReadyForQuery, and the
// second round trip is never forwarded, so whether it was applied does not
// depend on how fast the server read it before the proxy closed.
func TestPostgresProxyForwardsNothingPipelinedBehindADrop(t *testing.T) {
	op := insertOf(21, "FIRST")
	for range 5 {
		r := newPGRig(t, faultproxy.PostgresConfig{Operation: op, Operations: map[string]faultproxy.Rates{"FIRST": {Drop: 1}}}, pgx.QueryExecModeExec)
		pipelinedPair(t, r, 21, 22)
		require.Eventually(t, func() bool { return r.proxy.Counts().Requests["INSERT"] == 1 }, 5*time.Second, 5*time.Millisecond)
		require.True(t, r.applied(t, 21), "the dropped round trip committed")
		require.False(t, r.applied(t, 22), "a round trip pipelined behind a dropped answer is not forwarded")
	}
}

// A reset round trip pipelined behind one without a fault: the earlier one
// was forwarded, and is applied whatever the timing; the proxy resets only
// once its answer is through (closing the server's connection with that
// answer unread would send the server a reset that could undo it).
func TestPostgresProxyResetsOnlyBehindTheAnswersBeforeIt(t *testing.T) {
	op := insertOf(32, "SECOND")
	for range 15 {
		r := newPGRig(t, faultproxy.PostgresConfig{Operation: op, Operations: map[string]faultproxy.Rates{"SECOND": {Reset: 1}}}, pgx.QueryExecModeExec)
		pipelinedPair(t, r, 31, 32)
		require.Eventually(t, func() bool { return r.applied(t, 31) }, 5*time.Second, 5*time.Millisecond,
			"the round trip forwarded before the reset one is applied")
		require.False(t, r.applied(t, 32), "the reset round trip is not")
	}
}

// A client that waits for the server's CopyInResponse before it sends a
// COPY's rows (as libpq's clients do; pgx streams them at once): under a
// dropped answer the CopyInResponse still passes, since the round trip
// cannot go on without it; the COPY commits and the rest is lost.
func TestPostgresProxyPassesCopyInResponseUnderADrop(t *testing.T) {
	r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"COPY": {Drop: 1}}}, pgx.QueryExecModeExec)
	conn, err := net.Dial("tcp", r.proxy.Addr)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": r.via.User, "database": r.via.Database}})
	require.NoError(t, fe.Flush())
	for {
		msg, err := fe.Receive()
		require.NoError(t, err, "startup")
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	fe.Send(&pgproto3.Query{String: "COPY t (id) FROM STDIN"})
	require.NoError(t, fe.Flush())
	msg, err := fe.Receive()
	require.NoError(t, err, "the client waits for the CopyInResponse")
	require.IsType(t, &pgproto3.CopyInResponse{}, msg)
	fe.Send(&pgproto3.CopyData{Data: []byte("41\n42\n")})
	fe.Send(&pgproto3.CopyDone{})
	require.NoError(t, fe.Flush())
	_, err = fe.Receive()
	require.Error(t, err, "the rest of the answer is lost")
	require.Eventually(t, func() bool { return r.applied(t, 41) && r.applied(t, 42) }, 5*time.Second, 5*time.Millisecond)
}
