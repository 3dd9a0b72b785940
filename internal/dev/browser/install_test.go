package browser

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// installRun is install-chromium run against stand-ins for id, apt-cache,
// apt-get and chromium in a directory that is the whole PATH: each
// stand-in logs its arguments, so the test sees what the script asked of
// apt.
type installRun struct {
	t   *testing.T
	bin string
	log string
}

func newInstallRun(t *testing.T) *installRun {
	t.Helper()
	dir := t.TempDir()
	r := &installRun{t: t, bin: filepath.Join(dir, "bin"), log: filepath.Join(dir, "log")}
	require.NoError(t, os.Mkdir(r.bin, 0o755))
	// The stand-ins' own tools, which the script never calls.
	for _, tool := range []string{"chmod", "touch"} {
		path, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(path, filepath.Join(r.bin, tool)))
	}
	return r
}

// tool writes a stand-in that logs its name and arguments, then runs body.
func (r *installRun) tool(name, body string) {
	r.t.Helper()
	script := "#!/bin/sh\necho \"" + name + " $*\" >> " + r.log + "\n" + body + "\n"
	require.NoError(r.t, os.WriteFile(filepath.Join(r.bin, name), []byte(script), 0o755))
}

// uid is id answering uid as id -u does.
func (r *installRun) uid(uid string) { r.tool("id", "echo "+uid) }

// run runs the script with env, and returns its exit code, its stderr and
// what the stand-ins logged.
func (r *installRun) run(env ...string) (int, string, []string) {
	r.t.Helper()
	bash, err := exec.LookPath("bash")
	require.NoError(r.t, err)
	cmd := exec.Command(bash, "install-chromium")
	cmd.Env = append([]string{"PATH=" + r.bin}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(r.t, err)
	}
	logged, err := os.ReadFile(r.log)
	if !os.IsNotExist(err) {
		require.NoError(r.t, err)
	}
	var calls []string
	for _, l := range strings.Split(strings.TrimSpace(string(logged)), "\n") {
		if l != "" && !strings.HasPrefix(l, "id ") {
			calls = append(calls, l)
		}
	}
	return code, stderr.String(), calls
}

// installs is apt-get's stand-in: install puts chromium on PATH.
func (r *installRun) installs() {
	r.tool("apt-get", `[ "$1" = install ] && printf '#!/bin/sh\n' > `+r.bin+`/chromium && chmod +x `+r.bin+`/chromium; exit 0`)
}

const aptInstall = "apt-get install -y --no-install-recommends chromium"

func TestInstallChromiumLeavesAnInstalledOneAlone(t *testing.T) {
	t.Parallel()
	r := newInstallRun(t)
	r.uid("0")
	r.tool("chromium", "")
	r.installs()
	code, stderr, calls := r.run()
	require.Equal(t, 0, code, stderr)
	require.Empty(t, calls, "nothing asked of apt")
}

func TestInstallChromiumInstallsWhenMissing(t *testing.T) {
	t.Parallel()
	r := newInstallRun(t)
	r.uid("0")
	r.tool("apt-cache", "exit 0") // the package lists know chromium
	r.installs()
	code, stderr, calls := r.run()
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"apt-cache show chromium", aptInstall}, calls, "no update when the package is known; never a pinned version")
}

func TestInstallChromiumUpdatesThePackageListsWhenChromiumIsUnknown(t *testing.T) {
	t.Parallel()
	r := newInstallRun(t)
	r.uid("0")
	r.tool("apt-cache", "exit 100") // a fresh machine: no package lists
	r.installs()
	code, stderr, calls := r.run()
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"apt-cache show chromium", "apt-get update", aptInstall}, calls)
}

func TestInstallChromiumUpdatesAndRetriesWhenTheInstallFails(t *testing.T) {
	t.Parallel()
	r := newInstallRun(t)
	r.uid("0")
	r.tool("apt-cache", "exit 0")
	// Old lists name a version the archive dropped: the install fails until
	// the lists are updated.
	r.tool("apt-get", `case "$1" in update) touch `+r.bin+`/.updated;; install) [ -e `+r.bin+`/.updated ] || exit 100; printf '#!/bin/sh\n' > `+r.bin+`/chromium; chmod +x `+r.bin+`/chromium;; esac`)
	code, stderr, calls := r.run()
	require.Equal(t, 0, code, stderr)
	require.Equal(t, []string{"apt-cache show chromium", aptInstall, "apt-get update", aptInstall}, calls)
}

func TestInstallChromiumFailsWithTheReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(r *installRun)
		env   []string
		want  string
	}{
		{"not root", func(r *installRun) { r.uid("1000"); r.installs() }, nil,
			"chromium is not installed, and installing it needs root: run '" + aptInstall + "' as root"},
		{"no apt-get", func(r *installRun) { r.uid("0") }, nil,
			"chromium is not installed, and this machine has no apt-get to install Debian's package"},
		{"the install fails twice", func(r *installRun) {
			r.uid("0")
			r.tool("apt-cache", "exit 0")
			r.tool("apt-get", `[ "$1" = update ] || exit 100`)
		}, nil,
			"could not install chromium with apt-get (its output is above)"},
		{"installed but not on PATH", func(r *installRun) { r.uid("0"); r.tool("apt-cache", "exit 0"); r.tool("apt-get", "exit 0") }, nil,
			"apt-get installed chromium, but it is not on PATH"},
		{"FIFOWORKER_CHROMIUM names no program", func(r *installRun) { r.uid("0"); r.installs() }, []string{"FIFOWORKER_CHROMIUM=/nonexistent/chromium"},
			"FIFOWORKER_CHROMIUM=/nonexistent/chromium is not an executable file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newInstallRun(t)
			tc.setup(r)
			code, stderr, _ := r.run(tc.env...)
			require.Equal(t, 1, code, stderr)
			require.Contains(t, stderr, "install-chromium: "+tc.want)
		})
	}
}
