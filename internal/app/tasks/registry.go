package tasks

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fifoworker/fifoworker/pkg/task"
)

// DefaultTask is the task of a job whose spec names none: the export, the
// service's first task, so that a spec written before tasks had names
// runs as it always did.
const DefaultTask = NameExport

// registered are the service's tasks: one line each, its name, the spec
// keys it reads, its spec check (a function of the spec alone: intake runs
// it, and builds no task) and its constructor (the worker's). A new task
// adds its line and nothing else here: the export learns its keys from it.
// (A list, not a map: gofmt would align a map's values, and adding a task
// would touch its neighbours' lines.)
var registered = []registration{
	{NameExport, exportKeys, checkExport, buildExport},
	{NameWordCount, wordCountKeys, alone(checkWordCountSpec), as(NewWordCount)},
}

// registration is a task's name, the spec keys it reads, its spec check
// and its constructor. The check must be what the built task's
// ValidateSpec answers (TestCheckerAnswersAsTheRegistry holds them to it).
// Both are given the keys the other registrations read and this one does
// not (othersKeys): the export, the default task, refuses them, as a spec
// with one meant another task and left out its "task".
type registration struct {
	name  string
	keys  []string
	check func(others keyOwners) task.SpecCheck
	build func(cfg Config, others keyOwners) (task.Task, error)
}

// keyOwners maps a spec key to the task that reads it.
type keyOwners map[string]string

// othersKeys returns the spec keys that regs' tasks other than self read
// and self does not, "task" aside, each with the first of those tasks
// registered.
func othersKeys(regs []registration, self registration) keyOwners {
	owners := keyOwners{}
	for _, r := range regs {
		if r.name == self.name {
			continue
		}
		for _, key := range r.keys {
			if _, owned := owners[key]; owned || key == task.SpecTask || slices.Contains(self.keys, key) {
				continue
			}
			owners[key] = r.name
		}
	}
	return owners
}

// ErrInvalidConfig is wrapped by the error of a constructor of this
// package for a configuration that cannot work; the message names the
// field.
var ErrInvalidConfig = errors.New("tasks: invalid configuration")

// Config is what the worker builds the service's tasks from: the
// resources their Run reads. Every field is required (the worker gives
// every task all of them). Intake needs none: it checks specs with
// NewChecker.
type Config struct {
	// Articles is the client of the Articles table.
	Articles QueryAPI
	// ArticlesTable is the Articles table's name.
	ArticlesTable string
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Articles == nil:
		return fmt.Errorf("%w: Articles is nil", ErrInvalidConfig)
	case c.ArticlesTable == "":
		return fmt.Errorf("%w: ArticlesTable is empty", ErrInvalidConfig)
	}
	return nil
}

func (c Config) articles() articles { return articles{api: c.Articles, table: c.ArticlesTable} }

// NewRegistry returns the registry of the service's tasks, each built from
// cfg, with DefaultTask as its default, or an error wrapping
// ErrInvalidConfig: the worker runs each job's task from it.
func NewRegistry(cfg Config) (*task.Registry, error) { return newRegistry(cfg, registered) }

// NewChecker returns the spec checks of the same tasks, under the same
// names and default, built from nothing: intake checks each spec with it,
// and answers as the worker's registry would, without a client or a table.
// Its error (a task registered twice) wraps ErrInvalidConfig.
func NewChecker() (*task.Checker, error) { return newChecker(registered) }

// newRegistry builds each of regs' tasks from cfg, checked first: a bad
// Config is the registry's error, not its first task's.
func newRegistry(cfg Config, regs []registration) (*task.Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	built, err := byName(regs, func(r registration) (task.Task, error) {
		t, err := r.build(cfg, othersKeys(regs, r))
		if err != nil {
			return nil, fmt.Errorf("tasks: %s: %w", r.name, err)
		}
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return task.NewRegistry(task.RegistryConfig{Tasks: built, Default: DefaultTask})
}

func newChecker(regs []registration) (*task.Checker, error) {
	checks, err := byName(regs, func(r registration) (task.SpecCheck, error) { return r.check(othersKeys(regs, r)), nil })
	if err != nil {
		return nil, err
	}
	return task.NewChecker(task.CheckerConfig{Checks: checks, Default: DefaultTask})
}

// byName maps each of regs' names to what of returns for it; a name
// registered twice (the list, unlike a map literal, does not make it a
// compile error) wraps ErrInvalidConfig.
func byName[T any](regs []registration, of func(registration) (T, error)) (map[string]T, error) {
	m := make(map[string]T, len(regs))
	for _, r := range regs {
		if _, twice := m[r.name]; twice {
			return nil, fmt.Errorf("%w: task %s is registered twice", ErrInvalidConfig, r.name)
		}
		v, err := of(r)
		if err != nil {
			return nil, err
		}
		m[r.name] = v
	}
	return m, nil
}

// as adapts the constructor of a task that needs no other task's keys to
// the registry's.
func as[T task.Task](build func(Config) (T, error)) func(Config, keyOwners) (task.Task, error) {
	return func(cfg Config, _ keyOwners) (task.Task, error) {
		t, err := build(cfg)
		if err != nil {
			return nil, err // not a task.Task holding a nil T
		}
		return t, nil
	}
}

// alone adapts the spec check of a task that needs no other task's keys to
// the registry's.
func alone(check task.SpecCheck) func(keyOwners) task.SpecCheck {
	return func(keyOwners) task.SpecCheck { return check }
}
