package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A non-loopback address is refused before anything starts.
func TestServeRefusesAnAddressThatIsNotLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.0.2.1:8080"} {
		cache := t.TempDir()
		var out, errOut bytes.Buffer
		code := run([]string{"local", "serve", "--cache", cache, "--addr", addr}, &out, &errOut)
		require.Equal(t, 2, code, addr)
		require.Contains(t, errOut.String(), "not a loopback address", addr)
		require.Contains(t, errOut.String(), "127.0.0.1, ::1 or localhost only", addr)
		_, err := os.Stat(filepath.Join(cache, "stacks"))
		require.True(t, os.IsNotExist(err), "no stack was started for %s", addr)
	}
}

func TestServeRefusesAWorkerTimeoutTheTemplateDoesNotAllow(t *testing.T) {
	t.Parallel()
	// 7 is within the old 3..900 bounds but has no row in the template's
	// WorkerTimeouts mapping, so no commands visibility of 6 x it.
	for _, n := range []string{"2", "7", "901", "-5"} {
		var out, errOut bytes.Buffer
		code := run([]string{"local", "serve", "--cache", t.TempDir(), "--template", "../../template.yaml", "--worker-timeout", n}, &out, &errOut)
		require.Equal(t, 2, code, n)
		require.Contains(t, errOut.String(), "the template's WorkerTimeout: "+n+" is not one of its allowed values [3 6 10", n)
	}
}

// serve's stack is named "serve" unless --name says otherwise, and a
// running one is left alone; so is a busy port.
func TestServeNeedsAFreshStackNamedServeAndAFreePort(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	state := runningStack(t, cache, "serve")
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run([]string{"local", "serve", "--cache", cache, "--addr", "127.0.0.1:0"}, &out, &errOut))
	require.Contains(t, errOut.String(), `stack "serve" is already running`)
	require.FileExists(t, filepath.Join(state, "state.json"), "the running stack is left alone")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()
	errOut.Reset()
	require.Equal(t, 1, run([]string{"local", "serve", "--cache", cache, "--name", "other", "--addr", busy.Addr().String()}, &out, &errOut))
	require.Contains(t, errOut.String(), "address already in use")
	_, err = os.Stat(filepath.Join(cache, "stacks", "other"))
	require.True(t, os.IsNotExist(err), "no stack was started")
}
