package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options says which stack to work on and where.
type Options struct {
	Name     string    // default "dev"; names the state directory
	CacheDir string    // tools and state; default ~/.cache/fifoworker
	Region   string    // default eu-west-1
	Ports    Ports     // 0 picks a free port
	Progress io.Writer // one line per step; default io.Discard
	// ReadyTimeout bounds the wait for every emulator to answer (default 120s).
	ReadyTimeout time.Duration
}

// Ports of the emulators.
type Ports struct {
	SQS, DynamoDB, S3 int
}

// State is what a running stack records about itself.
type State struct {
	Name      string    `json:"name"`
	Region    string    `json:"region"`
	External  string    `json:"external,omitempty"` // AWS_ENDPOINT_URL in use instead of emulators
	SQS       string    `json:"sqs,omitempty"`
	DynamoDB  string    `json:"dynamodb,omitempty"`
	S3        string    `json:"s3,omitempty"`
	RIE       string    `json:"rie"`
	Processes []Process `json:"processes,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Process is one emulator process of a stack.
type Process struct {
	Service string `json:"service"`
	PID     int    `json:"pid"`
	Port    int    `json:"port"`
	Program string `json:"program"` // what /proc/PID/cmdline must contain for the PID to be ours
	// StartTicks is the process's start time (clock ticks after boot, from
	// /proc/PID/stat): a PID reused by another process, even of the same
	// program, has another.
	StartTicks uint64 `json:"start_ticks"`
	Log        string `json:"log"`
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = "dev"
	}
	if !validName.MatchString(o.Name) {
		return fmt.Errorf("localstack: stack name %q: use 1-40 of [a-z0-9_-]", o.Name)
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Region == "" {
		o.Region = "eu-west-1"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 120 * time.Second
	}
	return nil
}

// DefaultCacheDir is $FIFOWORKER_CACHE, or ~/.cache/fifoworker.
func DefaultCacheDir() string {
	if d := os.Getenv("FIFOWORKER_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "fifoworker")
	}
	return filepath.Join(os.TempDir(), "fifoworker-cache")
}

func (o *Options) stateDir() string  { return filepath.Join(o.CacheDir, "stacks", o.Name) }
func (o *Options) statePath() string { return filepath.Join(o.stateDir(), "state.json") }

// Env returns the environment that points SDKs and tests at the stack, as
// KEY=VALUE pairs in a stable order.
func (s *State) Env() []string {
	env := map[string]string{
		"AWS_REGION":         s.Region,
		"AWS_DEFAULT_REGION": s.Region,
		"FIFOWORKER_STACK":   s.Name,
		"FIFOWORKER_RIE":     s.RIE,
	}
	if s.External != "" {
		env["AWS_ENDPOINT_URL"] = s.External
	} else {
		env["AWS_ENDPOINT_URL_SQS"] = s.SQS
		env["AWS_ENDPOINT_URL_DYNAMODB"] = s.DynamoDB
		env["AWS_ENDPOINT_URL_DYNAMODB_STREAMS"] = s.DynamoDB
		env["AWS_ENDPOINT_URL_S3"] = s.S3
		// The emulators accept any credentials; these keep the SDK from
		// looking for real ones.
		env["AWS_ACCESS_KEY_ID"] = "test"
		env["AWS_SECRET_ACCESS_KEY"] = "test"
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Shell renders Env as export lines a shell can eval.
func (s *State) Shell() string {
	var b strings.Builder
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(ShellExport(k, v) + "\n")
	}
	return b.String()
}

// Up starts the stack, or returns the state of the one already running
// under this name. It installs missing tools first.
func Up(ctx context.Context, o Options) (*State, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if s, err := load(o); err == nil {
		if s.External != "" || allAlive(s) {
			return s, nil
		}
		fmt.Fprintf(o.Progress, "localstack: stack %s was left half-running; stopping what remains\n", o.Name)
		if err := Down(o); err != nil {
			return nil, err
		}
	}
	if ext := os.Getenv("AWS_ENDPOINT_URL"); ext != "" {
		// A running LocalStack (or similar): start nothing, but the
		// runtime interface emulator is still ours to provide.
		rie, err := installGo(ctx, o.CacheDir, RIEModule, RIEVersion, o.Progress)
		if err != nil {
			return nil, err
		}
		s := &State{Name: o.Name, Region: o.Region, External: ext, RIE: rie, StartedAt: time.Now().UTC()}
		fmt.Fprintf(o.Progress, "localstack: AWS_ENDPOINT_URL=%s is set; starting no emulators\n", ext)
		return s, save(o, s)
	}
	if err := supported(); err != nil {
		return nil, err
	}
	tools, err := Install(ctx, o.CacheDir, o.Progress)
	if err != nil {
		return nil, err
	}
	ports, err := choosePorts(o.Ports)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.stateDir(), 0o755); err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	s := &State{
		Name: o.Name, Region: o.Region, RIE: tools.RIE, StartedAt: time.Now().UTC(),
		SQS:      fmt.Sprintf("http://127.0.0.1:%d", ports.SQS),
		DynamoDB: fmt.Sprintf("http://127.0.0.1:%d", ports.DynamoDB),
		S3:       fmt.Sprintf("http://127.0.0.1:%d", ports.S3),
	}
	specs := []struct {
		service string
		port    int
		program string
		args    []string
	}{
		{"dynamodb", ports.DynamoDB, tools.Java, []string{
			"-Xmx1g", "-Djava.library.path=" + tools.DynamoDBLib, "-jar", tools.DynamoDBJar,
			"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(ports.DynamoDB)}},
		{"sqs", ports.SQS, tools.Node, []string{tools.FauxqsScript, strconv.Itoa(ports.SQS)}},
		{"s3", ports.S3, tools.GofakeS3, []string{"-backend", "memory", "-host", fmt.Sprintf("127.0.0.1:%d", ports.S3), "-quiet"}},
	}
	exited := map[string]<-chan error{}
	for _, sp := range specs {
		p, done, err := start(o.stateDir(), sp.service, sp.port, sp.program, sp.args)
		if err != nil {
			_ = save(o, s)
			_ = Down(o)
			return nil, err
		}
		s.Processes = append(s.Processes, p)
		exited[sp.service] = done
		if err := save(o, s); err != nil { // record each PID as soon as it exists
			_ = Down(o)
			return nil, err
		}
	}
	if err := waitReady(ctx, o, s, exited); err != nil {
		_ = Down(o)
		return nil, err
	}
	return s, nil
}

// start launches one emulator in its own process group, logging to a file
// in the state directory. done receives the process's exit.
func start(stateDir, service string, port int, program string, args []string) (Process, <-chan error, error) {
	logPath := filepath.Join(stateDir, service+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Process{}, nil, fmt.Errorf("localstack: %w", err)
	}
	defer func() { _ = logFile.Close() }() // the child has its own descriptor
	cmd := exec.Command(program, args...)
	cmd.Dir = stateDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Stdin = nil
	cmd.SysProcAttr = ownProcessGroup()
	if err := cmd.Start(); err != nil {
		return Process{}, nil, fmt.Errorf("localstack: start %s (%s): %w", service, program, err)
	}
	ticks, _, err := procStat(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return Process{}, nil, fmt.Errorf("localstack: start %s: %w", service, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reaps the child if it dies while we run
	return Process{Service: service, PID: cmd.Process.Pid, Port: port, Program: filepath.Base(program), StartTicks: ticks, Log: logPath}, done, nil
}

func choosePorts(want Ports) (Ports, error) {
	got := want
	for _, p := range []struct {
		service string
		port    *int
	}{{"sqs", &got.SQS}, {"dynamodb", &got.DynamoDB}, {"s3", &got.S3}} {
		if *p.port != 0 {
			if err := portFree(*p.port); err != nil {
				return Ports{}, fmt.Errorf("localstack: port %d for %s is in use (%w): choose another, or 0 for a free one", *p.port, p.service, err)
			}
			continue
		}
		port, err := freePort()
		if err != nil {
			return Ports{}, fmt.Errorf("localstack: no free port for %s: %w", p.service, err)
		}
		*p.port = port
	}
	if got.SQS == got.DynamoDB || got.SQS == got.S3 || got.DynamoDB == got.S3 {
		return Ports{}, fmt.Errorf("localstack: ports must differ: %+v", got)
	}
	return got, nil
}

// portFree checks 127.0.0.1 and every interface: DynamoDB Local binds all.
func portFree(port int) error {
	for _, host := range []string{"127.0.0.1", ""} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		_ = l.Close()
	}
	return nil
}

func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if portFree(port) == nil {
			return port, nil
		}
	}
	return 0, errors.New("every port tried was taken")
}

func load(o Options) (*State, error) {
	raw, err := os.ReadFile(o.statePath())
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("localstack: %s: %w", o.statePath(), err)
	}
	return &s, nil
}

func save(o Options, s *State) error {
	if err := os.MkdirAll(o.stateDir(), 0o755); err != nil {
		return fmt.Errorf("localstack: %w", err)
	}
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := o.statePath() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return fmt.Errorf("localstack: %w", err)
	}
	return os.Rename(tmp, o.statePath())
}

// Load returns the state of the running stack named in o.
func Load(o Options) (*State, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s, err := load(o)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("localstack: no stack %q is running (start it with: fifoworker local up --name %s)", o.Name, o.Name)
	}
	return s, err
}

func allAlive(s *State) bool {
	for _, p := range s.Processes {
		if !ours(p) {
			return false
		}
	}
	return len(s.Processes) > 0
}

// Down stops the stack's recorded processes (SIGTERM to each process group,
// SIGKILL after 10 s) and removes its state directory, logs included. Stopping a stack that is not
// running is not an error.
func Down(o Options) error {
	if err := o.defaults(); err != nil {
		return err
	}
	s, err := load(o)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range s.Processes {
		if !ours(p) {
			continue
		}
		if err := signalGroup(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("localstack: stop %s (pid %d): %w", p.Service, p.PID, err))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range s.Processes {
		for ours(p) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if ours(p) {
			_ = signalGroup(p.PID, syscall.SIGKILL)
		}
	}
	if err := os.RemoveAll(o.stateDir()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tail returns the last lines of a log file, for error messages.
func tail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
