package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/task"
)

// checked is a task whose spec check refuses "bad": it records every spec
// it is asked about.
type checked struct {
	ext   string
	asked []map[string]string
}

func (c *checked) ValidateSpec(spec map[string]string) error {
	c.asked = append(c.asked, spec)
	if spec["bad"] != "" {
		return errors.New("bad is set")
	}
	return nil
}

func (c *checked) Ext(task.Job) string { return c.ext }

func (c *checked) Run(context.Context, task.Input) (task.Output, error) { return task.Output{}, nil }

func noop(context.Context, task.Input) (task.Output, error) { return task.Output{}, nil }

func twoTasks(t *testing.T) (*task.Registry, *checked, *checked) {
	t.Helper()
	export, count := &checked{ext: "ndjson"}, &checked{ext: "json"}
	r, err := task.NewRegistry(task.RegistryConfig{Default: "export", Tasks: map[string]task.Task{"export": export, "wordcount": count}})
	require.NoError(t, err)
	return r, export, count
}

// A job picks its task by its spec's "task"; without one, the default.
func TestLookupPicksTheSpecsTask(t *testing.T) {
	t.Parallel()
	r, export, count := twoTasks(t)
	for _, tc := range []struct {
		spec map[string]string
		name string
		want task.Task
	}{
		{nil, "export", export},
		{map[string]string{}, "export", export},
		{map[string]string{"page_size": "5"}, "export", export},
		{map[string]string{task.SpecTask: "export"}, "export", export},
		{map[string]string{task.SpecTask: "wordcount"}, "wordcount", count},
	} {
		name, got, err := r.Lookup(tc.spec)
		require.NoError(t, err, "%v", tc.spec)
		require.Equal(t, tc.name, name, "%v", tc.spec)
		require.Same(t, tc.want, got, "%v", tc.spec)
	}
	require.Equal(t, []string{"export", "wordcount"}, r.Names(), "sorted")
}

// A task no one registered is ErrUnknownTask, named in the message with the
// known ones; so is an empty name (the spec names a task, and none is
// called ""), and a spec without a task when there is no default.
func TestLookupRefusesAnUnknownTask(t *testing.T) {
	t.Parallel()
	r, _, _ := twoTasks(t)
	for _, name := range []string{"Export", "export ", "wc", "", "wordcount\x00"} {
		_, got, err := r.Lookup(map[string]string{task.SpecTask: name})
		require.ErrorIs(t, err, task.ErrUnknownTask, "%q", name)
		require.Nil(t, got)
		require.Contains(t, err.Error(), `known tasks: export, wordcount`)
		require.Contains(t, err.Error(), `"task"`, "the message names the spec key")
	}
	// A huge name is cut in the message, at a rune boundary.
	_, _, err := r.Lookup(map[string]string{task.SpecTask: strings.Repeat("é", 4000)})
	require.ErrorIs(t, err, task.ErrUnknownTask)
	require.Less(t, len(err.Error()), 300)

	noDefault, err := task.NewRegistry(task.RegistryConfig{Tasks: map[string]task.Task{"export": task.Func("ndjson", noop)}})
	require.NoError(t, err)
	_, _, err = noDefault.Lookup(map[string]string{"page_size": "5"})
	require.ErrorIs(t, err, task.ErrUnknownTask)
	require.Contains(t, err.Error(), "names no task")
	_, _, err = noDefault.Lookup(map[string]string{task.SpecTask: "export"})
	require.NoError(t, err)
}

