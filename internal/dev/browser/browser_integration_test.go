//go:build integration

package browser

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Headless Chromium opens a page of a server on 127.0.0.1, reads it,
// clicks through to another, writes a PNG screenshot, and is gone when the
// test ends: its main process and every child that names its user data
// directory.
func TestChromiumOpensALocalPageAndLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>one</title><h1 data-testid="h">first page</h1><a data-testid="next" href="/two">next</a>`)
		default:
			fmt.Fprint(w, `<!doctype html><title>two</title><h1 data-testid="h">second page</h1>`)
		}
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	b, err := New(Config{Artefacts: Artefacts(t, t.Name())})
	require.NoError(t, err)
	// A failed step still stops the browser and removes its directory
	// (Chromium dies with the test binary; its directory would stay).
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = b.Close()
		}
	})
	require.Positive(t, b.PID())
	dataDir := b.dataDir
	require.NoError(t, b.Do(chromedp.Navigate(srv.URL)))
	h, err := Run(b, chromedp.Text(chromedp.CSS(`[data-testid="h"]`)))
	require.NoError(t, err)
	require.Equal(t, "first page", h)
	require.NoError(t, b.Do(chromedp.Click(chromedp.CSS(`[data-testid="next"]`)), chromedp.WaitVisible(chromedp.CSS(`h1`))))
	title, err := Run(b, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "two", title)

	path, err := b.Screenshot("second")
	require.NoError(t, err)
	png, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG file")

	// Once the pages are shown, the browser's processes are steady.
	family := append(descendants(t, b.PID()), b.PID())
	require.Subset(t, Processes(dataDir), family,
		"Processes finds the browser and each of its children (which rewrite their command lines)")
	require.ElementsMatch(t, mentioning(t, dataDir), Processes(dataDir), "and every process that names the directory")
	for _, pid := range mentioning(t, dataDir) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		require.NotContains(t, string(cmdline), "crashpad_handler", "no crash handler starts")
	}

	// No name resolves but 127.0.0.1: the page cannot reach outside.
	require.Error(t, b.Do(chromedp.Navigate("http://example.com/")))

	closed = true
	require.NoError(t, b.Close())
	require.Empty(t, mentioning(t, dataDir), "no process of the browser remains")
	_, err = os.Stat(dataDir)
	require.True(t, os.IsNotExist(err), "the user data directory is removed")
}

// A page reaches 127.0.0.1 and nothing else: an IP literal goes to the
// proxy 127.0.0.1:1, where nothing listens, and fails at once with the
// proxy's error, not by trying the address (another loopback address or
// [::1] would be refused by the host, a TEST-NET address not answered).
func TestChromiumReachesNoAddressButLoopback127(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>here</title>`)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	b := Start(t, Artefacts(t, t.Name()))

	for _, url := range []string{
		"http://192.0.2.1/",
		"http://10.255.255.1/",
		"http://127.0.0.2:" + port + "/",
		"http://[::1]:" + port + "/",
		"http://localhost:" + port + "/",
	} {
		err := b.Do(chromedp.Navigate(url))
		require.ErrorContains(t, err, "net::ERR_PROXY_CONNECTION_FAILED", url)
	}
	// fetch from the page is refused the same way.
	require.NoError(t, b.Do(chromedp.Navigate(srv.URL)))
	msg, err := Run(b, chromedp.Evaluate[string](`fetch("http://192.0.2.1/").then(() => "answered", e => String(e))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Contains(t, msg, "Failed to fetch")
	title, err := Run(b, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "here", title, "127.0.0.1 still loads")
}

// WebRTC gathers no candidate: it would send UDP, which bypasses the
// proxy, to any address a page names as its STUN server.
func TestChromiumWebRTCSendsNoUDP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>here</title>`)
	}))
	defer srv.Close()
	b := Start(t, Artefacts(t, t.Name()))
	require.NoError(t, b.Do(chromedp.Navigate(srv.URL)))
	// The first candidate, or "none" when the gathering ends without one.
	first, err := Run(b, chromedp.Evaluate[string](`new Promise((resolve, reject) => {
		const pc = new RTCPeerConnection({iceServers: [{urls: "stun:192.0.2.1:3478"}]});
		pc.onicecandidate = e => resolve(e.candidate ? e.candidate.candidate : "none");
		pc.createDataChannel("d");
		pc.createOffer().then(o => pc.setLocalDescription(o)).catch(reject);
	})`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, "none", first)
}

// descendants are the processes whose parent, or its parent and so on, is
// pid: read from each process's stat, whose fourth field is its parent.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	parent := map[int]int{}
	for _, p := range pids(t) {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		// After the command's name in parentheses: state, then the parent.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		ppid, err := strconv.Atoi(fields[1])
		require.NoError(t, err)
		parent[p] = ppid
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// mentioning are the processes whose command line names dir anywhere.
func mentioning(t *testing.T, dir string) []int {
	t.Helper()
	var out []int
	for _, p := range pids(t) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			out = append(out, p)
		}
	}
	return out
}

func pids(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, p)
		}
	}
	return out
}
