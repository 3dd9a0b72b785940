package candidate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDoublesWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	c := defaultConfig()
	c.conflictBackoff = 100 * time.Millisecond
	for retry, full := range map[int]time.Duration{
		1:  100 * time.Millisecond,
		2:  200 * time.Millisecond,
		3:  400 * time.Millisecond,
		6:  maxConflictBackoff,
		60: maxConflictBackoff,
	} {
		for range 100 {
			d := c.backoff(retry)
			require.GreaterOrEqual(t, d, full/2, "retry %d", retry)
			require.LessOrEqual(t, d, full, "retry %d", retry)
		}
	}
	c.conflictBackoff = 0
	require.Zero(t, c.backoff(3))
}
