package cpuquota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestForMemoryIsLambdasShareOfOneCPU(t *testing.T) {
	t.Parallel()
	for mb, want := range map[int]time.Duration{
		128: 7236 * time.Microsecond, 256: 14471 * time.Microsecond, 512: 28943 * time.Microsecond,
		1769: Period, 3538: 2 * Period,
	} {
		require.Equal(t, want, ForMemory(mb), "%d MB", mb)
	}
}

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", ".", "..", "a/b", "a b", "../up"} {
		_, err := New(Config{Name: name, Root: t.TempDir()})
		require.ErrorIs(t, err, ErrInvalidConfig, "%q", name)
		require.ErrorContains(t, err, "Name", "%q", name)
	}
}

// fakeV1 is a root with v1's cpu hierarchy as files.
func fakeV1(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cpu"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu", "cpu.cfs_quota_us"), []byte("-1\n"), 0o644))
	return root
}

// fakeV2 is a root with cgroup v2's files, listing controllers.
func fakeV2(t *testing.T, controllers string) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte(controllers+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), nil, 0o644))
	return root
}

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}

func TestV1SetsTheCFSQuotaAndPeriod(t *testing.T) {
	t.Parallel()
	root := fakeV1(t)
	g, err := New(Config{Name: "mem-1", Root: root})
	require.NoError(t, err)
	dir := filepath.Join(root, "cpu", "mem-1")
	require.Equal(t, dir, g.Dir())
	require.Equal(t, filepath.Join(dir, "cgroup.procs"), g.ProcsFile())
	require.Equal(t, "-1", read(t, filepath.Join(dir, "cpu.cfs_quota_us")), "a new group has no quota")
	require.Equal(t, "100000", read(t, filepath.Join(dir, "cpu.cfs_period_us")))

	require.NoError(t, g.SetQuota(ForMemory(128)))
	require.Equal(t, "7236", read(t, filepath.Join(dir, "cpu.cfs_quota_us")))
	require.NoFileExists(t, filepath.Join(dir, "cpu.max"))
	require.NoError(t, g.SetQuota(0))
	require.Equal(t, "-1", read(t, filepath.Join(dir, "cpu.cfs_quota_us")))
}

func TestV2SetsCPUMaxWhenTheRootHasCgroupControllers(t *testing.T) {
	t.Parallel()
	root := fakeV2(t, "cpuset cpu io memory")
	// v1's files beside it are not used: cgroup.controllers decides.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cpu"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu", "cpu.cfs_quota_us"), []byte("-1\n"), 0o644))
	g, err := New(Config{Name: "mem-2", Root: root})
	require.NoError(t, err)
	dir := filepath.Join(root, "mem-2")
	require.Equal(t, dir, g.Dir())
	require.Equal(t, "+cpu", read(t, filepath.Join(root, "cgroup.subtree_control")), "the root delegates cpu to its children")
	require.Equal(t, "max 100000", read(t, filepath.Join(dir, "cpu.max")))

	require.NoError(t, g.SetQuota(ForMemory(512)))
	require.Equal(t, "28943 100000", read(t, filepath.Join(dir, "cpu.max")))
	require.NoFileExists(t, filepath.Join(dir, "cpu.cfs_quota_us"))
}

func TestNewFailsSayingWhyWithoutACPUController(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Name: "x", Root: fakeV2(t, "io memory")})
	require.ErrorIs(t, err, ErrNoCPUController)
	require.ErrorContains(t, err, "cgroup v2")

	_, err = New(Config{Name: "x", Root: t.TempDir()})
	require.ErrorIs(t, err, ErrNoCPUController)
	require.ErrorContains(t, err, "cpu.cfs_quota_us")
}

func TestAPermissionErrorSaysRootIsNeeded(t *testing.T) {
	t.Parallel()
	err := permission(fmt.Errorf("create: %w", fs.ErrPermission))
	require.ErrorIs(t, err, ErrNeedsRoot)
	require.ErrorIs(t, err, fs.ErrPermission)
	other := errors.New("disk full")
	require.Equal(t, other, permission(other))
}

func TestSetQuotaRefusesLessThanAMillisecond(t *testing.T) {
	t.Parallel()
	g, err := New(Config{Name: "q", Root: fakeV1(t)})
	require.NoError(t, err)
	require.ErrorIs(t, g.SetQuota(time.Millisecond-time.Microsecond), ErrInvalidConfig)
	require.NoError(t, g.SetQuota(time.Millisecond))
	require.Equal(t, "1000", read(t, filepath.Join(g.Dir(), "cpu.cfs_quota_us")))
}

