//go:build !linux

package localstack

import (
	"fmt"
	"runtime"
	"syscall"
)

// errUnsupported says why the local stack does not run here. It recognises
// its own processes after a restart by their start time in /proc/PID/stat,
// which only Linux has; a stack that could not tell its processes from a
// reused PID could signal someone else's program on "down".
var errUnsupported = fmt.Errorf("localstack: the local stack runs on Linux only (it identifies its emulator processes through /proc), not on %s; "+
	"run it in a Linux VM or container, or point AWS_ENDPOINT_URL at LocalStack", runtime.GOOS)

func supported() error { return errUnsupported }

func ownProcessGroup() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error { return errUnsupported }

func procStat(int) (uint64, string, error) { return 0, "", errUnsupported }

func stopLeftPostmaster(string) {}

// ours is false: no process can be shown to be ours without /proc.
func ours(Process) bool { return false }
