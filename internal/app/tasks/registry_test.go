package tasks_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// registry is the service's registry on the given Articles table.
func registry(t testing.TB, api tasks.QueryAPI, table string) *task.Registry {
	t.Helper()
	r, err := tasks.NewRegistry(tasks.Config{Articles: api, ArticlesTable: table})
	require.NoError(t, err)
	return r
}

// A spec without a task runs the export, as every spec did before tasks
// had names. (Each task's own test finds it in the registry under its
// name, so adding a task changes no test but its own.)
func TestRegistryDefaultsToTheExport(t *testing.T) {
	t.Parallel()
	r := registry(t, newFakeArticles(), "articles")
	require.Contains(t, r.Names(), tasks.NameExport)
	name, got, err := r.Lookup(map[string]string{tasks.SpecPageSize: "5"})
	require.NoError(t, err)
	require.Equal(t, tasks.NameExport, name)
	require.IsType(t, &tasks.Export{}, got)
	require.Equal(t, tasks.ExportExt, got.Ext(task.Job{}))
}

// The registry refuses a spec with the named task's own check.
func TestRegistryChecksASpecWithItsTask(t *testing.T) {
	t.Parallel()
	r := registry(t, newFakeArticles(), "articles")
	require.NoError(t, r.ValidateSpec(map[string]string{tasks.SpecPageSize: "1000"}))
	err := r.ValidateSpec(map[string]string{task.SpecTask: tasks.NameExport, tasks.SpecPageSize: "1001"})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, "page_size")
	require.ErrorIs(t, r.ValidateSpec(map[string]string{task.SpecTask: "translate"}), task.ErrUnknownTask)
}

// NewRegistry refuses each invalid configuration with ErrInvalidConfig,
// the field named in the message.
func TestNewRegistryRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]tasks.Config{
		"Articles":      {ArticlesTable: "articles"},
		"ArticlesTable": {Articles: newFakeArticles()},
	} {
		r, err := tasks.NewRegistry(cfg)
		require.ErrorIs(t, err, tasks.ErrInvalidConfig, field)
		require.ErrorContains(t, err, field)
		require.Nil(t, r, field)
		// Validated once, up front: not reported as a task's own error
		// ("tasks: export: tasks: invalid configuration: ...").
		require.True(t, strings.HasPrefix(err.Error(), tasks.ErrInvalidConfig.Error()+": "+field+" "), err.Error())
	}
}

// Intake's checker needs nothing (no client, no table) and answers every
// spec as the worker's registry does, word for word: each registration's
// spec check is its task's own. A registration that paired a task with
// another's check would fail here.
func TestCheckerAnswersAsTheRegistry(t *testing.T) {
	t.Parallel()
	c, err := tasks.NewChecker()
	require.NoError(t, err)
	r := registry(t, newFakeArticles(), "articles")
	require.Equal(t, r.Names(), c.Names())
	var specs []map[string]string
	for _, name := range append(r.Names(), "", "translate") {
		for _, keys := range []map[string]string{
			{}, {tasks.SpecPageSize: "0"}, {tasks.SpecPageSize: "1000"}, {tasks.SpecPageSize: "1001"},
			{tasks.SpecFields: "body"}, {tasks.SpecFields: "title, body"}, {tasks.SpecFields: "body,body"},
			{"feilds": "body"}, {"source": "articles"},
		} {
			spec := maps.Clone(keys)
			if name != "" {
				spec[task.SpecTask] = name
			}
			specs = append(specs, spec)
		}
	}
	refusals := 0
	for _, spec := range specs {
		want, got := r.ValidateSpec(spec), c.ValidateSpec(spec)
		if want == nil {
			require.NoError(t, got, "%v", spec)
			continue
		}
		refusals++
		require.EqualError(t, got, want.Error(), "%v", spec)
		require.Equal(t, errors.Is(want, task.ErrUnknownTask), errors.Is(got, task.ErrUnknownTask), "%v", spec)
	}
	require.Greater(t, refusals, len(specs)/3, "the corpus holds refusals of every kind")
}
