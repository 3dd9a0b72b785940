package intake_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
)

// TestSpecIsCheckedByTheTasksValidator: with the task's validator in its
// configuration (as the wiring gives it the reference task's,
// tasks.ValidateSpec), intake refuses a spec the task can never run:
// 400 invalid_spec, a message naming the field, nothing written. Each
// bound of page_size at its value.
func TestSpecIsCheckedByTheTasksValidator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pageSize string
		status   int
	}{
		{"0", 400}, {"1", 202}, {"1000", 202}, {"1001", 400}, {"abc", 400}, {"", 400},
	} {
		t.Run(fmt.Sprintf("page_size %q", tc.pageSize), func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *intake.Config) { c.ValidateSpec = tasks.ValidateSpec })
			resp := b.do(t, post("t-1", "intent-1", `{"spec":{"page_size":"`+tc.pageSize+`"}}`))
			require.Equal(t, tc.status, resp.StatusCode, resp.Body)
			if tc.status == 202 {
				require.Equal(t, int32(1), b.store.writes.Load())
				return
			}
			e := errorOf(t, resp)
			require.Equal(t, intake.CodeInvalidSpec, e.Code)
			require.Contains(t, e.Message, "page_size")
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
