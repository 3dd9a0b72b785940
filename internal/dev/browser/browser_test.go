package browser

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no artefacts directory", Config{}, "Artefacts"},
		{"a negative timeout", Config{Artefacts: t.TempDir(), Timeout: -1}, "Timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
		})
	}
}

// Without a Chromium, New says how to get one, and starts nothing.
func TestNewWithoutChromiumSaysHowToGetOne(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Config{Artefacts: t.TempDir(), Getenv: func(string) string { return "" }})
	require.ErrorIs(t, err, ErrNoChromium)
	require.ErrorContains(t, err, "make chromium installs Debian's package")
}

func TestBinaryPrefersTheConfigThenTheEnvironment(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvChromium {
				return v
			}
			return ""
		}
	}
	got, err := Binary(Config{Binary: "/a/chromium", Getenv: env("/b/chromium")})
	require.NoError(t, err)
	require.Equal(t, "/a/chromium", got)
	got, err = Binary(Config{Getenv: env("/b/chromium")})
	require.NoError(t, err)
	require.Equal(t, "/b/chromium", got)
}

// A Chromium that cannot start is an error that says so, and leaves no
// user data directory or process behind.
func TestNewFailsWhenChromiumCannotStart(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Artefacts: t.TempDir(), Binary: "/nonexistent/chromium"})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrInvalidConfig))
	require.ErrorContains(t, err, "browser: start /nonexistent/chromium")
}

func TestHasPathMatchesTheWholeDirectory(t *testing.T) {
	t.Parallel()
	const dir = "/tmp/fifoworker-chromium-12"
	for _, tc := range []struct {
		cmdline string
		want    bool
	}{
		{"chromium\x00--user-data-dir=" + dir, true},
		{"chromium\x00--user-data-dir=" + dir + "\x00--headless", true},
		{"chromium --type=renderer --user-data-dir=" + dir + " --lang=en", true},
		{"chrome_crashpad_handler\x00--database=" + dir + "/Crash Reports", true},
		{"x\x00\"" + dir + "\"", true},
		{"chromium\x00--user-data-dir=" + dir + "3", false},
		{"chromium\x00--user-data-dir=" + dir + "3\x00" + dir + "-x", false},
		{"chromium\x00--user-data-dir=" + dir + "3\x00" + dir, true},
		{"chromium\x00--user-data-dir=/tmp/fifoworker-chromium-1", false},
		{"", false},
	} {
		require.Equal(t, tc.want, hasPath([]byte(tc.cmdline), dir), "%q", tc.cmdline)
	}
}

// A process that names the user data directory and does not end with the
// browser is killed, named in Close's error, and gone, with the directory,
// when Close returns.
func TestCloseKillsALeftoverAndRemovesTheDirectoryOnceItIsGone(t *testing.T) {
	t.Parallel()
	dataDir, err := os.MkdirTemp("", "fifoworker-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "f"), nil, 0o600))
	leftover := exec.Command("tail", "-f", filepath.Join(dataDir, "f"))
	require.NoError(t, leftover.Start())
	exited := make(chan error, 1)
	go func() { exited <- leftover.Wait() }()
	b := &Browser{cfg: Config{}.withDefaults(), cancelTab: func() {}, cancelAlloc: func() {}, dataDir: dataDir, stopWait: time.Second}

	err = b.Close()
	require.ErrorContains(t, err, fmt.Sprintf("processes [%d] still ran after the stop (killed)", leftover.Process.Pid))
	require.NotContains(t, err.Error(), "after SIGKILL")
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(leftover.Process.Pid), "cmdline"))
	require.Empty(t, string(cmdline), "the leftover has exited when Close returns")
	_, err = os.Stat(dataDir)
	require.True(t, os.IsNotExist(err), "the user data directory is removed")
	require.ErrorContains(t, <-exited, "killed")
}
