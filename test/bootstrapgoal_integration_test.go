//go:build integration

package test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxBootstrapSize is the goal for a deployed bootstrap (issue 8), every
// function's on each transport (issue 17): 10 MB, 10^7 bytes; a bootstrap
// of exactly that size is within it. `make bootstraps` flags the same
// bound ("over the 10 MB goal" past 10e6).
const maxBootstrapSize = 10_000_000

// requireWithinBootstrapGoal fails t unless size, the bytes of fn's
// linux/arm64 bootstrap as variant's template builds it, is within the
// goal.
func requireWithinBootstrapGoal(t require.TestingT, variant, fn string, size int64) {
	require.LessOrEqual(t, size, int64(maxBootstrapSize),
		"%s's linux/arm64 bootstrap (%s) is %.2f MB, over the 10 MB goal; `go tool nm -size -sort size` on a build without -s shows what grew, docs/BENCHMARKS.md what each links", fn, variant, float64(size)/1e6)
}

// recorder is a require.TestingT that records whether it failed.
type recorder struct{ failed bool }

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true }

// The goal is held at its value: exactly 10 MB is within it, one byte
// more is not.
func TestTheBootstrapGoalIsHeldAtExactly10MB(t *testing.T) {
	t.Parallel()
	for size, over := range map[int64]bool{9_999_999: false, 10_000_000: false, 10_000_001: true} {
		r := &recorder{}
		requireWithinBootstrapGoal(r, "test", "fn", size)
		require.Equal(t, over, r.failed, fmt.Sprint(size))
	}
}
