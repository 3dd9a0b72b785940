package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTheZeroConfigMeansTheDefaults: a zero field takes its documented
// default, and a set one is kept as it is.
func TestTheZeroConfigMeansTheDefaults(t *testing.T) {
	t.Parallel()
	c, err := Config{}.resolve()
	require.NoError(t, err)
	require.NotNil(t, c.now)
	require.Equal(t, config{
		recovery:        RecoveryPolicy{MaxGenerations: DefaultMaxGenerations},
		retention:       DefaultRetention,
		intentRetention: DefaultIntentRetention,
		clockSkew:       DefaultClockSkew,
	}, withoutClock(c))

	fixed := time.Date(2026, 11, 4, 9, 15, 0, 0, time.UTC)
	c, err = Config{
		Now:             func() time.Time { return fixed },
		Recovery:        RecoveryPolicy{MaxGenerations: 1},
		Retention:       time.Hour,
		IntentRetention: 2 * time.Hour,
		ClockSkew:       time.Second,
	}.resolve()
	require.NoError(t, err)
	require.Equal(t, fixed, c.now())
	require.Equal(t, config{
		recovery:        RecoveryPolicy{MaxGenerations: 1},
		retention:       time.Hour,
		intentRetention: 2 * time.Hour,
		clockSkew:       time.Second,
	}, withoutClock(c))
}

// withoutClock returns c without its clock, which require.Equal cannot
// compare.
func withoutClock(c config) config {
	c.now = nil
	return c
}

// resolved is c with its defaults filled in, for a test of the store's
// internals.
func resolved(t testing.TB, c Config) config {
	t.Helper()
	r, err := c.resolve()
	require.NoError(t, err)
	return r
}
