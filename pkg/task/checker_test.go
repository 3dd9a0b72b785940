package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/task"
)

// recorder is a spec check that refuses "bad" and records what it is
// asked, under its task's name.
func recorder(name string, asked *[]string) task.SpecCheck {
	return func(spec map[string]string) error {
		*asked = append(*asked, name)
		if spec["bad"] != "" {
			return errors.New("bad is set")
		}
		return nil
	}
}

// A Checker, built from the tasks' spec checks alone (nothing a task needs
// to run), checks a spec as a Registry of the same tasks does: the named
// task's check and only it, the default for a spec without a task, an
// unknown name ErrUnknownTask asking nobody.
func TestCheckerAsksTheNamedTasksCheck(t *testing.T) {
	t.Parallel()
	var asked []string
	c, err := task.NewChecker(task.CheckerConfig{Default: "export", Checks: map[string]task.SpecCheck{
		"export": recorder("export", &asked), "wordcount": recorder("wordcount", &asked),
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"export", "wordcount"}, c.Names(), "sorted")
	for _, tc := range []struct {
		spec  map[string]string
		asked []string
		err   string
	}{
		{nil, []string{"export"}, ""},
		{map[string]string{task.SpecTask: "wordcount"}, []string{"wordcount"}, ""},
		{map[string]string{"bad": "1"}, []string{"export"}, "task export: bad is set"},
		{map[string]string{task.SpecTask: "wordcount", "bad": "1"}, []string{"wordcount"}, "task wordcount: bad is set"},
		{map[string]string{task.SpecTask: "nope", "bad": "1"}, nil, `unknown task "nope" (spec key "task"; known tasks: export, wordcount)`},
	} {
		asked = nil
		err := c.ValidateSpec(tc.spec)
		require.Equal(t, tc.asked, asked, "%v", tc.spec)
		if tc.err == "" {
			require.NoError(t, err, "%v", tc.spec)
			continue
		}
		require.ErrorContains(t, err, tc.err, "%v", tc.spec)
		require.Equal(t, tc.asked == nil, errors.Is(err, task.ErrUnknownTask), "%v", tc.spec)
	}

	noDefault, err := task.NewChecker(task.CheckerConfig{Checks: map[string]task.SpecCheck{"export": recorder("export", &asked)}})
	require.NoError(t, err)
	require.ErrorIs(t, noDefault.ValidateSpec(map[string]string{"page_size": "5"}), task.ErrUnknownTask)
}

// A Checker and a Registry of the same tasks give the same answer, word
// for word: intake's refusal is the worker's.
func TestCheckerAnswersAsTheRegistry(t *testing.T) {
	t.Parallel()
	export, count := &checked{ext: "ndjson"}, &checked{ext: "json"}
	r, err := task.NewRegistry(task.RegistryConfig{Default: "export", Tasks: map[string]task.Task{"export": export, "wordcount": count}})
	require.NoError(t, err)
	c, err := task.NewChecker(task.CheckerConfig{Default: "export", Checks: map[string]task.SpecCheck{
		"export": export.ValidateSpec, "wordcount": count.ValidateSpec,
	}})
	require.NoError(t, err)
	for _, spec := range []map[string]string{
		nil, {"bad": "1"}, {task.SpecTask: "wordcount", "bad": "1"}, {task.SpecTask: ""}, {task.SpecTask: "Export"},
	} {
		want, got := r.ValidateSpec(spec), c.ValidateSpec(spec)
		require.Equal(t, want == nil, got == nil, "%v", spec)
		if want != nil {
			require.Equal(t, want.Error(), got.Error(), "%v", spec)
		}
	}
}

// NewChecker refuses each invalid configuration with ErrInvalidConfig and
// the field's name, by the same rules as NewRegistry.
func TestNewCheckerRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	ok := task.SpecCheck(func(map[string]string) error { return nil })
	for name, tc := range map[string]struct {
		cfg   task.CheckerConfig
		field string
	}{
		"no checks":          {task.CheckerConfig{}, "Checks"},
		"empty map":          {task.CheckerConfig{Checks: map[string]task.SpecCheck{}}, "Checks"},
		"nil check":          {task.CheckerConfig{Checks: map[string]task.SpecCheck{"a": nil}}, `Checks["a"] is nil`},
		"empty name":         {task.CheckerConfig{Checks: map[string]task.SpecCheck{"": ok}}, `Checks[""]`},
		"upper case name":    {task.CheckerConfig{Checks: map[string]task.SpecCheck{"Export": ok}}, `Checks["Export"]`},
		"name over 64 bytes": {task.CheckerConfig{Checks: map[string]task.SpecCheck{strings.Repeat("a", task.MaxNameLength+1): ok}}, "Checks["},
		"unknown default":    {task.CheckerConfig{Checks: map[string]task.SpecCheck{"a": ok}, Default: "b"}, "Default"},
	} {
		c, err := task.NewChecker(tc.cfg)
		require.ErrorIs(t, err, task.ErrInvalidConfig, name)
		require.ErrorContains(t, err, tc.field, name)
		require.Nil(t, c, name)
		require.ErrorIs(t, tc.cfg.Validate(), task.ErrInvalidConfig, name)
	}
	_, err := task.NewChecker(task.CheckerConfig{Checks: map[string]task.SpecCheck{strings.Repeat("a", task.MaxNameLength): ok}})
	require.NoError(t, err, "a name of exactly MaxNameLength bytes")
}

// The checker keeps its own copy of the map.
func TestCheckerCopiesItsChecks(t *testing.T) {
	t.Parallel()
	ok := task.SpecCheck(func(map[string]string) error { return nil })
	checks := map[string]task.SpecCheck{"a": ok}
	c, err := task.NewChecker(task.CheckerConfig{Checks: checks, Default: "a"})
	require.NoError(t, err)
	checks["b"] = ok
	delete(checks, "a")
	require.Equal(t, []string{"a"}, c.Names())
	require.NoError(t, c.ValidateSpec(nil))
	require.ErrorIs(t, c.ValidateSpec(map[string]string{task.SpecTask: "b"}), task.ErrUnknownTask)
}