func TestRemoveMovesTheProcessesLeftToTheParentAndRemovesTheGroupOnce(t *testing.T) {
	t.Parallel()
	root := fakeV1(t)
	g, err := New(Config{Name: "r", Root: root})
	require.NoError(t, err)
	require.NoError(t, g.Add(4242))
	require.Equal(t, "4242", read(t, g.ProcsFile()))
	require.ErrorIs(t, g.Add(0), ErrInvalidConfig)
	// A plain directory keeps its files, which rmdir refuses (the
	// kernel's control files go with the group): the move is seen first.
	require.Error(t, g.Remove())
	require.Equal(t, "4242", read(t, filepath.Join(root, "cpu", "cgroup.procs")), "moved to the parent")

	for _, f := range []string{"cgroup.procs", "cpu.cfs_quota_us", "cpu.cfs_period_us"} {
		require.NoError(t, os.Remove(filepath.Join(g.Dir(), f)))
	}
	require.NoError(t, g.Remove())
	require.NoDirExists(t, g.Dir())
	require.NoError(t, g.Remove(), "already gone")
}

// The script enters the group and records its pid, and the bootstrap it
// execs keeps that pid: it is the process the group and the pid file name.
func TestWrapEntersTheGroupAndExecsTheBootstrapUnderItsPID(t *testing.T) {
	t.Parallel()
	g, err := New(Config{Name: "w", Root: fakeV1(t)})
	require.NoError(t, err)
	dir := t.TempDir()
	out := filepath.Join(dir, "ran")
	bootstrap := filepath.Join(dir, "boot strap's")
	require.NoError(t, os.WriteFile(bootstrap, []byte("#!/bin/sh\necho $$ > '"+out+"'\n"), 0o755)) //nolint:gosec // a test's executable
	script, err := g.Wrap(dir, "worker", bootstrap)
	require.NoError(t, err)
	require.NoError(t, exec.Command(script).Run())

	pid, err := ReadPID(dir, "worker")
	require.NoError(t, err)
	require.Positive(t, pid)
	require.Equal(t, fmt.Sprint(pid), strings.TrimSpace(read(t, g.ProcsFile())))
	require.Equal(t, fmt.Sprint(pid), strings.TrimSpace(read(t, out)), "the bootstrap runs as the script's process")
}

func TestPeakRSSReadsVmHWM(t *testing.T) {
	t.Parallel()
	n, err := parseHWM([]byte("Name:\tbootstrap\nVmPeak:\t 1254000 kB\nVmHWM:\t   15872 kB\nVmRSS:\t   15000 kB\n"))
	require.NoError(t, err)
	require.Equal(t, int64(15872*1024), n)
	for _, bad := range []string{"VmRSS:\t 1 kB\n", "VmHWM:\t 12 MB\n", "VmHWM:\t x kB\n"} {
		_, err := parseHWM([]byte(bad))
		require.ErrorIs(t, err, ErrNoPeak, "%q", bad)
	}
	self, err := PeakRSS("/proc", os.Getpid())
	require.NoError(t, err)
	require.Positive(t, self)
}

func TestSetWeightIsCPUWeightOnV2AndSharesOnV1(t *testing.T) {
	t.Parallel()
	v1, err := New(Config{Name: "w1", Root: fakeV1(t)})
	require.NoError(t, err)
	v2, err := New(Config{Name: "w2", Root: fakeV2(t, "cpu")})
	require.NoError(t, err)
	for weight, shares := range map[int]string{MinWeight: "10", 100: "1024", 1000: "10240", MaxWeight: "102400"} {
		require.NoError(t, v1.SetWeight(weight))
		require.Equal(t, shares, read(t, filepath.Join(v1.Dir(), "cpu.shares")), "weight %d", weight)
		require.NoError(t, v2.SetWeight(weight))
		require.Equal(t, fmt.Sprint(weight), read(t, filepath.Join(v2.Dir(), "cpu.weight")))
	}
	for _, bad := range []int{MinWeight - 1, MaxWeight + 1} {
		require.ErrorIs(t, v1.SetWeight(bad), ErrInvalidConfig, "%d", bad)
		require.ErrorIs(t, v2.SetWeight(bad), ErrInvalidConfig, "%d", bad)
	}
}
