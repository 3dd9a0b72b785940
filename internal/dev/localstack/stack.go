package localstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	// Broker is the fifoworker binary that runs the stack's own processes:
	// its Kafka broker, as `Broker local kafka-broker --port N`, and its
	// PostgreSQL server, as `Broker local postgres --port N --data-dir D`
	// (default: this program, os.Executable). A test binary calling Up
	// must name one (a fifoworker built for the test, or itself if its
	// TestMain answers those arguments as fifoworker does): run with them,
	// a test binary would run its tests, so Up refuses to default to one.
	Broker string
}

// Ports of the emulators, the broker and the PostgreSQL server.
type Ports struct {
	SQS, DynamoDB, S3, Kafka, Postgres int
}

// port is the field of p that holds service's port.
func (p *Ports) port(service string) *int {
	switch service {
	case "sqs":
		return &p.SQS
	case "dynamodb":
		return &p.DynamoDB
	case "s3":
		return &p.S3
	case "kafka":
		return &p.Kafka
	case "postgres":
		return &p.Postgres
	}
	return nil
}

// services are the processes of a stack, in the order they start: the
// slowest to come up first (PostgreSQL last all the same, so that the
// processes of a stack keep the order they had before it joined).
var services = []string{"dynamodb", "sqs", "s3", "kafka", "postgres"}

// KafkaBootstrapVar is the variable of a stack's environment (Env) that
// names its Kafka broker, host:port, as a client's bootstrap servers.
const KafkaBootstrapVar = "KAFKA_BOOTSTRAP_SERVERS"

// PostgresDSNVar is the variable of a stack's environment (Env) that names
// its PostgreSQL server, as a connection URL (PostgresDSN). It is the
// variable pkg/pgtest reads (a test holds the two names equal).
const PostgresDSNVar = "FIFOWORKER_POSTGRES_DSN"

// PostgresSuperuser is the role the stack's PostgreSQL server (run by
// internal/dev/pgserver) is made with and its DSN connects as.
const PostgresSuperuser = "postgres"

// PostgresDSN is the connection URL of a local PostgreSQL server on
// 127.0.0.1:port as internal/dev/pgserver runs it: the superuser, trusted
// without a password, the postgres database, no TLS.
func PostgresDSN(port int) string {
	return "postgres://" + PostgresSuperuser + "@" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/postgres?sslmode=disable"
}

