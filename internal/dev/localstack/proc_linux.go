//go:build linux

package localstack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// supported reports nil: the stack runs here.
func supported() error { return nil }

// ownProcessGroup starts an emulator in a process group of its own, so that
// Down stops its children (java, node) with it.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// procStat reads a process's start time and state from /proc/PID/stat.
func procStat(pid int) (startTicks uint64, state string, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, "", fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(raw[i+1:])) // fields 3 (state) onwards
	if len(fields) < 20 {
		return 0, "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	startTicks, err = strconv.ParseUint(fields[19], 10, 64) // field 22
	return startTicks, fields[0], err
}

// stopLeftPostmaster kills the postmaster that still runs on the stack's
// PostgreSQL data directory dir after its `local postgres` process is gone
// (killed before it could stop the server, which runs in a process group
// of its own): postmaster.pid names it, and its command line must name dir
// for the PID to be taken as it. The data directory is removed next, so
// nothing is lost that a fast shutdown would keep.
func stopLeftPostmaster(dir string) {
	body, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return
	}
	first, _, _ := strings.Cut(string(body), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("\x00-D\x00"+dir+"\x00")) {
		return
	}
	_ = signalGroup(pid, syscall.SIGKILL)
}

// ours reports whether pid is still the process we started: same start
// time, same program, and not a zombie (which has exited and only waits to
// be reaped).
func ours(p Process) bool {
	ticks, state, err := procStat(p.PID)
	// StartTicks 0: recorded before start times were, checked by program only.
	if err != nil || state == "Z" || (p.StartTicks != 0 && ticks != p.StartTicks) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	return err == nil && strings.Contains(string(cmdline), p.Program)
}
