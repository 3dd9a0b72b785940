package pgserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
)

var (
	// ErrInvalidConfig is wrapped by every error of Config.Validate.
	ErrInvalidConfig = errors.New("pgserver: invalid config")
	// ErrUnsupported is returned on a system the pinned packages do not cover.
	ErrUnsupported = errors.New("unsupported system")
	// ErrBinariesMissing is returned when the installed tree lacks a program.
	ErrBinariesMissing = errors.New("PostgreSQL binaries missing")
	// ErrPortTaken is returned when the configured port is already in use.
	ErrPortTaken = errors.New("port taken")
	// ErrExited is returned when the server exits before it is ready.
	ErrExited = errors.New("server exited during start")
	// ErrAlreadyRunning is returned when a live postmaster holds the data dir.
	ErrAlreadyRunning = errors.New("a server is already running on the data directory")
)

// Superuser is the role initdb creates and DSN connects as: the local
// stack's, whose environment names this package's servers.
const Superuser = localstack.PostgresSuperuser

// initdbArgs make a cluster (after -D DIR). Trust authentication: the
// server listens on 127.0.0.1 only, for tests.
var initdbArgs = []string{"-U", Superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"}

// logTail is how many lines of the server's log an error quotes.
const logTail = 20

// Config configures Start. The zero value is valid.
type Config struct {
	// CacheDir holds the installed binaries; default localstack.DefaultCacheDir()
	// ($FIFOWORKER_CACHE or ~/.cache/fifoworker).
	CacheDir string
	// DataDir is the cluster's directory: Start makes the cluster when it
	// holds none yet, and reuses it otherwise. Default: a new directory in
	// the system's temporary directory, removed by Stop.
	DataDir string
	// NoTemplate makes each new cluster with initdb (about 1 s). Default
	// false: a new cluster is a copy of a template cluster, made with initdb
	// once per pinned version and initdb arguments into the cache (a copy
	// and a start take about half the time of initdb and a start).
	NoTemplate bool
	// Port is the TCP port on 127.0.0.1; default 0, a free port.
	Port int
	// User runs initdb and postgres when the process is root (PostgreSQL
	// refuses root); default "nobody". Ignored when not root.
	User string
	// StartTimeout bounds initdb and the wait for the server to be ready;
	// default 60s.
	StartTimeout time.Duration
	// StopTimeout bounds the fast shutdown Stop asks for before it kills the
	// server; default 10s.
	StopTimeout time.Duration
	// Progress receives one line when Start installs; default io.Discard.
	Progress io.Writer
	// Logger receives the server's start and stop; nil discards.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("%w: Port %d is not 0 (a free port) nor 1..65535", ErrInvalidConfig, c.Port)
	case c.StartTimeout < 0:
		return fmt.Errorf("%w: StartTimeout %s is negative", ErrInvalidConfig, c.StartTimeout)
	case c.StopTimeout < 0:
		return fmt.Errorf("%w: StopTimeout %s is negative", ErrInvalidConfig, c.StopTimeout)
	case c.DataDir != "" && !filepath.IsAbs(c.DataDir):
		return fmt.Errorf("%w: DataDir %q is not absolute", ErrInvalidConfig, c.DataDir)
	}
	return nil
}

func (c *Config) defaults() {
	if c.CacheDir == "" {
		c.CacheDir = localstack.DefaultCacheDir()
	}
	if c.User == "" {
		c.User = "nobody"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 10 * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is a running postmaster.
type Server struct {
	cfg       Config
	port      int
	dataDir   string
	ownedData bool // Stop removes dataDir
	logPath   string
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error
}

// Start installs the binaries if needed, makes the cluster if needed and
// starts the server, returning once it accepts connections.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	root, err := Install(ctx, cfg.CacheDir, cfg.Progress)
	if err != nil {
		return nil, err
	}
	cred, err := credential(cfg.User)
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if root, err = reachableCopy(root); err != nil {
			return nil, err
		}
	}
	s := &Server{cfg: cfg, dataDir: cfg.DataDir}
	if s.dataDir == "" {
		if s.dataDir, err = os.MkdirTemp("", "fifoworker-pgdata-"); err != nil {
			return nil, fmt.Errorf("pgserver: data dir: %w", err)
		}
		s.ownedData = true
	}
	if err := s.start(ctx, root, cred); err != nil {
		if s.ownedData {
			_ = os.RemoveAll(s.dataDir)
		}
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, root string, cred *syscall.Credential) error {
	port, err := pickPort(s.cfg.Port)
	if err != nil {
		return err
	}
	s.port = port
	newCluster := func(dir string) error { return initdb(ctx, root, dir, cred) }
	if !s.cfg.NoTemplate {
		newCluster = func(dir string) error {
			template, err := makeTemplate(ctx, root, templateDir(s.cfg.CacheDir), cred)
			if err != nil {
				return err
			}
			return copyCluster(template, dir)
		}
	}
	if err := prepareDataDir(s.dataDir, cred, newCluster); err != nil {
		return err
	}
	if err := clearStalePID(s.dataDir); err != nil {
		return err
	}
	return s.run(ctx, root, cred)
}

// credential is nil when the process is not root, and otherwise user's.
func credential(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgserver: running as root, PostgreSQL needs an unprivileged user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgserver: user %q: %w", name, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("pgserver: user %q is root: PostgreSQL refuses to run as root", name)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// prepareDataDir makes the cluster in dir with newCluster unless dir holds
// one, and as root hands dir to the server's user, which must be able to
// reach it.
func prepareDataDir(dir string, cred *syscall.Credential, newCluster func(dir string) error) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("pgserver: data dir: %w", err)
	}
	if cred != nil && !searchableByOthers(filepath.Dir(dir)) {
		return fmt.Errorf("pgserver: data dir %s: the server's unprivileged user cannot reach it (a directory above it is not searchable by others)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		if err := newCluster(dir); err != nil {
			return err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("pgserver: data dir: %w", err)
	}
	return chown(dir, cred)
}

// chown hands the tree at dir to cred's user; nil cred leaves it alone.
func chown(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("pgserver: data dir: %w", err)
	}
	return nil
}

