package ids_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/ids"
)

func TestProblem(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"job-42", "A_b-9", strings.Repeat("x", ids.MaxLen)} {
		require.Empty(t, ids.Problem(ok), ok)
	}
	for id, want := range map[string]string{
		"":                                "is empty",
		strings.Repeat("x", ids.MaxLen+1): "more than 128",
		"../x":                            `byte '.' at offset 0`,
		"a/b":                             `byte '/' at offset 1`,
		"jöb":                             "offset 1",
		"a b":                             `byte ' '`,
	} {
		require.Contains(t, ids.Problem(id), want, "%q", id)
	}
}
