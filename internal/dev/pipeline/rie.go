package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// RIEProcess is a function's bootstrap running under the Lambda runtime
// interface emulator on 127.0.0.1.
type RIEProcess struct {
	Name string
	Addr string // host:port of the emulator's invoke API
	Log  string // the emulator's and the bootstrap's output
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed when the emulator has exited; exit holds why
	exit error
}

// RIEConfig configures a function under the runtime interface emulator.
// Every field but Env is required.
type RIEConfig struct {
	// Name is the function's (AWS_LAMBDA_FUNCTION_NAME; its log is
	// LogDir/<Name>.rie.log).
	Name string
	// RIE is the emulator's binary, and Bootstrap the function's.
	RIE, Bootstrap string
	// LogDir is where the emulator's and the bootstrap's output goes.
	LogDir string
	// Timeout is the function's timeout, which the emulator enforces: a
	// whole number of seconds, 1s to 15m, as Lambda's.
	Timeout time.Duration
	// Env is the function's environment; nothing else of this process's
	// is given it but PATH and HOME. Default none.
	Env map[string]string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c RIEConfig) Validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: Name is empty", ErrInvalidConfig)
	case c.RIE == "":
		return fmt.Errorf("%w: RIE is empty", ErrInvalidConfig)
	case c.Bootstrap == "":
		return fmt.Errorf("%w: Bootstrap is empty", ErrInvalidConfig)
	case c.LogDir == "":
		return fmt.Errorf("%w: LogDir is empty", ErrInvalidConfig)
	case c.Timeout < time.Second || c.Timeout > maxFunctionTimeout || c.Timeout%time.Second != 0:
		return fmt.Errorf("%w: Timeout %v is not a whole number of seconds from 1s to %v", ErrInvalidConfig, c.Timeout, maxFunctionTimeout)
	}
	return nil
}

// maxFunctionTimeout is Lambda's longest function timeout.
const maxFunctionTimeout = 15 * time.Minute

// StartRIE starts cfg.RIE running cfg.Bootstrap, or returns an error
// (wrapping ErrInvalidConfig for a bad cfg). Both addresses are given
// explicitly: the emulator listens on 0.0.0.0:8080 unless told otherwise.
func StartRIE(ctx context.Context, cfg RIEConfig) (*RIEProcess, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The two ports are free when picked, but another process may take one
	// before the emulator binds it (a connection's ephemeral port comes
	// from the same range): the emulator then exits saying so, and is
	// started again on new ports.
	for attempt := 1; ; attempt++ {
		p, err := startRIE(ctx, cfg)
		if err == nil || attempt == maxRIEStarts || !errors.Is(err, errPortTaken) {
			return p, err
		}
	}
}

// maxRIEStarts bounds the starts of one emulator whose port was taken.
const maxRIEStarts = 5

// errPortTaken marks an emulator that exited because a port it was given
// was taken meanwhile.
var errPortTaken = errors.New("a port was taken before the emulator bound it")

func startRIE(ctx context.Context, cfg RIEConfig) (*RIEProcess, error) {
	name, rie, bootstrap, logDir, timeout, env := cfg.Name, cfg.RIE, cfg.Bootstrap, cfg.LogDir, cfg.Timeout, cfg.Env
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	invokePort, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &RIEProcess{Name: name, Addr: fmt.Sprintf("127.0.0.1:%d", invokePort), Log: filepath.Join(logDir, name+".rie.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.Log)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	p.cmd = exec.Command(rie,
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--runtime-interface-emulator-address", p.Addr,
		bootstrap)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(timeout/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME=" + name}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = ownProcessGroup()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pipeline: start %s under the RIE: %w", name, err)
	}
	p.pid = p.cmd.Process.Pid
	go func() { p.exit = p.cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.Addr, 100*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return p, nil
		}
		select {
		case <-p.done:
			if log, _ := os.ReadFile(p.Log); bytes.Contains(log, []byte("address already in use")) {
				return nil, fmt.Errorf("pipeline: the RIE for %s: %w (%w)", name, errPortTaken, p.exit)
			}
			return nil, fmt.Errorf("pipeline: the RIE for %s exited before listening (%w); see %s", name, p.exit, p.Log)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("pipeline: the RIE for %s did not listen on %s within 10s; see %s", name, p.Addr, p.Log)
		}
	}
}

// PID is the emulator's process id. The emulator runs the function's
// bootstrap as its child, and starts a new one at the next invocation
// after the bootstrap exited.
func (p *RIEProcess) PID() int {
	if p == nil {
		return 0
	}
	return p.pid
}

// Stop ends the emulator and its bootstrap, by process group: TERM, then
// KILL after 5 s. It may be called more than once.
func (p *RIEProcess) Stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = signalGroup(pgid, sigTerm)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = signalGroup(pgid, sigKill)
		<-p.done
	}
	_ = signalGroup(pgid, sigKill) // a bootstrap the emulator left behind
	p.cmd = nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pipeline: no free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("pipeline: not a TCP address")
	}
	return addr.Port, nil
}
