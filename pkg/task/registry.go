package task

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxNameLength is the longest task name, in bytes.
const MaxNameLength = 64

var (
	// ErrInvalidConfig is wrapped by the error of NewRegistry and
	// NewChecker (and of their configurations' Validate) for a
	// configuration that cannot work; the message names the field.
	ErrInvalidConfig = errors.New("task: invalid configuration")
	// ErrUnknownTask is wrapped by the error of Lookup and ValidateSpec for
	// a spec that names no registered task, or names none when the
	// registry has no default.
	ErrUnknownTask = errors.New("task: unknown task")
)

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	// Tasks maps each task's name to the task. Required: at least one
	// task. A name is 1 to MaxNameLength bytes of lower-case letters,
	// digits, '-' and '_'.
	Tasks map[string]Task
	// Default is the name of the task of a job whose spec has no SpecTask.
	// It must be a name in Tasks. Default "": none, and such a spec is
	// refused (ErrUnknownTask).
	Default string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig. Names are checked in sorted order, so the same
// configuration always gets the same error.
func (c RegistryConfig) Validate() error {
	return validateCatalog("Tasks", c.Tasks, c.Default, func(t Task) string {
		if t == nil {
			return "is nil"
		}
		if f, ok := t.(funcTask); ok && f.run == nil {
			return "is a Func with a nil function"
		}
		return ""
	})
}

// Registry names the tasks a worker can run; a job picks one by its
// spec's SpecTask. It is safe for concurrent use and does not change after
// NewRegistry.
type Registry struct {
	tasks catalog[Task]
}

// NewRegistry returns the registry of cfg's tasks, or an error wrapping
// ErrInvalidConfig.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Registry{tasks: newCatalog(cfg.Tasks, cfg.Default)}, nil
}

// Lookup returns the task a job of spec runs and its name: the task
// spec[SpecTask] names, or the default when the spec has no SpecTask. A
// name that is not registered (the empty name included: the spec names a
// task, and none is called "") is an error wrapping ErrUnknownTask that
// names it and the known tasks.
func (r *Registry) Lookup(spec map[string]string) (string, Task, error) {
	return r.tasks.lookup(spec)
}

// ValidateSpec reports why no task can run a job of spec: the spec names
// an unknown task (an error wrapping ErrUnknownTask), or the task it names
// refuses it (the task's ValidateSpec error, prefixed with the task's
// name). Only the named task is asked. A Checker of the same tasks' checks
// answers the same, without the tasks.
func (r *Registry) ValidateSpec(spec map[string]string) error {
	name, t, err := r.tasks.lookup(spec)
	if err != nil {
		return err
	}
	return refused(name, t.ValidateSpec(spec))
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.tasks.names) }

// refused is a task's refusal of a spec, named after the task; nil stays
// nil.
func refused(name string, err error) error {
	if err != nil {
		return fmt.Errorf("task %s: %w", name, err)
	}
	return nil
}

// catalog is the name → T map of a Registry or a Checker, and its default:
// the one place a spec's SpecTask is resolved.
type catalog[T any] struct {
	byName map[string]T
	def    string
	names  []string // sorted
}

// newCatalog copies m: the caller's map may change later; ours does not.
func newCatalog[T any](m map[string]T, def string) catalog[T] {
	return catalog[T]{byName: maps.Clone(m), def: def, names: slices.Sorted(maps.Keys(m))}
}

func (c catalog[T]) lookup(spec map[string]string) (string, T, error) {
	var none T
	name, named := spec[SpecTask]
	if !named {
		if c.def == "" {
			return "", none, fmt.Errorf("%w: the spec names no task (spec key %q; known tasks: %s)", ErrUnknownTask, SpecTask, c.known())
		}
		name = c.def
	}
	t, ok := c.byName[name]
	if !ok {
		// The name is the client's: cut (by runes, so the message stays
		// valid UTF-8) and quoted, it cannot make the message long or
		// ambiguous.
		return "", none, fmt.Errorf("%w %.64q (spec key %q; known tasks: %s)", ErrUnknownTask, name, SpecTask, c.known())
	}
	return name, t, nil
}

func (c catalog[T]) known() string { return strings.Join(c.names, ", ") }

// validateCatalog checks a configuration's map of field (its names, and
// each value by problem, which says what is wrong with one or "") and its
// default, names in sorted order.
func validateCatalog[T any](field string, m map[string]T, def string, problem func(T) string) error {
	if len(m) == 0 {
		return fmt.Errorf("%w: %s is empty", ErrInvalidConfig, field)
	}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !validName(name) {
			return fmt.Errorf("%w: %s[%.80q]: a name is 1 to %d bytes of a-z, 0-9, '-' and '_'", ErrInvalidConfig, field, name, MaxNameLength)
		}
		if p := problem(m[name]); p != "" {
			return fmt.Errorf("%w: %s[%q] %s", ErrInvalidConfig, field, name, p)
		}
	}
	if _, ok := m[def]; def != "" && !ok {
		return fmt.Errorf("%w: Default %.80q is not a name in %s", ErrInvalidConfig, def, field)
	}
	return nil
}

func validName(name string) bool {
	if name == "" || len(name) > MaxNameLength {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
