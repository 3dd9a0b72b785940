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
	// ErrInvalidConfig is wrapped by the error of NewRegistry (and
	// RegistryConfig.Validate) for a configuration that cannot work; the
	// message names the field.
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
	if len(c.Tasks) == 0 {
		return fmt.Errorf("%w: Tasks is empty", ErrInvalidConfig)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tasks)) {
		t := c.Tasks[name]
		switch {
		case !validName(name):
			return fmt.Errorf("%w: Tasks[%.80q]: a name is 1 to %d bytes of a-z, 0-9, '-' and '_'", ErrInvalidConfig, name, MaxNameLength)
		case t == nil:
			return fmt.Errorf("%w: Tasks[%q] is nil", ErrInvalidConfig, name)
		}
		if f, ok := t.(funcTask); ok && f.run == nil {
			return fmt.Errorf("%w: Tasks[%q] is a Func with a nil function", ErrInvalidConfig, name)
		}
	}
	if _, ok := c.Tasks[c.Default]; c.Default != "" && !ok {
		return fmt.Errorf("%w: Default %.80q is not a name in Tasks", ErrInvalidConfig, c.Default)
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

// Registry names the tasks a worker can run; a job picks one by its
// spec's SpecTask. It is safe for concurrent use and does not change after
// NewRegistry.
type Registry struct {
	tasks map[string]Task
	def   string
	names []string // sorted
}

// NewRegistry returns the registry of cfg's tasks, or an error wrapping
// ErrInvalidConfig.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tasks := maps.Clone(cfg.Tasks) // the caller's map may change later; ours does not
	return &Registry{tasks: tasks, def: cfg.Default, names: slices.Sorted(maps.Keys(tasks))}, nil
}

// Lookup returns the task a job of spec runs and its name: the task
// spec[SpecTask] names, or the default when the spec has no SpecTask. A
// name that is not registered (the empty name included: the spec names a
// task, and none is called "") is an error wrapping ErrUnknownTask that
// names it and the known tasks.
func (r *Registry) Lookup(spec map[string]string) (string, Task, error) {
	name, named := spec[SpecTask]
	if !named {
		if r.def == "" {
			return "", nil, fmt.Errorf("%w: the spec names no task (spec key %q; known tasks: %s)", ErrUnknownTask, SpecTask, r.known())
		}
		name = r.def
	}
	t, ok := r.tasks[name]
	if !ok {
		// The name is the client's: cut (by runes, so the message stays
		// valid UTF-8) and quoted, it cannot make the message long or
		// ambiguous.
		return "", nil, fmt.Errorf("%w %.64q (spec key %q; known tasks: %s)", ErrUnknownTask, name, SpecTask, r.known())
	}
	return name, t, nil
}

// ValidateSpec reports why no task can run a job of spec: the spec names
// an unknown task (an error wrapping ErrUnknownTask), or the task it names
// refuses it (the task's ValidateSpec error, prefixed with the task's
// name). Only the named task is asked. Intake's spec check is this method.
func (r *Registry) ValidateSpec(spec map[string]string) error {
	name, t, err := r.Lookup(spec)
	if err != nil {
		return err
	}
	if err := t.ValidateSpec(spec); err != nil {
		return fmt.Errorf("task %s: %w", name, err)
	}
	return nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

func (r *Registry) known() string { return strings.Join(r.names, ", ") }
