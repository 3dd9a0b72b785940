package tasks

import (
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/pkg/task"
)

// DefaultTask is the task of a job whose spec names none: the export, the
// service's first task, so that a spec written before tasks had names
// runs as it always did.
const DefaultTask = NameExport

// registered are the service's tasks: one line each, its name and its
// constructor. (A list, not a map: gofmt would align a map's values, and
// adding a task would touch its neighbours' lines.)
var registered = []registration{
	{NameExport, as(NewExport)},
	{NameWordCount, as(NewWordCount)},
}

// registration is a task's name and its constructor.
type registration struct {
	name  string
	build func(Config) (task.Task, error)
}

// ErrInvalidConfig is wrapped by the error of a constructor of this
// package for a configuration that cannot work; the message names the
// field.
var ErrInvalidConfig = errors.New("tasks: invalid configuration")

// Config is what the service's tasks are built from: the settings of a
// function that runs them (the worker) or checks their specs (intake).
// Every field is required.
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
// ErrInvalidConfig. The worker runs each job's task from it, and intake
// checks each spec with it, so that both know the same tasks.
func NewRegistry(cfg Config) (*task.Registry, error) { return newRegistry(cfg, registered) }

// newRegistry builds each of regs' tasks from cfg, checked first: a bad
// Config is the registry's error, not its first task's.
func newRegistry(cfg Config, regs []registration) (*task.Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	built := make(map[string]task.Task, len(regs))
	for _, r := range regs {
		if _, twice := built[r.name]; twice {
			return nil, fmt.Errorf("%w: task %s is registered twice", ErrInvalidConfig, r.name)
		}
		t, err := r.build(cfg)
		if err != nil {
			return nil, fmt.Errorf("tasks: %s: %w", r.name, err)
		}
		built[r.name] = t
	}
	return task.NewRegistry(task.RegistryConfig{Tasks: built, Default: DefaultTask})
}

// as adapts a task's constructor to the registry's.
func as[T task.Task](build func(Config) (T, error)) func(Config) (task.Task, error) {
	return func(cfg Config) (task.Task, error) {
		t, err := build(cfg)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}
