//go:build integration

package faultproxy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/faultproxy"
)

// holdModes are the ways a driver runs a statement (pgClient): the unnamed
// statement, a named one prepared in a round trip of its own before (the
// held round trip then binds a statement the release's connection must
// prepare), and the simple protocol.
var holdModes = []string{extended, cached, simple}

// fencedUpdate is a conditional write as the jobs store makes one: it
// applies only on the version it read.
const fencedUpdate = `UPDATE h SET v = v + 1, owner = $2 WHERE id = 1 AND v = $1`

// newHoldRig is a rig whose table h has row 1 at version 0.
func newHoldRig(t *testing.T, cfg faultproxy.PostgresConfig) *pgRig {
	t.Helper()
	r := newPGRig(t, cfg)
	_, err := r.direct.ExecContext(t.Context(), `CREATE TABLE h (id int PRIMARY KEY, v int NOT NULL, owner text); INSERT INTO h VALUES (1, 0, '')`)
	require.NoError(t, err)
	return r
}

func (r *pgRig) version(t *testing.T) (int, string) {
	t.Helper()
	var v int
	var owner string
	require.NoError(t, r.direct.QueryRowContext(t.Context(), `SELECT v, owner FROM h WHERE id = 1`).Scan(&v, &owner))
	return v, owner
}

// holdOwner holds the first UPDATE that names owner: by its argument on
// the extended protocol, by its SQL on the simple one.
func holdOwner(owner string) func(op, sql string, args []string) bool {
	return func(op, sql string, args []string) bool {
		return op == "UPDATE" && (slices.Contains(args, owner) || args == nil && strings.Contains(sql, "'"+owner+"'"))
	}
}

// updateGivingUp runs the fenced update through the proxy as owner on a
// new session of mode, giving up after a short wait; the held one gets no
// answer.
func updateGivingUp(t *testing.T, r *pgRig, mode string, version int, owner string) error {
	t.Helper()
	c := r.client(t, mode)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	return c.exec(ctx, fencedUpdate, version, owner)
}

func TestPostgresProxyHoldsARoundTripUntilRelease(t *testing.T) {
	for _, mode := range holdModes {
		t.Run(mode, func(t *testing.T) {
			r := newHoldRig(t, faultproxy.PostgresConfig{Hold: holdOwner("worker-a")})
			require.ErrorIs(t, r.proxy.Release(t.Context()).Err, faultproxy.ErrNothingHeld)
			err := updateGivingUp(t, r, mode, 0, "worker-a")
			require.Error(t, err, "the held round trip's caller gets no answer")
			require.True(t, r.proxy.Held())
			v, owner := r.version(t)
			require.Equal(t, 0, v, "not applied while held")
			require.Empty(t, owner)

			got := r.proxy.Release(t.Context())
			require.NoError(t, got.Err)
			require.Equal(t, []string{"UPDATE 1"}, got.Tags)
			require.EqualValues(t, 1, got.RowsAffected())
			v, owner = r.version(t)
			require.Equal(t, 1, v, "applied on release")
			require.Equal(t, "worker-a", owner)
			require.False(t, r.proxy.Held())
			require.ErrorIs(t, r.proxy.Release(t.Context()).Err, faultproxy.ErrNothingHeld, "released once")
			require.Equal(t, 1, r.proxy.Counts().Requests["UPDATE"], "counted as seen")
		})
	}
}

// Released after a competing write bumped the version, the held update's
// WHERE matches no row: the fence refuses the late write.
func TestPostgresProxyReleasedLateWriteIsFenced(t *testing.T) {
	for _, mode := range holdModes {
		t.Run(mode, func(t *testing.T) {
			r := newHoldRig(t, faultproxy.PostgresConfig{Hold: holdOwner("worker-a")})
			require.Error(t, updateGivingUp(t, r, mode, 0, "worker-a"))
			// Worker B's takeover, through the proxy: not held.
			require.NoError(t, r.client(t, mode).exec(t.Context(), fencedUpdate, 0, "worker-b"))

			got := r.proxy.Release(t.Context())
			require.NoError(t, got.Err)
			require.Equal(t, []string{"UPDATE 0"}, got.Tags)
			require.Zero(t, got.RowsAffected())
			v, owner := r.version(t)
			require.Equal(t, 1, v)
			require.Equal(t, "worker-b", owner, "the late write changed nothing")
		})
	}
}

// The release reads the rows a statement returns and reports the server's
// error.
func TestPostgresProxyReleaseReportsRowsAndErrors(t *testing.T) {
	r := newHoldRig(t, faultproxy.PostgresConfig{Hold: func(op, _ string, args []string) bool {
		return op == "SELECT" && slices.Contains(args, "x")
	}})
	c := r.connect(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := c.ExecContext(ctx, `SELECT v, $1::text FROM h WHERE id = 1`, "x")
	require.Error(t, err)
	got := r.proxy.Release(t.Context())
	require.NoError(t, got.Err)
	require.Len(t, got.Rows, 1)
	require.Equal(t, "x", string(got.Rows[0][1]))

	r = newHoldRig(t, faultproxy.PostgresConfig{Hold: func(op, _ string, _ []string) bool { return op == "INSERT" }})
	c = r.connect(t)
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = c.ExecContext(ctx, `INSERT INTO h VALUES (1, 0, '')`)
	require.Error(t, err)
	got = r.proxy.Release(t.Context())
	require.ErrorContains(t, got.Err, "23505", "the duplicate key's SQLSTATE")
}

// Close answers a held round trip's caller that still waits with a reset.
func TestPostgresProxyCloseResetsAHeldCaller(t *testing.T) {
	r := newHoldRig(t, faultproxy.PostgresConfig{Hold: holdOwner("worker-a")})
	c := r.connect(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(context.Background(), fencedUpdate, 0, "worker-a")
		errc <- err
	}()
	require.Eventually(t, r.proxy.Held, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.proxy.Close())
	select {
	case err := <-errc:
		require.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the held caller still waits after Close")
	}
	v, _ := r.version(t)
	require.Equal(t, 0, v, "never forwarded")
}

// Hold is asked for each round trip until it first says yes, never after.
func TestPostgresProxyHoldIsAskedUntilItPicks(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	hold := func(op, _ string, args []string) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, op)
		return op == "UPDATE" && slices.Contains(args, "worker-c")
	}
	r := newHoldRig(t, faultproxy.PostgresConfig{Hold: hold})
	c := r.client(t, extended)
	for i, owner := range []string{"worker-a", "worker-b"} {
		require.NoError(t, c.exec(t.Context(), fencedUpdate, i, owner))
	}
	require.Error(t, updateGivingUp(t, r, extended, 2, "worker-c"))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := r.client(t, extended).exec(ctx, fencedUpdate, 2, "worker-c")
	require.NoError(t, err, "the same round trip again, after the pick, goes through")
	mu.Lock()
	require.Equal(t, []string{"UPDATE", "UPDATE", "UPDATE"}, asked)
	mu.Unlock()
	v, owner := r.version(t)
	require.Equal(t, 3, v)
	require.Equal(t, "worker-c", owner)
	got := r.proxy.Release(t.Context())
	require.Zero(t, got.RowsAffected(), "the held copy, late, is fenced")
}