// initdb makes the cluster in dir with initdb, run as cred's user.
func initdb(ctx context.Context, root, dir string, cred *syscall.Credential) error {
	return makeCluster(dir, "initdb", func(tmp string) error {
		if err := chown(tmp, cred); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "initdb"), append([]string{"-D", tmp}, initdbArgs...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = tmp
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("pgserver: initdb %s: %w\n%s", dir, err, out.String())
		}
		return nil
	})
}

// copyCluster makes the cluster in dir as a copy of the template cluster;
// prepareDataDir then hands it to the server's user.
func copyCluster(template, dir string) error {
	return makeCluster(dir, "copy", func(tmp string) error {
		if err := os.CopyFS(tmp, os.DirFS(template)); err != nil {
			return fmt.Errorf("pgserver: copy the template cluster %s: %w", template, err)
		}
		// The template's own completion mark (localstack.InstallDir's) is
		// no part of the cluster.
		if err := os.Remove(filepath.Join(tmp, ".complete")); err != nil {
			return fmt.Errorf("pgserver: copy the template cluster %s: %w", template, err)
		}
		return nil
	})
}

// makeCluster makes a cluster with fill in a scratch directory beside dir
// and renames it to dir once fill has finished, so an interrupted initdb or
// copy never leaves a half-made cluster that the next Start would take for
// one. dir must be missing or empty. how names fill in the scratch
// directory's name.
func makeCluster(dir, how string, fill func(tmp string) error) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgserver: data dir %s holds no cluster (no PG_VERSION) and is not empty: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+"."+how+"-")
	if err != nil {
		return fmt.Errorf("pgserver: data dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("pgserver: data dir: %w", err)
	}
	return nil
}

// templateDir is where the template cluster of the pinned packages and
// initdb's arguments lives in cacheDir.
func templateDir(cacheDir string) string {
	return filepath.Join(cacheDir, "pgserver", "template-"+templateKey(npmPackageLock, initdbArgs))
}

