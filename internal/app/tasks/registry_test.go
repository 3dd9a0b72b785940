package tasks_test

import (
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
