package pgserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

// testDataDir is a directory for a cluster that the server's unprivileged
// user can reach when the tests run as root (t.TempDir is 0700).
func testDataDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "pgserver-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	return filepath.Join(parent, "data")
}

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func version(t *testing.T, s *Server) string {
	t.Helper()
	var v string
	queryRow(t, s, "SELECT version()", &v)
	return v
}

// queryRow runs query on s and scans its one row into dest.
func queryRow(t *testing.T, s *Server, query string, dest ...any) {
	t.Helper()
	db, err := pgwire.Open(s.DSN())
	if err != nil {
		t.Fatalf("open %s: %v", s.DSN(), err)
	}
	defer func() { _ = db.Close() }()
	if err := db.QueryRowContext(t.Context(), query).Scan(dest...); err != nil {
		t.Fatalf("%s on %s: %v", query, s.DSN(), err)
	}
}

// listeners returns the local addresses (hex, as /proc/net/tcp{,6} write
// them) listening on port.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			addr, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				addrs = append(addrs, file+" "+addr)
			}
		}
		_ = f.Close()
	}
	return addrs
}

func TestStartServesPostgreSQL18OnLoopbackOnlyAndStopFreesThePort(t *testing.T) {
	s := start(t, Config{})
	if v := version(t, s); !strings.HasPrefix(v, "PostgreSQL 18.") {
		t.Fatalf("version() = %q, want PostgreSQL 18.x", v)
	}
	got := listeners(t, s.Port())
	if len(got) != 1 || got[0] != "/proc/net/tcp 0100007F" {
		t.Fatalf("listening sockets on port %d = %v, want only 127.0.0.1 (/proc/net/tcp 0100007F)", s.Port(), got)
	}
	pid, dataDir := s.PID(), s.DataDir()
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("postmaster PID %d after Stop: kill 0 = %v, want ESRCH", pid, err)
	}
	if !s.cmd.ProcessState.Success() {
		t.Fatalf("postmaster ended by %v, want a fast shutdown's exit 0", s.cmd.ProcessState)
	}
	l, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Fatalf("port %d after Stop: %v", s.Port(), err)
	}
	_ = l.Close()
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start's own data dir %s after Stop: %v, want removed", dataDir, err)
	}
}

func TestASecondStartReusesTheInstallAndAKilledServersDataDir(t *testing.T) {
	dir := testDataDir(t)
	s := start(t, Config{DataDir: dir})
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err != nil {
		t.Fatalf("the killed server's postmaster.pid: %v, want left behind", err)
	}
	// The kernel gave the PID to another live process of the server's user
	// since: PostgreSQL alone takes the lock file for a running server's.
	other := liveProcessOfTheServersUser(t)
	pidFile := filepath.Join(dir, "postmaster.pid")
	body, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(body), "\n")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	s2 := start(t, Config{DataDir: dir, Progress: &progress})
	if progress.Len() != 0 {
		t.Fatalf("second Start with the same cache installed again: %q", progress.String())
	}
	if v := version(t, s2); !strings.HasPrefix(v, "PostgreSQL 18.") {
		t.Fatalf("version() = %q", v)
	}
	if err := s2.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("a given data dir after Stop: %v, want kept", err)
	}
}

// liveProcessOfTheServersUser starts a sleep as the user the server runs as
// and returns its PID; the test's end kills it.
func liveProcessOfTheServersUser(t *testing.T) int {
	t.Helper()
	cred, err := credential("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func TestStartFailsClearly(t *testing.T) {
	t.Run("port taken", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		_, err = Start(t.Context(), Config{Port: l.Addr().(*net.TCPAddr).Port})
		if !errors.Is(err, ErrPortTaken) {
			t.Fatalf("Start on a taken port: %v, want ErrPortTaken", err)
		}
	})
	t.Run("server exits during start", func(t *testing.T) {
		dir := testDataDir(t)
		s := start(t, Config{DataDir: dir})
		if err := s.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "postgresql.conf")
		f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fmt.Fprintln(f, "no_such_setting = 1")
		_ = f.Close()
		_, err = Start(t.Context(), Config{DataDir: dir})
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "no_such_setting") {
			t.Fatalf("Start with a bad setting: %v, want ErrExited quoting the log", err)
		}
	})
	t.Run("binaries missing", func(t *testing.T) {
		err := checkBinaries(t.TempDir())
		if !errors.Is(err, ErrBinariesMissing) || !strings.Contains(err.Error(), "initdb") {
			t.Fatalf("checkBinaries on an empty tree: %v, want ErrBinariesMissing naming initdb", err)
		}
	})
	t.Run("live server on the data dir", func(t *testing.T) {
		dir := testDataDir(t)
		start(t, Config{DataDir: dir})
		_, err := Start(t.Context(), Config{DataDir: dir})
		if !errors.Is(err, ErrAlreadyRunning) {
			t.Fatalf("second Start on a live data dir: %v, want ErrAlreadyRunning", err)
		}
	})
}

func TestStopKillsAServerThatDoesNotShutDownInTime(t *testing.T) {
	s := start(t, Config{StopTimeout: time.Nanosecond})
	pid := s.PID()
	// SIGSTOP: the postmaster cannot act on SIGINT, so only the kill ends it.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("PID %d after Stop: %v, want ESRCH", pid, err)
	}
	var ws syscall.WaitStatus
	if st, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		ws = st
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("postmaster ended by %v, want SIGKILL", s.cmd.ProcessState)
	}
}

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   Config
	}{
		{"Port", Config{Port: -1}},
		{"Port", Config{Port: 65536}},
		{"StartTimeout", Config{StartTimeout: -time.Second}},
		{"StopTimeout", Config{StopTimeout: -time.Second}},
		{"DataDir", Config{DataDir: "relative/dir"}},
	} {
		_, err := Start(t.Context(), tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Start(%+v) = %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	if err := (Config{Port: 65535}).Validate(); err != nil {
		t.Errorf("Port 65535: %v", err)
	}
}

// cancelOnceAClusterAppears cancels when a PG_VERSION file matches pattern
// (a directory glob and "PG_VERSION"): initdb writes it early, so initdb is
// then running.
func cancelOnceAClusterAppears(pattern string, cancel context.CancelFunc, done <-chan struct{}) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			cancel()
			return
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

func TestAnInitdbInterruptedHalfwayDoesNotBlockTheNextStart(t *testing.T) {
	dir := testDataDir(t)
	if _, err := Install(t.Context(), localstack.DefaultCacheDir(), io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go cancelOnceAClusterAppears(filepath.Join(filepath.Dir(dir), "*", "PG_VERSION"), cancel, done)
	s, err := Start(ctx, Config{DataDir: dir, NoTemplate: true}) // initdb runs for this data dir
	close(done)
	cancel()
	if err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("Start finished before initdb was interrupted; the test did not interrupt it")
	}
	s = start(t, Config{DataDir: dir})
	if v := version(t, s); !strings.HasPrefix(v, "PostgreSQL 18.") {
		t.Fatalf("version() = %q", v)
	}
}
