package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// TestExportValidateSpec: the export's own check of a spec, which intake
// runs before it creates a job (TestExportPageSizeBounds runs the same
// bounds through Run). Each bound at its value; the message names the
// field.
func TestExportValidateSpec(t *testing.T) {
	t.Parallel()
	export := newExport(t, newFakeArticles(), "articles")
	for _, spec := range []map[string]string{
		nil, {}, {"source": "articles"},
		{tasks.SpecPageSize: "1"}, {tasks.SpecPageSize: "1000"}, {tasks.SpecPageSize: "250"},
	} {
		require.NoError(t, export.ValidateSpec(spec), "%v", spec)
	}
	for _, bad := range []string{"0", "1001", "-5", "", "abc", "1.5", " 10", "10 ", "99999999999"} {
		err := export.ValidateSpec(map[string]string{tasks.SpecPageSize: bad})
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%q", bad)
		require.Contains(t, err.Error(), tasks.SpecPageSize, "the message names the field")
	}
}

// The export accepts any key, as it did before tasks had names (an older
// client's {"source":"articles"} still creates an export), except a key
// only another task reads: such a spec meant that task and forgot its
// "task", and is refused rather than exported. Run, though, runs a job
// created before the rule with such a key as it always did: its spec was
// accepted then.
func TestExportRefusesAnotherTasksKey(t *testing.T) {
	t.Parallel()
	export := newExport(t, newFakeArticles(), "articles")
	for _, spec := range []map[string]string{
		{"source": "articles"}, {"format": "ndjson", "x": "y"},
		{task.SpecTask: tasks.NameExport, tasks.SpecPageSize: "5", "legacy": "1"},
	} {
		require.NoError(t, export.ValidateSpec(spec), "%v", spec)
	}
	for _, spec := range []map[string]string{
		{tasks.SpecFields: "body"},
		{task.SpecTask: tasks.NameExport, tasks.SpecFields: "title,body"},
		{tasks.SpecFields: ""},
	} {
		err := export.ValidateSpec(spec)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, "%v", spec)
		require.ErrorContains(t, err, `the export does not read "fields", a key of task wordcount`, "%v", spec)
	}

	f := newFakeArticles()
	f.put(t, article("t-1", "a1"))
	r, out, err := exportRun(t, backend{api: f, table: f.table, put: f.put}, "t-1", map[string]string{tasks.SpecFields: "body"})
	require.NoError(t, err)
	require.EqualValues(t, 1, out.Items)
	require.Equal(t, []string{"t-1/a1"}, ids(r.lines(t)))
}