// State is what a running stack records about itself.
type State struct {
	Name      string    `json:"name"`
	Region    string    `json:"region"`
	External  string    `json:"external,omitempty"` // AWS_ENDPOINT_URL in use instead of emulators
	SQS       string    `json:"sqs,omitempty"`
	DynamoDB  string    `json:"dynamodb,omitempty"`
	S3        string    `json:"s3,omitempty"`
	Kafka     string    `json:"kafka,omitempty"`    // the broker's bootstrap servers, 127.0.0.1:PORT
	Postgres  string    `json:"postgres,omitempty"` // the PostgreSQL server's DSN (PostgresDSN)
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

// postgresDataDir is the data directory of the stack's PostgreSQL server:
// in the system's temporary directory, not the state directory, because
// as root the server runs as an unprivileged user, which cannot reach a
// cache in root's home (0700). It is named after the stack and a hash of
// its state directory, so two caches' stacks of one name never share it,
// and Down finds it without trusting a path read from the state file.
func (o *Options) postgresDataDir() string {
	sum := sha256.Sum256([]byte(o.stateDir()))
	return filepath.Join(os.TempDir(), "fifoworker-pgdata-"+o.Name+"-"+hex.EncodeToString(sum[:])[:12])
}

// Env returns the environment that points SDKs and tests at the stack, as
// KEY=VALUE pairs in a stable order.
func (s *State) Env() []string {
	env := map[string]string{
		"AWS_REGION":         s.Region,
		"AWS_DEFAULT_REGION": s.Region,
		"FIFOWORKER_STACK":   s.Name,
		"FIFOWORKER_RIE":     s.RIE,
	}
	if s.Kafka != "" { // beside an external endpoint too: the broker is ours
		env[KafkaBootstrapVar] = s.Kafka
	}
	if s.Postgres != "" { // as is the PostgreSQL server
		env[PostgresDSNVar] = s.Postgres
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
// under this name with every service, each answering (one left
// half-started by a killed Up is stopped and started again). It installs
// missing tools first. With AWS_ENDPOINT_URL set it starts no AWS
// emulator, only the Kafka broker: no AWS endpoint serves Kafka's
// protocol, and the broker, like the runtime interface emulator, is the
// stack's own.
func Up(ctx context.Context, o Options) (*State, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if s, err := load(o); err == nil {
		// A `local up` killed half-way leaves its processes running (each
		// in a process group of its own) and a state naming those it
		// started: the stack is up only if it has every service and each
		// answers.
		if running(s) && complete(s) {
			err := waitReady(ctx, o, s, nil)
			if err == nil {
				return s, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			fmt.Fprintf(o.Progress, "localstack: stack %s runs but does not answer: %v\n", o.Name, err)
		}
		fmt.Fprintf(o.Progress, "localstack: stack %s was left half-running; stopping what remains\n", o.Name)
		if err := Down(o); err != nil {
			return nil, err
		}
	}
	broker, err := brokerProgram(o.Broker)
	if err != nil {
		return nil, err
	}
	s := &State{Name: o.Name, Region: o.Region, StartedAt: time.Now().UTC(), External: os.Getenv("AWS_ENDPOINT_URL")}
	starting, tools, err := prepare(ctx, o, s)
	if err != nil {
		return nil, err
	}
	if len(starting) == 0 {
		return s, save(o, s)
	}
	ports, err := choosePorts(o.Ports, starting)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.stateDir(), 0o755); err != nil {
		return nil, fmt.Errorf("localstack: %w", err)
	}
	// A fresh cluster each time, as every emulator starts empty: one a
	// killed stack left is removed first.
	if err := removePostgresDataDir(o); err != nil {
		return nil, err
	}
	exited := map[string]<-chan error{}
	for _, service := range starting {
		program, args := command(service, ports, tools, broker, o.postgresDataDir())
		s.setEndpoint(service, *ports.port(service))
		p, done, err := start(o.stateDir(), service, *ports.port(service), program, args)
		if err != nil {
			_ = save(o, s)
			_ = Down(o)
			return nil, err
		}
		s.Processes = append(s.Processes, p)
		exited[service] = done
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

// prepare installs what the stack s needs and returns the services to
// start: beside an external endpoint, only the broker and PostgreSQL (none
// off Linux, where starting processes is not supported); otherwise all of
// them. PostgreSQL's binaries are installed by its own process
// (internal/dev/pgserver, which imports this package).
func prepare(ctx context.Context, o Options, s *State) (starting []string, tools *Tools, err error) {
	if s.External == "" {
		if err := supported(); err != nil {
			return nil, nil, err
		}
		if tools, err = Install(ctx, o.CacheDir, o.Progress); err != nil {
			return nil, nil, err
		}
		s.RIE = tools.RIE
		return services, tools, nil
	}
	if s.RIE, err = installGo(ctx, o.CacheDir, RIEModule, RIEVersion, o.Progress); err != nil {
		return nil, nil, err
	}
	if err := supported(); err != nil {
		fmt.Fprintf(o.Progress, "localstack: AWS_ENDPOINT_URL=%s is set; starting nothing, not even the Kafka broker and PostgreSQL (%v)\n", s.External, err)
		return nil, nil, nil
	}
	fmt.Fprintf(o.Progress, "localstack: AWS_ENDPOINT_URL=%s is set; starting no AWS emulator, only the Kafka broker and PostgreSQL\n", s.External)
	return besideExternal, nil, nil
}

// besideExternal are the services a stack starts beside an external
// endpoint (on Linux).
var besideExternal = []string{"kafka", "postgres"}

// complete reports whether s records a process for every service its Up
// starts: one whose Up was killed before it started them all lacks some.
// A stack on an external endpoint that started none (not on Linux) is
// complete.
func complete(s *State) bool {
	want := services
	if s.External != "" {
		if len(s.Processes) == 0 {
			return true
		}
		want = besideExternal
	}
	recorded := map[string]bool{}
	for _, p := range s.Processes {
		recorded[p.Service] = true
	}
	for _, service := range want {
		if !recorded[service] {
			return false
		}
	}
	return true
}

// command is the program and arguments that run service on its port;
// pgData is PostgreSQL's data directory.
func command(service string, ports Ports, tools *Tools, broker, pgData string) (string, []string) {
	switch service {
	case "dynamodb":
		return tools.Java, []string{"-Xmx1g", "-Djava.library.path=" + tools.DynamoDBLib, "-jar", tools.DynamoDBJar,
			"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(ports.DynamoDB)}
	case "sqs":
		return tools.Node, []string{tools.FauxqsScript, strconv.Itoa(ports.SQS)}
	case "s3":
		return tools.GofakeS3, []string{"-backend", "memory", "-host", fmt.Sprintf("127.0.0.1:%d", ports.S3), "-quiet"}
	// The broker (internal/dev/kafkabroker) and PostgreSQL
	// (internal/dev/pgserver, which imports this package) are the CLI's
	// hidden verbs: processes of their own, so that they have a PID, a log
	// and a port as the emulators do, and outlive `local up`. The
	// postmaster runs in a process group of its own under `local
	// postgres`, which stops it when `local down` stops the verb.
	case "postgres":
		return broker, []string{"local", "postgres", "--port", strconv.Itoa(ports.Postgres), "--data-dir", pgData}
	}
	return broker, []string{"local", "kafka-broker", "--port", strconv.Itoa(ports.Kafka)}
}

func (s *State) setEndpoint(service string, port int) {
	switch service {
	case "sqs":
		s.SQS = fmt.Sprintf("http://127.0.0.1:%d", port)
	case "dynamodb":
		s.DynamoDB = fmt.Sprintf("http://127.0.0.1:%d", port)
	case "s3":
		s.S3 = fmt.Sprintf("http://127.0.0.1:%d", port)
	case "kafka":
		s.Kafka = fmt.Sprintf("127.0.0.1:%d", port)
	case "postgres":
		s.Postgres = PostgresDSN(port)
	}
}

// brokerProgram is the program that runs the Kafka broker: path, or this
// program when path is empty and this is no test binary (go test names
// its binaries pkg.test).
func brokerProgram(path string) (string, error) {
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("localstack: the Kafka broker runs as this program's `local kafka-broker`, and this program cannot be found (%w): set Options.Broker", err)
		}
		if strings.HasSuffix(filepath.Base(self), ".test") {
			return "", fmt.Errorf("localstack: the Kafka broker runs as `fifoworker local kafka-broker`, and this program (%s) is a test binary, which would run its tests instead: set Options.Broker to a fifoworker binary", self)
		}
		path = self
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("localstack: the Kafka broker's program %s is not an executable file", path)
	}
	return path, nil
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

// choosePorts checks the ports of the services to start that want names,
// and picks free ones for the rest; the other services' ports are left as
// they are.
func choosePorts(want Ports, starting []string) (Ports, error) {
	got := want
	used := map[int]string{}
	for _, service := range starting {
		p := got.port(service)
		if *p != 0 {
			if err := portFree(*p); err != nil {
				return Ports{}, fmt.Errorf("localstack: port %d for %s is in use (%w): choose another, or 0 for a free one", *p, service, err)
			}
		} else {
			port, err := freePort()
			if err != nil {
				return Ports{}, fmt.Errorf("localstack: no free port for %s: %w", service, err)
			}
			*p = port
		}
		if other, taken := used[*p]; taken {
			return Ports{}, fmt.Errorf("localstack: ports must differ: %s and %s both have %d", other, service, *p)
		}
		used[*p] = service
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

// running reports whether the stack s describes is up: every process it
// recorded still runs. A stack on an external endpoint that started none
// (not on Linux) is taken as up.
func running(s *State) bool {
	if len(s.Processes) == 0 {
		return s.External != ""
	}
	for _, p := range s.Processes {
		if !ours(p) {
			return false
		}
	}
	return true
}

// Down stops the stack's recorded processes (SIGTERM to each process group,
// SIGKILL after 10 s) and removes its state directory, logs included, and
// its PostgreSQL server's data directory. Stopping a stack that is not
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
	return errors.Join(append(errs, removePostgresDataDir(o))...)
}

// removePostgresDataDir removes the stack's PostgreSQL data directory,
// first killing a postmaster left running on it.
func removePostgresDataDir(o Options) error {
	stopLeftPostmaster(o.postgresDataDir())
	if err := os.RemoveAll(o.postgresDataDir()); err != nil {
		return fmt.Errorf("localstack: %w", err)
	}
	return nil
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
