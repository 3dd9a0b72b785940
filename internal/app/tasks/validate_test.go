package tasks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/tasks"
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
