//go:build integration

package lambdawire

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// refusingProxy listens on 127.0.0.1, closes the first refuse connections
// at once (a proxy whose target is not registered yet), and forwards the
// later ones to target.
type refusingProxy struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func newRefusingProxy(t *testing.T, target string, refuse int64) *refusingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &refusingProxy{ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.accepted.Add(1) <= refuse {
				_ = c.Close()
				continue
			}
			p.wg.Go(func() { forward(c, target) })
		}
	})
	t.Cleanup(func() { _ = ln.Close(); p.wg.Wait() })
	return p
}

// forward copies c to a connection to target and back until either ends.
func forward(c net.Conn, target string) {
	defer func() { _ = c.Close() }()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = s.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
}

// migratorThrough is a migrator on a fresh database reached through a
// proxy refusing its first refuse connections, retrying after 10 ms.
func migratorThrough(t *testing.T, refuse int64) (*migrator, *refusingProxy) {
	t.Helper()
	cfg := pgtest.Config(t)
	port := cfg.Port
	if port == 0 {
		port = pgwire.DefaultPort
	}
	p := newRefusingProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(port)), refuse)
	via := cfg
	via.Host, via.Port = "127.0.0.1", p.ln.Addr().(*net.TCPAddr).Port
	db := sql.OpenDB(pgtest.Connector(t, via))
	t.Cleanup(func() { _ = db.Close() })
	return &migrator{db: db, client: http.DefaultClient, log: slog.New(slog.DiscardHandler), firstRetry: 10 * time.Millisecond}, p
}

// A Create whose first connections are refused (RDS Proxy still
// registering its target on a stack's first deployment) is tried again
// within the invocation's deadline and answered SUCCESS.
func TestMigrateRetriesADatabaseThatRefusesThenAccepts(t *testing.T) {
	t.Parallel()
	m, p := migratorThrough(t, 5) // beyond database/sql's own three tries
	rs := newResponseServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), answerReserve+time.Minute)
	defer cancel()
	_, err := m.handle(ctx, schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusSuccess, got.Status, got.Reason)
	require.Greater(t, p.accepted.Load(), int64(5), "the refused connections, then the one that applied")
}

// Without a deadline (no Lambda invocation) nothing is tried again: the
// first refusal is the answer (database/sql's own tries of a connection
// are at most three).
func TestMigrateWithoutADeadlineTriesOnce(t *testing.T) {
	t.Parallel()
	m, p := migratorThrough(t, 100)
	rs := newResponseServer(t)
	_, err := m.handle(t.Context(), schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusFailed, got.Status)
	require.LessOrEqual(t, p.accepted.Load(), int64(3))
	require.NotContains(t, got.Reason, "tried")
}

// schemaAt applies the schema to a fresh database with a Create, then
// changes its record with change (SQL), and returns the handler on it.
func schemaAt(t *testing.T, change string) (func(context.Context, cfn.Event) (struct{}, error), *responseServer) {
	t.Helper()
	db := pgtest.DB(t)
	rs := newResponseServer(t)
	h := migrateOn(t, db)
	_, err := h(t.Context(), schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusSuccess, got.Status, got.Reason)
	_, err = db.ExecContext(t.Context(), change)
	require.NoError(t, err)
	return h, rs
}

// An Update on a schema newer than this code (a stack's rollback to older
// code after a migration applied) is answered SUCCESS, applying nothing,
// so that the rollback completes; a Create on it is still FAILED, and so
// is an Update whose applied migration changed.
func TestMigrateAnswersAnUpdateOnANewerSchemaSuccess(t *testing.T) {
	t.Parallel()
	h, rs := schemaAt(t, `INSERT INTO fifoworker_schema (component, version, name, sha256) VALUES ('jobs', 99, '0099_future.sql', 'ab')`)
	_, err := h(t.Context(), schemaEvent(cfn.RequestUpdate, rs.URL, SchemaResourceID))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusSuccess, got.Status, got.Reason)
	require.Equal(t, SchemaResourceID, got.PhysicalResourceID)

	_, err = h(t.Context(), schemaEvent(cfn.RequestCreate, rs.URL, ""))
	require.NoError(t, err)
	got, _ = rs.last(t)
	require.Equal(t, cfn.StatusFailed, got.Status)
	require.Contains(t, got.Reason, "newer than this program")
}

func TestMigrateAnswersAnUpdateOnAChangedMigrationFailed(t *testing.T) {
	t.Parallel()
	h, rs := schemaAt(t, `UPDATE fifoworker_schema SET sha256 = 'changed' WHERE component = 'jobs' AND version = 1`)
	ctx, cancel := context.WithTimeout(t.Context(), answerReserve+time.Minute)
	defer cancel()
	_, err := h(ctx, schemaEvent(cfn.RequestUpdate, rs.URL, SchemaResourceID))
	require.NoError(t, err)
	got, _ := rs.last(t)
	require.Equal(t, cfn.StatusFailed, got.Status)
	require.Contains(t, got.Reason, "an applied migration has changed")
	require.NotContains(t, got.Reason, "tried", "not retried")
}