// ValidateSpec asks the named task's own check, and only that task's; an
// unknown task is ErrUnknownTask and asks nobody.
func TestValidateSpecAsksTheNamedTask(t *testing.T) {
	t.Parallel()
	r, export, count := twoTasks(t)
	require.NoError(t, r.ValidateSpec(map[string]string{task.SpecTask: "wordcount"}))
	require.Len(t, count.asked, 1)
	require.Empty(t, export.asked)

	err := r.ValidateSpec(map[string]string{"bad": "1"})
	require.ErrorContains(t, err, "bad is set")
	require.ErrorContains(t, err, "export", "the message names the task")
	require.NotErrorIs(t, err, task.ErrUnknownTask)
	require.Len(t, export.asked, 1)

	err = r.ValidateSpec(map[string]string{task.SpecTask: "nope", "bad": "1"})
	require.ErrorIs(t, err, task.ErrUnknownTask)
	require.Len(t, export.asked, 1)
	require.Len(t, count.asked, 1)
}

// NewRegistry refuses each invalid configuration with ErrInvalidConfig and
// the field's name.
func TestNewRegistryRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	ok := task.Func("txt", noop)
	for name, tc := range map[string]struct {
		cfg   task.RegistryConfig
		field string
	}{
		"no tasks":           {task.RegistryConfig{}, "Tasks"},
		"empty map":          {task.RegistryConfig{Tasks: map[string]task.Task{}}, "Tasks"},
		"nil task":           {task.RegistryConfig{Tasks: map[string]task.Task{"a": nil}}, `Tasks["a"]`},
		"nil Func":           {task.RegistryConfig{Tasks: map[string]task.Task{"a": task.Func("txt", nil)}}, `Tasks["a"]`},
		"empty name":         {task.RegistryConfig{Tasks: map[string]task.Task{"": ok}}, `Tasks[""]`},
		"upper case name":    {task.RegistryConfig{Tasks: map[string]task.Task{"Export": ok}}, `Tasks["Export"]`},
		"name with a space":  {task.RegistryConfig{Tasks: map[string]task.Task{"word count": ok}}, `Tasks["word count"]`},
		"name over 64 bytes": {task.RegistryConfig{Tasks: map[string]task.Task{strings.Repeat("a", task.MaxNameLength+1): ok}}, "Tasks["},
		"unknown default":    {task.RegistryConfig{Tasks: map[string]task.Task{"a": ok}, Default: "b"}, "Default"},
	} {
		_, err := task.NewRegistry(tc.cfg)
		require.ErrorIs(t, err, task.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.ErrorIs(t, tc.cfg.Validate(), task.ErrInvalidConfig, name)
	}
	for _, name := range []string{"a", "word_count", "export-2", "x9", strings.Repeat("a", task.MaxNameLength)} {
		_, err := task.NewRegistry(task.RegistryConfig{Tasks: map[string]task.Task{name: ok}, Default: name})
		require.NoError(t, err, name)
	}
}

// The registry keeps its own copy of the map: a change to the caller's
// after NewRegistry changes nothing.
func TestRegistryCopiesItsTasks(t *testing.T) {
	t.Parallel()
	tasks := map[string]task.Task{"a": task.Func("txt", noop)}
	r, err := task.NewRegistry(task.RegistryConfig{Tasks: tasks, Default: "a"})
	require.NoError(t, err)
	tasks["b"] = task.Func("txt", noop)
	delete(tasks, "a")
	require.Equal(t, []string{"a"}, r.Names())
	_, _, err = r.Lookup(map[string]string{task.SpecTask: "b"})
	require.ErrorIs(t, err, task.ErrUnknownTask)
	_, _, err = r.Lookup(nil)
	require.NoError(t, err, "the default is still there")
}

// Func's task accepts every spec and has the same extension for every job.
func TestFunc(t *testing.T) {
	t.Parallel()
	ran := false
	f := task.Func("csv", func(context.Context, task.Input) (task.Output, error) { ran = true; return task.Output{Items: 3}, nil })
	require.NoError(t, f.ValidateSpec(map[string]string{"anything": "at all"}))
	require.Equal(t, "csv", f.Ext(task.Job{ID: "job-1"}))
	out, err := f.Run(t.Context(), task.Input{})
	require.NoError(t, err)
	require.True(t, ran)
	require.EqualValues(t, 3, out.Items)
}
