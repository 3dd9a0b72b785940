package browser

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewRefusesEachInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no artefacts directory", Config{}, "Artefacts"},
		{"a negative timeout", Config{Artefacts: t.TempDir(), Timeout: -1}, "Timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.ErrorContains(t, err, tc.field)
		})
	}
}

// Without a Chromium, New says how to get one, and starts nothing.
func TestNewWithoutChromiumSaysHowToGetOne(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Config{Artefacts: t.TempDir(), Getenv: func(string) string { return "" }})
	require.ErrorIs(t, err, ErrNoChromium)
	require.ErrorContains(t, err, "make chromium installs Debian's package")
}

func TestBinaryPrefersTheConfigThenTheEnvironment(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvChromium {
				return v
			}
			return ""
		}
	}
	got, err := Binary(Config{Binary: "/a/chromium", Getenv: env("/b/chromium")})
	require.NoError(t, err)
	require.Equal(t, "/a/chromium", got)
	got, err = Binary(Config{Getenv: env("/b/chromium")})
	require.NoError(t, err)
	require.Equal(t, "/b/chromium", got)
}

// A Chromium that cannot start is an error that says so, and leaves no
// user data directory or process behind.
func TestNewFailsWhenChromiumCannotStart(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Artefacts: t.TempDir(), Binary: "/nonexistent/chromium"})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrInvalidConfig))
	require.ErrorContains(t, err, "browser: start /nonexistent/chromium")
}