// templateKey names a template after what makes it: the pinned packages'
// lock file (the binaries, so the catalog version) and initdb's arguments.
func templateKey(lock []byte, args []string) string {
	h := sha256.New()
	h.Write(lock)
	for _, a := range args {
		h.Write([]byte{0})
		h.Write([]byte(a))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// makeTemplate makes the template cluster at dir with initdb, unless an
// earlier run completed it, and returns dir. localstack.InstallDir marks it
// complete and renames it into place only once it is whole, so a template
// whose making was interrupted is never used. initdb runs as cred's user,
// which may not reach the cache (root's home is 0700): it writes into a
// directory of the system's temporary directory, copied into the template.
func makeTemplate(ctx context.Context, root, dir string, cred *syscall.Credential) (string, error) {
	dir, err := localstack.InstallDir(dir, func(tmp string) error {
		scratch, err := os.MkdirTemp("", "fifoworker-pgtemplate-")
		if err != nil {
			return fmt.Errorf("pgserver: template: %w", err)
		}
		defer func() { _ = os.RemoveAll(scratch) }()
		if err := os.Chmod(scratch, 0o755); err != nil { // for the server's user
			return fmt.Errorf("pgserver: template: %w", err)
		}
		cluster := filepath.Join(scratch, "data")
		if err := initdb(ctx, root, cluster, cred); err != nil {
			return err
		}
		if err := os.CopyFS(tmp, os.DirFS(cluster)); err != nil {
			return fmt.Errorf("pgserver: template: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		return "", fmt.Errorf("pgserver: the template cluster %s holds no cluster; remove it: %w", dir, err)
	}
	return dir, nil
}

// clearStalePID removes the postmaster.pid a killed server left behind,
// refusing when its process is still a postgres running on dir: PostgreSQL
// itself refuses a lock file whose PID another process of its user has
// taken since, and the PIDs wrap soon (32768 by default).
func clearStalePID(dir string) error {
	path := filepath.Join(dir, "postmaster.pid")
	body, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	first, _, _ := strings.Cut(string(body), "\n")
	if pid, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && pid > 0 && postgresOn(pid, dir) {
		return fmt.Errorf("pgserver: %w: %s (PID %d)", ErrAlreadyRunning, dir, pid)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("pgserver: stale postmaster.pid: %w", err)
	}
	return nil
}

// postgresOn reports whether pid is a postgres process running on the
// data directory dir: the postmaster and every child of it work in the
// data directory. Another postgres (another server's, after the PID
// wrapped) works elsewhere. A working directory that cannot be read is
// taken as dir: two servers on one cluster would corrupt it.
func postgresOn(pid int, dir string) bool {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true
	}
	resolved, err := filepath.EvalSymlinks(dir)
	return cwd == dir || (err == nil && cwd == resolved)
}

// pickPort returns port if it is free on 127.0.0.1, or a free one when port
// is 0. The kernel may hand a free port to another process before postgres
// binds it; Start then fails with ErrPortTaken.
func pickPort(port int) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("pgserver: %w: 127.0.0.1:%d: %w", ErrPortTaken, port, err)
	}
	got := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("pgserver: %w", err)
	}
	return got, nil
}

func (s *Server) run(ctx context.Context, root string, cred *syscall.Credential) error {
	s.logPath = filepath.Join(s.dataDir, "pgserver.log")
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	// Not CommandContext: the server outlives Start's context; Stop ends it.
	s.cmd = exec.Command(filepath.Join(root, "bin", "postgres"), "-D", s.dataDir, //nolint:gosec // the pinned binary
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=off", // tests only: see the package comment
		"-c", "full_page_writes=off",
		"-c", "synchronous_commit=off")
	s.cmd.Dir = s.dataDir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		_ = s.kill()
		return err
	}
	s.cfg.Logger.Info("pgserver started", "addr", s.Addr(), "pid", s.PID(), "data_dir", s.dataDir)
	return nil
}

// waitReady polls postmaster.pid until its status line says ready, as
// pg_ctl does.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if readyPID(s.dataDir) == s.cmd.Process.Pid {
			return nil
		}
		select {
		case <-s.exited:
			err := fmt.Errorf("pgserver: %w (%w); last lines of %s:\n%s", ErrExited, s.waitErr, s.logPath, tail(s.logPath, logTail))
			if strings.Contains(tail(s.logPath, logTail), "could not bind") {
				err = fmt.Errorf("%w: %w", ErrPortTaken, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("pgserver: not ready: %w; last lines of %s:\n%s", ctx.Err(), s.logPath, tail(s.logPath, logTail))
		case <-tick.C:
		}
	}
}

// readyPID is the PID of postmaster.pid when its status line (the 8th) is
// "ready", or 0.
func readyPID(dir string) int {
	body, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	lines := strings.Split(string(body), "\n")
	if len(lines) < 8 || strings.TrimSpace(lines[7]) != "ready" {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	return pid
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// PID is the postmaster's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// DataDir is the cluster's directory.
func (s *Server) DataDir() string { return s.dataDir }

// DSN is a connection string (a URL; internal/base/pgwire.ParseDSN reads it), as the superuser, to the postgres
// database: the one the local stack's environment names its server by.
func (s *Server) DSN() string { return localstack.PostgresDSN(s.port) }

// Exited is closed when the postmaster has exited, stopped or not.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop asks the postmaster for a fast shutdown (SIGINT: running
// transactions are rolled back, clients disconnected), waits up to
// Config.StopTimeout or ctx's end, then kills its process group. It removes
// the data directory Start made itself.
func (s *Server) Stop(ctx context.Context) error {
	err := s.stop(ctx)
	if s.ownedData {
		err = errors.Join(err, os.RemoveAll(s.dataDir))
	}
	return err
}

func (s *Server) stop(ctx context.Context) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgserver: stop PID %d: %w", s.PID(), err)
	}
	timer := time.NewTimer(s.cfg.StopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		s.cfg.Logger.Info("pgserver stopped", "pid", s.PID())
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	s.cfg.Logger.Warn("pgserver did not stop in time; killing it", "pid", s.PID())
	return s.kill()
}

// kill sends SIGKILL to the server's process group (the postmaster and its
// children) and waits for the postmaster.
func (s *Server) kill() error {
	if err := syscall.Kill(-s.PID(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pgserver: kill PID %d: %w", s.PID(), err)
	}
	<-s.exited
	return nil
}
