package cpuquota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInvalidConfig is wrapped by New's error for a Config that cannot
// work; the message names the field.
var ErrInvalidConfig = errors.New("cpuquota: invalid configuration")

// ErrNoCPUController is wrapped by New's error when Root has neither
// cgroup v2's cpu controller nor v1's cpu hierarchy.
var ErrNoCPUController = errors.New("cpuquota: no cgroup cpu controller")

// ErrNeedsRoot is wrapped by New's error when the group's directory
// cannot be created for want of permission: cgroups are root's.
var ErrNeedsRoot = errors.New("cpuquota: creating a cgroup needs root")

// OneVCPUMemoryMB is the memory size at which Lambda gives a function one
// full vCPU; below it the share is proportional ("Memory and computing
// power" in the Lambda developer guide: "at 1,769 MB, a function has the
// equivalent of one vCPU").
const OneVCPUMemoryMB = 1769

// Period is the scheduling period of every quota this package sets: the
// kernel's default for both cgroup versions.
const Period = 100 * time.Millisecond

// ForMemory is the CPU time per Period that Lambda gives a function of mb
// MB: mb/1769 of one CPU, rounded to the nearest microsecond (128 MB: 7,236 µs;
// 256: 14,471; 512: 28,943). From 1,769 MB on, more than one CPU.
func ForMemory(mb int) time.Duration {
	us := (int64(mb)*Period.Microseconds() + OneVCPUMemoryMB/2) / OneVCPUMemoryMB
	return time.Duration(us) * time.Microsecond
}

// Config names a group.
type Config struct {
	// Name is the group's directory under the cpu controller: one path
	// element of letters, digits, '-', '_' and '.'. Required.
	Name string
	// Root is where the cgroup file systems are mounted. Default
	// /sys/fs/cgroup.
	Root string
}

// DefaultRoot is Config.Root's default.
const DefaultRoot = "/sys/fs/cgroup"

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	if c.Name == "" || c.Name == "." || c.Name == ".." || strings.ContainsFunc(c.Name, func(r rune) bool { return !nameRune(r) }) {
		return fmt.Errorf("%w: Name %q is not one path element of letters, digits, '-', '_', '.'", ErrInvalidConfig, c.Name)
	}
	return nil
}

// nameRune reports whether r may be in a Name.
func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Group is one cgroup with the cpu controller.
type Group struct {
	dir string
	v2  bool
}

// New creates the group's directory (an existing one is reused) and
// leaves it without a quota.
func New(cfg Config) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	root := cfg.Root
	if root == "" {
		root = DefaultRoot
	}
	g := &Group{}
	switch controllers, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); {
	case err == nil:
		if !slices.Contains(strings.Fields(string(controllers)), "cpu") {
			return nil, fmt.Errorf("%w: cgroup v2 at %s lists no cpu controller in cgroup.controllers (%q)", ErrNoCPUController, root, strings.TrimSpace(string(controllers)))
		}
		g.v2, g.dir = true, filepath.Join(root, cfg.Name)
		// A child has the controller only once its parent delegates it.
		if err := os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
			return nil, permission(fmt.Errorf("cpuquota: delegate cpu at %s: %w", root, err))
		}
	case errors.Is(err, fs.ErrNotExist):
		v1 := filepath.Join(root, "cpu")
		if _, err := os.Stat(filepath.Join(v1, "cpu.cfs_quota_us")); err != nil {
			return nil, fmt.Errorf("%w: neither cgroup v2 (%s) nor v1's cpu hierarchy (%s): %w", ErrNoCPUController, filepath.Join(root, "cgroup.controllers"), filepath.Join(v1, "cpu.cfs_quota_us"), err)
		}
		g.dir = filepath.Join(v1, cfg.Name)
	default:
		return nil, fmt.Errorf("cpuquota: read %s: %w", root, err)
	}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, permission(fmt.Errorf("cpuquota: create %s: %w", g.dir, err))
	}
	if err := g.SetQuota(0); err != nil {
		return nil, err
	}
	return g, nil
}

// permission wraps ErrNeedsRoot into err when it is a permission error.
func permission(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w (running as uid %d): %w", ErrNeedsRoot, os.Geteuid(), err)
	}
	return err
}

// Dir is the group's directory.
func (g *Group) Dir() string { return g.dir }

// ProcsFile is the file a process id is written to to move that process
// into the group (cgroup.procs in both versions).
func (g *Group) ProcsFile() string { return filepath.Join(g.dir, "cgroup.procs") }

// SetQuota sets the CPU time the group's processes may use per Period;
// 0 removes the quota. A quota under a millisecond is refused: the
// kernel's least is 1 ms.
func (g *Group) SetQuota(quota time.Duration) error {
	if quota != 0 && quota < time.Millisecond {
		return fmt.Errorf("%w: quota %v is under the kernel's 1ms", ErrInvalidConfig, quota)
	}
	period := strconv.FormatInt(Period.Microseconds(), 10)
	if g.v2 {
		v := "max " + period
		if quota > 0 {
			v = strconv.FormatInt(quota.Microseconds(), 10) + " " + period
		}
		return g.write("cpu.max", v)
	}
	// v1: the period first, so that the quota is never checked against a
	// period it was not meant for.
	if err := g.write("cpu.cfs_period_us", period); err != nil {
		return err
	}
	v := "-1"
	if quota > 0 {
		v = strconv.FormatInt(quota.Microseconds(), 10)
	}
	return g.write("cpu.cfs_quota_us", v)
}

// The bounds of SetWeight's weight: cgroup v2's cpu.weight's.
const (
	MinWeight = 1
	MaxWeight = 10000
)

// SetWeight sets the group's share of contended CPUs against its
// siblings' (the processes outside any group among them): cgroup v2's
// cpu.weight, whose default is 100, or v1's cpu.shares, weight×1024/100
// (its default 1,024). A quota is a ceiling only: on a machine others load,
// a high weight makes it a floor too, as Lambda's CPU share is the
// function's own.
func (g *Group) SetWeight(weight int) error {
	if weight < MinWeight || weight > MaxWeight {
		return fmt.Errorf("%w: weight %d is not from %d to %d", ErrInvalidConfig, weight, MinWeight, MaxWeight)
	}
	if g.v2 {
		return g.write("cpu.weight", strconv.Itoa(weight))
	}
	return g.write("cpu.shares", strconv.Itoa(weight*1024/100))
}

func (g *Group) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0); err != nil {
		return permission(fmt.Errorf("cpuquota: write %q to %s: %w", value, filepath.Join(g.dir, file), err))
	}
	return nil
}

// Add moves a running process, all its threads, into the group.
func (g *Group) Add(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", ErrInvalidConfig, pid)
	}
	return g.write("cgroup.procs", strconv.Itoa(pid))
}

// Remove moves the processes still in the group back to its parent, and
// removes the group's directory.
func (g *Group) Remove() error {
	raw, err := os.ReadFile(g.ProcsFile())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cpuquota: read %s: %w", g.ProcsFile(), err)
	}
	parent := filepath.Join(filepath.Dir(g.dir), "cgroup.procs")
	for _, pid := range strings.Fields(string(raw)) {
		// One write per process, as the kernel takes them; one that has
		// exited meanwhile is gone from the group anyway.
		if err := os.WriteFile(parent, []byte(pid), 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("cpuquota: move %s from %s to its parent: %w", pid, g.dir, err)
		}
	}
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cpuquota: remove %s: %w", g.dir, err)
	}
	return nil
}
