package articles_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/worker/articles"
)

// TestValidateSpec: the export's own check of a spec, which intake runs
// before it creates a job (TestExportPageSizeBounds runs the same bounds
// through Run). Each bound at its value; the message names the field.
func TestValidateSpec(t *testing.T) {
	t.Parallel()
	for _, spec := range []map[string]string{
		nil, {}, {"source": "articles"},
		{articles.SpecPageSize: "1"}, {articles.SpecPageSize: "1000"}, {articles.SpecPageSize: "250"},
	} {
		require.NoError(t, articles.ValidateSpec(spec), "%v", spec)
	}
	for _, bad := range []string{"0", "1001", "-5", "", "abc", "1.5", " 10", "10 ", "99999999999"} {
		err := articles.ValidateSpec(map[string]string{articles.SpecPageSize: bad})
		require.ErrorIs(t, err, articles.ErrInvalidSpec, "%q", bad)
		require.Contains(t, err.Error(), articles.SpecPageSize, "the message names the field")
	}
}
