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

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
)

// startLocalPostgres runs the hidden verb on a new data directory and
// returns it, its stderr and the DSN and postmaster PID it logs once the
// server is ready.
func startLocalPostgres(t *testing.T) (cmd *exec.Cmd, stderr io.Reader, dsn string, postmaster int) {
	t.Helper()
	parent, err := os.MkdirTemp("", "localpostgres-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755)) // for the server's user, as root
	cmd = exec.Command(brokerBinary, "local", "postgres", "--port", "0", "--data-dir", filepath.Join(parent, "data"))
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(pipe)
	listening := regexp.MustCompile(`msg="postgres listening" dsn="?([^" ]+)"? pid=(\d+)`)
	var m []string
	for m == nil && lines.Scan() {
		m = listening.FindStringSubmatch(lines.Text())
	}
	require.NotNil(t, m, "a line saying where it listens")
	postmaster, err = strconv.Atoi(m[2])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-postmaster, syscall.SIGKILL) }) // its own process group
	return cmd, pipe, m[1], postmaster
}

// waitExit waits up to a minute for cmd to exit and returns how.
func waitExit(t *testing.T, cmd *exec.Cmd, stderr io.Reader) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stderr) // until it exits and its end closes
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("it did not exit within a minute")
		return nil
	}
}

// The hidden verb runs PostgreSQL 18 until SIGTERM, and then stops it
// and exits 0: how `local down` stops the stack's server.
func TestLocalPostgresRunsUntilSIGTERM(t *testing.T) {
	t.Parallel()
	cmd, stderr, dsn, postmaster := startLocalPostgres(t)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db, err := pgwire.Open(dsn)
	require.NoError(t, err)
	var version string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT version()").Scan(&version))
	require.True(t, strings.HasPrefix(version, "PostgreSQL 18.4"), version)
	require.NoError(t, db.Close())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, waitExit(t, cmd, stderr), "it exits 0 on SIGTERM")
	require.ErrorIs(t, syscall.Kill(postmaster, 0), syscall.ESRCH, "the postmaster is gone")
}

// A server that dies ends the verb with an error, so that the stack's
// status shows the process gone rather than a live one that serves
// nothing.
func TestLocalPostgresEndsWhenTheServerDies(t *testing.T) {
	t.Parallel()
	cmd, stderr, _, postmaster := startLocalPostgres(t)
	require.NoError(t, syscall.Kill(postmaster, syscall.SIGKILL))
	var exit *exec.ExitError
	require.ErrorAs(t, waitExit(t, cmd, stderr), &exit)
	require.NotZero(t, exit.ExitCode())
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
