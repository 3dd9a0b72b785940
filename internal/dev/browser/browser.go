package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// ErrInvalidConfig is what New answers for a Config it refuses.
var ErrInvalidConfig = errors.New("browser: invalid config")

// ErrNoChromium is what New answers when it finds no Chromium to run.
var ErrNoChromium = errors.New("browser: no chromium")

// EnvChromium names a Chromium other than the one on PATH.
const EnvChromium = "FIFOWORKER_CHROMIUM"

// DefaultTimeout bounds each Do and Run: long enough for a page of the
// console on a loaded 2-core machine, short enough that a page that never
// comes fails the test with the step that waited.
const DefaultTimeout = 30 * time.Second

// Config is what New starts a browser with.
type Config struct {
	// Binary is the Chromium to run. Default: the file EnvChromium names
	// when it is set, else chromium on PATH (Debian's package).
	Binary string
	// Artefacts is the directory Screenshot writes to, created when
	// missing. Required.
	Artefacts string
	// Timeout bounds each Do and Run. Default: DefaultTimeout.
	Timeout time.Duration
	// Getenv reads the environment. Default: os.Getenv.
	Getenv func(string) string
	// Logger receives the browser's start and stop. Default: discard.
	Logger *slog.Logger
}

// Validate names the first field New cannot use.
func (c Config) Validate() error {
	if c.Artefacts == "" {
		return fmt.Errorf("%w: Artefacts is required (the directory the screenshots go to)", ErrInvalidConfig)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %s is negative", ErrInvalidConfig, c.Timeout)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	cfg         Config
	tab         context.Context
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
	dataDir     string
	pid         int
	stopWait    time.Duration // StopWait
}

// Binary is the Chromium cfg runs: Config.Binary, else the file
// EnvChromium names, else chromium on PATH; ErrNoChromium says how to get
// one when there is none.
func Binary(cfg Config) (string, error) {
	cfg = cfg.withDefaults()
	if cfg.Binary != "" {
		return cfg.Binary, nil
	}
	if p := cfg.Getenv(EnvChromium); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("%w: chromium is not on PATH (make chromium installs Debian's package; or name one in %s): %w", ErrNoChromium, EnvChromium, err)
	}
	return p, nil
}

// LoopbackOnlyProxy is the proxy every request but one to 127.0.0.1 goes
// to: a port of 127.0.0.1 nothing listens on, so Chromium connects nowhere
// else and such a request fails at once with net::ERR_PROXY_CONNECTION_FAILED.
const LoopbackOnlyProxy = "127.0.0.1:1"

// flags are Chromium's command line here: headless, as root (no sandbox:
// Chromium refuses to start as root with one), and quiet: without the
// background networking, component update, sync and QUIC, Chromium tries
// hosts outside the machine, which this machine refuses.
//
// A page reaches 127.0.0.1 and nothing else, held twice. The host resolver
// answers no name but 127.0.0.1 (Chromium 148 maps IP literals by these
// rules too: http://192.0.2.1/ fails with net::ERR_NAME_NOT_RESOLVED). And
// every request goes to LoopbackOnlyProxy but those to 127.0.0.1: Chromium
// bypasses the proxy for localhost, 127.0.0.0/8 and [::1] unless the bypass
// list has <-loopback> (Chromium's proxy bypass rules), so the list takes
// the implicit rule away and names 127.0.0.1 alone, any port.
func flags(binary, dataDir string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(binary),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.ProxyServer(LoopbackOnlyProxy),
		chromedp.Flag("proxy-bypass-list", "<-loopback>;127.0.0.1"),
		chromedp.UserDataDir(dataDir),
		chromedp.WindowSize(1280, 900),
	)
}

// preferences is the profile Chromium starts with. WebRTC sends UDP
// around the proxy, to any address a page names as its STUN server, and
// Chromium 148 takes its policy from this preference (its command line's
// --force-webrtc-ip-handling-policy changes nothing: a candidate is still
// gathered): disable_non_proxied_udp leaves it nothing but the proxy.
const preferences = `{"webrtc": {"ip_handling_policy": "disable_non_proxied_udp"}}`

// writePreferences writes preferences as the default profile's in dataDir.
func writePreferences(dataDir string) error {
	profile := filepath.Join(dataDir, "Default")
	if err := os.Mkdir(profile, 0o700); err != nil {
		return fmt.Errorf("browser: profile: %w", err)
	}
	if err := os.WriteFile(filepath.Join(profile, "Preferences"), []byte(preferences), 0o600); err != nil {
		return fmt.Errorf("browser: profile: %w", err)
	}
	return nil
}

