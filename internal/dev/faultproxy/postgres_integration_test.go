//go:build integration

package faultproxy_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// modes are the two protocols: the extended one (a statement with
// arguments) and the simple one (a statement without).
var modes = []string{extended, simple}

func TestPostgresProxyPassesEverythingOnWithoutFaults(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			r := newPGRig(t, faultproxy.PostgresConfig{})
			c := r.client(t, mode)
			for i := range 5 {
				require.NoError(t, c.exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, i))
			}
			require.Equal(t, 5, countThrough(t, r, mode, `/* a comment */ SELECT count(*) FROM t`))
			counts := r.proxy.Counts()
			require.Equal(t, 5, counts.Requests["INSERT"])
			require.Equal(t, 1, counts.Requests["SELECT"])
			require.Zero(t, counts.Total(faultproxy.Reset)+counts.Total(faultproxy.Drop)+counts.Total(faultproxy.Stall))
		})
	}
}

// countThrough runs query, a count, through r's proxy in mode's protocol
// and returns the count: a row must come back through the proxy. The
// functions' driver reads rows through the extended protocol only, so the
// simple protocol's are read here on a raw session.
func countThrough(t *testing.T, r *pgRig, mode, query string) int {
	t.Helper()
	if mode != simple {
		var n int
		require.NoError(t, r.connect(t).QueryRowContext(t.Context(), query).Scan(&n))
		return n
	}
	f := dialRaw(t, r.proxy.Addr, r.via)
	require.NoError(t, f.send(pgQuery(query)))
	var rows [][]byte
	for {
		typ, body, err := f.receive()
		require.NoError(t, err)
		require.NotEqual(t, byte('E'), typ, "%q", body)
		if typ == 'D' {
			rows = append(rows, body)
		}
		if typ == 'Z' {
			break
		}
	}
	require.Len(t, rows, 1)
	// A DataRow of one column: its count (2 bytes), the value's length (4), the value.
	n, err := strconv.Atoi(string(rows[0][6:]))
	require.NoError(t, err)
	return n
}

// Each fault, at rate 1 on INSERT, and whether the row was applied: a
// reset or a stall is not, a dropped answer's statement is (the answer is
// lost after the commit). Under statement caching a connection's first
// execution of a statement is two round trips (prepare, then bind and
// execute); the fault is the executing one's, whichever the connection
// needs first.
func TestPostgresProxyFaults(t *testing.T) {
	for _, mode := range []string{extended, simple, cached} {
		for _, tc := range []struct {
			rates   faultproxy.Rates
			kind    faultproxy.Kind
			applied bool
		}{
			{faultproxy.Rates{Reset: 1}, faultproxy.Reset, false},
			{faultproxy.Rates{Drop: 1}, faultproxy.Drop, true},
			{faultproxy.Rates{Stall: 1}, faultproxy.Stall, false},
		} {
			t.Run(mode+"/"+string(tc.kind), func(t *testing.T) {
				r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"INSERT": tc.rates}})
				c := r.client(t, mode)
				wait := 5 * time.Second
				if tc.kind == faultproxy.Stall {
					wait = 300 * time.Millisecond // what the caller waits before it gives up
				}
				ctx, cancel := context.WithTimeout(t.Context(), wait)
				defer cancel()
				err := c.exec(ctx, `INSERT INTO t (id) VALUES ($1)`, 1)
				require.Error(t, err, "the caller gets no answer")
				if tc.kind == faultproxy.Stall {
					require.ErrorIs(t, err, context.DeadlineExceeded, "a stall ends at the caller's deadline")
				} else {
					require.NotErrorIs(t, err, context.DeadlineExceeded, "a reset or a drop ends the call at once")
				}
				require.Equal(t, tc.applied, r.applied(t, 1))
				counts := r.proxy.Counts()
				require.Equal(t, 1, counts.Injected[tc.kind]["INSERT"])
				if mode == cached {
					// The round trip that only prepared passed untouched: the
					// fault fell on the one that executed, so a dropped answer
					// is always one whose statement ran and committed.
					require.Equal(t, 1, counts.Requests[faultproxy.PostgresPrepare])
					require.Zero(t, counts.Injected[tc.kind][faultproxy.PostgresPrepare])
				}
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
			r := newPGRig(t, faultproxy.PostgresConfig{Operations: map[string]faultproxy.Rates{"COMMIT": rates}})
			c := r.connect(t)
			tx, err := c.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(t.Context(), `INSERT INTO t (id) VALUES ($1)`, 7)
			require.NoError(t, err)
			require.False(t, r.applied(t, 7), "not committed before the COMMIT")
			require.Error(t, tx.Commit())
			require.Eventually(t, func() bool { return r.applied(t, 7) == want }, 5*time.Second, 10*time.Millisecond,
				"the server ends the session's transaction once the proxy closes it")
			require.Equal(t, want, r.applied(t, 7))
			require.Equal(t, 1, r.proxy.Counts().Injected[kind]["COMMIT"])
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
	r := newPGRig(t, cfg)
	require.NoError(t, r.client(t, extended).exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, 3))
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
		r := newPGRig(t, faultproxy.PostgresConfig{Seed: 42, Operations: map[string]faultproxy.Rates{"INSERT": {Reset: 0.3, Drop: 0.3}}})
		var failed []int
		for i := range 30 {
			c := r.client(t, extended)
			if err := c.exec(t.Context(), `INSERT INTO t (id) VALUES ($1)`, i); err != nil {
				failed = append(failed, i)
			}
			c.close()
		}
		require.NotEmpty(t, failed)
		require.Less(t, len(failed), 30)
		return failed
	}
	require.Equal(t, run(), run())
}
