package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The hidden verb runs PostgreSQL 18 until SIGTERM, and then stops it
// and exits 0: how `local down` stops the stack's server.
func TestLocalPostgresRunsUntilSIGTERM(t *testing.T) {
	t.Parallel()
	parent, err := os.MkdirTemp("", "localpostgres-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755)) // for the server's user, as root
	cmd := exec.Command(brokerBinary, "local", "postgres", "--port", "0", "--data-dir", filepath.Join(parent, "data"))
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	listening := regexp.MustCompile(`msg="postgres listening" dsn="?([^" ]+)"? pid=(\d+)`)
	var m []string
	for m == nil && lines.Scan() {
		m = listening.FindStringSubmatch(lines.Text())
	}
	require.NotNil(t, m, "a line saying where it listens")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, m[1])
	require.NoError(t, err)
	var version string
	require.NoError(t, conn.QueryRow(ctx, "SELECT version()").Scan(&version))
	require.True(t, strings.HasPrefix(version, "PostgreSQL 18.4"), version)
	require.NoError(t, conn.Close(ctx))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, _ = io.Copy(io.Discard, stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "it exits 0 on SIGTERM")
	case <-time.After(time.Minute):
		t.Fatal("it did not stop within a minute of SIGTERM")
	}
	postmaster, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	require.ErrorIs(t, syscall.Kill(postmaster, 0), syscall.ESRCH, "the postmaster is gone")
}

// The verb is the stack's: help does not list it; without a data
// directory, or with a port out of range, it is a usage error.
func TestLocalPostgresIsHiddenAndChecksItsFlags(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"local", "--help"}, &out, &errOut), errOut.String())
	require.NotRegexp(t, `(?m)^\s+postgres\s`, out.String())
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--port", "5432"}, "--data-dir is required"},
		{[]string{"--port", "65536", "--data-dir", "/tmp/x"}, "Port 65536"},
		{[]string{"--data-dir", "relative"}, "DataDir"},
	} {
		out.Reset()
		errOut.Reset()
		require.Equal(t, 2, run(append([]string{"local", "postgres"}, tc.args...), &out, &errOut), tc.args)
		require.Contains(t, errOut.String(), tc.says)
		require.NotContains(t, errOut.String(), "listening", "nothing was started")
	}
}
