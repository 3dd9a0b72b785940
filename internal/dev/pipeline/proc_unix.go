//go:build unix

package pipeline

import "syscall"

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
