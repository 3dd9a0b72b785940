package intake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// TestSpecIsCheckedByTheTasksValidator: with the service's tasks' checks
// in its configuration (as the wiring gives them, tasks.NewChecker: no
// task is built, no client), intake refuses a spec the named task can
// never run: 400 invalid_spec, a message naming the key, nothing written.
// Each bound of page_size at its value; a key the named task does not read
// (the word count's "fields" without its "task", a misspelt key) and a
// field name with a space at an end are refused, not ignored.
func TestSpecIsCheckedByTheTasksValidator(t *testing.T) {
	t.Parallel()
	checks, err := tasks.NewChecker()
	require.NoError(t, err)
	for _, tc := range []struct {
		spec   string
		status int
		says   string
	}{
		{`{"page_size":"0"}`, 400, "page_size"},
		{`{"page_size":"1"}`, 202, ""},
		{`{"page_size":"1000"}`, 202, ""},
		{`{"page_size":"1001"}`, 400, "page_size"},
		{`{"page_size":"abc"}`, 400, "page_size"},
		{`{"page_size":""}`, 400, "page_size"},
		{`{"source":"articles"}`, 202, ""},
		{`{"fields":"body"}`, 400, `task export: tasks: invalid spec: the export does not read "fields", a key of task wordcount`},
		{`{"task":"wordcount","fields":"body"}`, 202, ""},
		{`{"task":"wordcount","feilds":"body"}`, 400, `spec key "feilds" is not the word count's (its keys: task, fields, page_size)`},
		{`{"task":"wordcount","fields":"title, body"}`, 400, `fields names " body", with a space at an end`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *intake.Config) { c.ValidateSpec = checks.ValidateSpec })
			resp := b.do(t, post("t-1", "intent-1", `{"spec":`+tc.spec+`}`))
			require.Equal(t, tc.status, resp.StatusCode, resp.Body)
			if tc.status == 202 {
				require.Equal(t, int32(1), b.store.writes.Load())
				return
			}
			e := errorOf(t, resp)
			require.Equal(t, intake.CodeInvalidSpec, e.Code)
			require.Contains(t, e.Message, tc.says)
			require.Zero(t, b.store.writes.Load(), "a refused spec writes nothing")
		})
	}
}

// TestSpecValidatorIsOptional: without a validator only the spec's limits
// apply; the validator runs after them, on a spec within them.
func TestSpecValidatorIsOptional(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, post("t-1", "intent-1", `{"spec":{"page_size":"0"}}`))
	require.Equal(t, 202, resp.StatusCode, resp.Body)

	calls := 0
	b = setup(t, func(c *intake.Config) {
		c.ValidateSpec = func(map[string]string) error { calls++; return errors.New("never") }
	})
	resp = b.do(t, post("t-1", "intent-1", `{"spec":{"Page-Size":"0"}}`))
	require.Equal(t, 400, resp.StatusCode, resp.Body)
	require.Contains(t, errorOf(t, resp).Message, "Page-Size", "the limits' own message")
	require.Zero(t, calls, "a spec outside the limits never reaches the task's validator")
}

// TestSpecIsCheckedByTheTaskItNames: with a registry's check in its
// configuration (task.Registry.ValidateSpec, as the wiring gives it the
// service's), intake asks the task the spec names, and only that task; a
// task nobody registered is its own 400, unknown_task, naming the task and
// the known ones. Nothing is written for a refused spec.
func TestSpecIsCheckedByTheTaskItNames(t *testing.T) {
	t.Parallel()
	var asked []string
	limit := func(name, key string) task.Task {
		return checkedTask{name: name, check: func(spec map[string]string) error {
			asked = append(asked, name)
			if spec[key] != "" {
				return fmt.Errorf("%s must not be set", key)
			}
			return nil
		}}
	}
	r, err := task.NewRegistry(task.RegistryConfig{Default: "export", Tasks: map[string]task.Task{
		"export": limit("export", "no_export"), "wordcount": limit("wordcount", "no_count"),
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		spec   string
		status int
		code   string
		asked  []string
		says   string
	}{
		{`{}`, 202, "", []string{"export"}, ""},
		{`{"no_count":"1"}`, 202, "", []string{"export"}, ""},
		{`{"task":"wordcount","no_export":"1"}`, 202, "", []string{"wordcount"}, ""},
		{`{"no_export":"1"}`, 400, intake.CodeInvalidSpec, []string{"export"}, "no_export must not be set"},
		{`{"task":"wordcount","no_count":"1"}`, 400, intake.CodeInvalidSpec, []string{"wordcount"}, "no_count must not be set"},
		{`{"task":"translate","no_count":"1"}`, 400, intake.CodeUnknownTask, nil, `unknown task "translate" (spec key "task"; known tasks: export, wordcount)`},
		{`{"task":""}`, 400, intake.CodeUnknownTask, nil, `unknown task ""`},
	} {
		asked = nil
		b := setup(t, func(c *intake.Config) { c.ValidateSpec = r.ValidateSpec })
		resp := b.do(t, post("t-1", "intent-1", `{"spec":`+tc.spec+`}`))
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.spec, resp.Body)
		require.Equal(t, tc.asked, asked, tc.spec)
		if tc.status == 202 {
			require.Equal(t, int32(1), b.store.writes.Load(), tc.spec)
			continue
		}
		e := errorOf(t, resp)
		require.Equal(t, tc.code, e.Code, tc.spec)
		require.Contains(t, e.Message, tc.says, tc.spec)
		require.Zero(t, b.store.writes.Load(), "%s: a refused spec writes nothing", tc.spec)
	}
}

// checkedTask is a task of which intake uses only the spec check.
type checkedTask struct {
	name  string
	check func(map[string]string) error
}

func (c checkedTask) ValidateSpec(spec map[string]string) error { return c.check(spec) }

func (c checkedTask) Ext(task.Job) string { return "txt" }

func (c checkedTask) Run(context.Context, task.Input) (task.Output, error) { return task.Output{}, nil }