// New starts Chromium and opens its tab; Close stops it.
func New(cfg Config) (*Browser, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	binary, err := Binary(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Artefacts, 0o755); err != nil {
		return nil, fmt.Errorf("browser: artefacts directory: %w", err)
	}
	dataDir, err := os.MkdirTemp("", "fifoworker-chromium-")
	if err != nil {
		return nil, fmt.Errorf("browser: user data directory: %w", err)
	}
	if err := writePreferences(dataDir); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dataDir))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags(binary, dataDir)...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{cfg: cfg, tab: tab, cancelTab: cancelTab, cancelAlloc: cancelAlloc, dataDir: dataDir, stopWait: StopWait}
	// The first action starts the browser, and binds it to the context it
	// runs on: the tab's, which has no deadline.
	if err := chromedp.Do(tab); err != nil {
		return nil, errors.Join(fmt.Errorf("browser: start %s: %w", binary, err), b.Close())
	}
	if c := chromedp.FromContext(tab); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	cfg.Logger.Info("chromium started", "binary", binary, "pid", b.pid, "user_data_dir", dataDir)
	return b, nil
}

// PID is the browser's main process.
func (b *Browser) PID() int { return b.pid }

// Do runs steps in the tab, within Config.Timeout.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.tab, b.cfg.Timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// DoResponse runs steps that navigate, such as the click of a link or a
// form's submit, and returns the response of the page they lead to, once
// it has loaded, within Config.Timeout.
func (b *Browser) DoResponse(steps ...chromedp.Action[chromedp.Void]) (*network.Response, error) {
	ctx, cancel := context.WithTimeout(b.tab, b.cfg.Timeout)
	defer cancel()
	return chromedp.RunResponse(ctx, steps...)
}

// Run runs a in b's tab, within its Config.Timeout, and returns its value.
func Run[T any](b *Browser, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.tab, b.cfg.Timeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// Screenshot writes the whole page as name.png in the artefacts directory
// and returns the file's path.
func (b *Browser) Screenshot(name string) (string, error) {
	png, err := Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		return "", fmt.Errorf("browser: screenshot %s: %w", name, err)
	}
	path := filepath.Join(b.cfg.Artefacts, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "", fmt.Errorf("browser: screenshot %s: %w", name, err)
	}
	return path, nil
}

// StopWait bounds each of Close's two waits: for the browser's children to
// end once its main process has (they go when their parent's pipes close,
// not at once), and for those that did not to die of SIGKILL (a zombie
// counts as gone: it holds no files and writes nothing).
const StopWait = 5 * time.Second

// Close stops the browser, waits for its processes to end and removes its
// user data directory. A process of it that outlives the stop is killed by
// its PID and named in the error, so a test that leaves one behind fails;
// the directory is removed only once each is gone, so that none writes in
// it afterwards, and an error says when it cannot be.
func (b *Browser) Close() error {
	b.cancelTab()
	b.cancelAlloc() // kills the main process and waits for it
	var errs []error
	if b.pid != 0 {
		if err := syscall.Kill(b.pid, 0); !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("browser: chromium's main process %d still runs after the stop", b.pid))
		}
	}
	if left := awaitGone(b.dataDir, Processes(b.dataDir), b.stopWait); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		errs = append(errs, fmt.Errorf("browser: chromium's processes %v still ran after the stop (killed)", left))
		if alive := awaitGone(b.dataDir, left, b.stopWait); len(alive) > 0 {
			errs = append(errs, fmt.Errorf("browser: chromium's processes %v still run %s after SIGKILL", alive, b.stopWait))
		}
	}
	if err := os.RemoveAll(b.dataDir); err != nil {
		errs = append(errs, fmt.Errorf("browser: remove the user data directory: %w", err))
	}
	b.cfg.Logger.Info("chromium stopped", "pid", b.pid, "left", len(errs))
	return errors.Join(errs...)
}

// awaitGone waits, at most wait, for each of pids to no longer name
// dataDir (exited, a zombie, or the PID reused) and returns those that
// still do.
func awaitGone(dataDir string, pids []int, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		var alive []int
		for _, pid := range pids {
			if names(strconv.Itoa(pid), dataDir) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || !time.Now().Before(deadline) {
			return alive
		}
		pids = alive
		time.Sleep(10 * time.Millisecond)
	}
}

// Processes lists the processes whose command line names dataDir: a
// Chromium's main process and its children (the zygotes, the renderers, the
// GPU process, the services), which Chromium starts with the same
// --user-data-dir and whose command lines it rewrites as one string, the
// arguments joined by spaces; and a crash handler, were one started, names
// its database under dataDir with --database= (Chromium starts none here:
// its children show --crashpad-handler-pid=0). A process that has exited has
// an empty command line.
func Processes(dataDir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if names(e.Name(), dataDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// names says whether the command line of the process pid (its directory
// in /proc) has dir as a whole path, or a path under it:
// /tmp/fifoworker-chromium-12 is not named by /tmp/fifoworker-chromium-123.
func names(pid, dir string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil {
		return false
	}
	return hasPath(cmdline, dir)
}

// hasPath says whether cmdline has dir followed by the end, an argument's
// end or a path's separator.
func hasPath(cmdline []byte, dir string) bool {
	for rest := cmdline; ; {
		i := bytes.Index(rest, []byte(dir))
		if i < 0 {
			return false
		}
		rest = rest[i+len(dir):]
		if len(rest) == 0 || bytes.IndexByte([]byte("\x00 /\"'"), rest[0]) >= 0 {
			return true
		}
	}
}
