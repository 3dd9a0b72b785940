//go:build !unix

package pipeline

import (
	"errors"
	"syscall"
)

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

func ownProcessGroup() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error {
	return errors.New("pipeline: the runtime interface emulator runs on Unix only")
}
