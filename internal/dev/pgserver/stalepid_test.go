package pgserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A killed server's postmaster.pid whose PID the kernel has since given to
// another postgres process (another server's, here a stand-in named
// postgres, run by the server's user in another directory) is stale: the
// process runs on no part of this data directory, so Start takes the
// directory. Only a postgres whose working directory is the data directory
// (the postmaster and its children run there) is this cluster's.
func TestAStalePIDNowAnotherPostgresIsCleared(t *testing.T) {
	dir := testDataDir(t)
	s := start(t, Config{DataDir: dir})
	// The lock file of a server killed without its cleanup: the running
	// server's, put back after a clean stop, so that no process of it
	// still holds the cluster's shared memory (the next server would
	// refuse to start beside one).
	pidFile := filepath.Join(dir, "postmaster.pid")
	running, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A stand-in: sleep under the name postgres (its comm), run as the
	// server's user from another directory.
	bin := filepath.Join(filepath.Dir(dir), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "postgres"), body, 0o755); err != nil {
		t.Fatal(err)
	}
	cred, err := credential("nobody")
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command(filepath.Join(bin, "postgres"), "600")
	other.Dir = bin
	other.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(other.Process.Pid) + "/comm"); strings.TrimSpace(string(comm)) != "postgres" {
		t.Fatalf("the stand-in's comm is %q, want postgres", comm)
	}
	_, rest, _ := strings.Cut(string(running), "\n")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, Config{DataDir: dir})
	if v := version(t, s2); !strings.HasPrefix(v, "PostgreSQL 18.") {
		t.Fatalf("version() = %q", v)
	}
}
