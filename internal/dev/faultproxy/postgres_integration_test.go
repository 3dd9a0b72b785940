//go:build integration

package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// pgRig is a database of its own, a proxy in front of its server, and a
// direct connection that sees what was applied.
type pgRig struct {
	proxy  *faultproxy.PostgresProxy
	direct *pgx.Conn
	via    *pgx.ConnConfig // connects through the proxy
}

func newPGRig(t *testing.T, cfg faultproxy.PostgresConfig, mode pgx.QueryExecMode) *pgRig {
	t.Helper()
	db := pgtest.Config(t)
	cfg.Target = net.JoinHostPort(db.Host, strconv.Itoa(int(db.Port)))
	p, err := faultproxy.NewPostgres(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	direct, err := pgx.ConnectConfig(t.Context(), db)
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close(context.Background()) })
	_, err = direct.Exec(t.Context(), `CREATE TABLE t (id int PRIMARY KEY)`)
	require.NoError(t, err)
	via := db.Copy()
	host, port, _ := net.SplitHostPort(p.Addr)
	pn, _ := strconv.Atoi(port)
	via.Host, via.Port, via.DefaultQueryExecMode = host, uint16(pn), mode
	return &pgRig{proxy: p, direct: direct, via: via}
}

func (r *pgRig) connect(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.ConnectConfig(t.Context(), r.via)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func (r *pgRig) applied(t *testing.T, id int) bool {
	t.Helper()
	var n int
	require.NoError(t, r.direct.QueryRow(t.Context(), `SELECT count(*) FROM t WHERE id = $1`, id).Scan(&n))
	return n == 1
}

var modes = map[string]pgx.QueryExecMode{"extended": pgx.QueryExecModeExec, "simple": pgx.QueryExecModeSimpleProtocol}

func TestPostgresProxyPassesEverythingOnWithoutFaults(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			r := newPGRig(t, faultproxy.PostgresConfig{}, mode)
			c := r.connect(t)
			for i := range 5 {
				_, err := c.Exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, i)
				require.NoError(t, err)
			}
			var n int
			require.NoError(t, c.QueryRow(t.Context(), `/* a comment */ SELECT count(*) FROM t`).Scan(&n))
			require.Equal(t, 5, n)
			counts := r.proxy.Counts()
			require.Equal(t, 5, counts.Requests["INSERT"])
			require.Equal(t, 1, counts.Requests["SELECT"])
			require.Zero(t, counts.Total(faultproxy.Reset)+counts.Total(faultproxy.Drop)+counts.Total(faultproxy.Stall))
		})
	}
}

// Each fault, at rate 1 on INSERT, and whether the row was applied.
func TestPostgresProxyFaults(t *testing.T) {
	for name, mode := range modes {
		for _, tc := range []struct {
			rates   faultproxy.Rates
			kind    faultproxy.Kind
			applied bool
		}{
			{faultproxy.Rates{Reset: 1}, faultproxy.Reset, false},
			{faultproxy.Rates{Drop: 1}, faultproxy.Drop, true},
			{faultproxy.Rates{Stall: 1}, faultproxy.Stall, false},
		} {
			t.Run(name+"/"+string(tc.kind), func(t *testing.T) {
				r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"INSERT": tc.rates}}, mode)
				c := r.connect(t)
				wait := 5 * time.Second
				if tc.kind == faultproxy.Stall {
					wait = 300 * time.Millisecond // what the caller waits before it gives up
				}
				ctx, cancel := context.WithTimeout(t.Context(), wait)
				defer cancel()
				_, err := c.Exec(ctx, `INSERT INTO t (id) VALUES (1)`)
				require.Error(t, err, "the caller gets no answer")
				if tc.kind == faultproxy.Stall {
					require.True(t, errors.Is(err, context.DeadlineExceeded) || c.IsClosed(), "a stall ends at the caller's deadline: %v", err)
				}
				require.Equal(t, tc.applied, r.applied(t, 1))
				require.Equal(t, 1, r.proxy.Counts().Injected[tc.kind]["INSERT"])
			})
		}
	}
}

// In a transaction, the fault of the COMMIT's round trip decides: a reset
// COMMIT never reaches the server (its session ends, the transaction rolls
// back); a dropped one commits and the answer is lost.
func TestPostgresProxyFaultsOnCommit(t *testing.T) {
	for kind, want := range map[faultproxy.Kind]bool{faultproxy.Reset: false, faultproxy.Drop: true} {
		t.Run(string(kind), func(t *testing.T) {
			rates := faultproxy.Rates{Reset: 1}
			if kind == faultproxy.Drop {
				rates = faultproxy.Rates{Drop: 1}
			}
			r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"COMMIT": rates}}, pgx.QueryExecModeExec)
			c := r.connect(t)
			tx, err := c.Begin(t.Context())
			require.NoError(t, err)
			_, err = tx.Exec(t.Context(), `INSERT INTO t (id) VALUES (7)`)
			require.NoError(t, err)
			require.Error(t, tx.Commit(t.Context()))
			require.Eventually(t, func() bool { return r.applied(t, 7) == want }, 5*time.Second, 10*time.Millisecond,
				"the server ends the session's transaction once the proxy closes it")
			require.Equal(t, want, r.applied(t, 7))
		})
	}
}

func TestPostgresProxyLatencyWaitsThenForwards(t *testing.T) {
	var mu sync.Mutex
	var slept []time.Duration
	cfg := faultproxy.PostgresConfig{
		Rates: faultproxy.Rates{Latency: 1}, MinLatency: time.Second, MaxLatency: 2 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			slept = append(slept, d)
			return nil
		},
	}
	r := newPGRig(t, cfg, pgx.QueryExecModeExec)
	c := r.connect(t)
	_, err := c.Exec(t.Context(), `INSERT INTO t (id) VALUES (3)`)
	require.NoError(t, err)
	require.True(t, r.applied(t, 3))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, slept)
	require.Equal(t, r.proxy.Delays(), slept)
	for _, d := range slept {
		require.GreaterOrEqual(t, d, time.Second)
		require.LessOrEqual(t, d, 2*time.Second)
	}
}

// The same seed gives the same faults to the same round trips, connection
// after connection.
func TestPostgresProxyDecisionsReplay(t *testing.T) {
	run := func() []int {
		r := newPGRig(t, faultproxy.PostgresConfig{Seed: 42, Operations: map[string]faultproxy.Rates{"INSERT": {Reset: 0.3, Drop: 0.3}}}, pgx.QueryExecModeExec)
		var failed []int
		for i := range 30 {
			c := r.connect(t)
			if _, err := c.Exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, i); err != nil {
				failed = append(failed, i)
			}
		}
		require.NotEmpty(t, failed)
		require.Less(t, len(failed), 30)
		return failed
	}
	require.Equal(t, run(), run())
}
