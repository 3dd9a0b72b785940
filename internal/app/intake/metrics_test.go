package intake_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
)

// TestACreateCountsANewJobAndNotItsReplay: a new job is one JobsCreated
// record; the replay of its intent (200, nothing written), a conflicting
// reuse of its key and a refused spec write none.
func TestACreateCountsANewJobAndNotItsReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *intake.Config) { c.FunctionName = "stack-intake" })
	const body = `{"spec":{"page_size":"5"}}`
	require.Equal(t, 202, b.do(t, post("t-1", "intent-1", body)).StatusCode)
	want := []string{fmt.Sprintf(`{"FunctionName":"stack-intake","JobsCreated":1,"_aws":{"CloudWatchMetrics":[{"Dimensions":[["FunctionName"]],`+
		`"Metrics":[{"Name":"JobsCreated","Unit":"Count"}],"Namespace":"fifoworker/jobs"}],"Timestamp":%d}}`, jobstest.Start.UnixMilli())}
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))

	require.Equal(t, 200, b.do(t, post("t-1", "intent-1", body)).StatusCode, "the replay")
	require.Equal(t, 409, b.do(t, post("t-1", "intent-1", `{"spec":{"page_size":"6"}}`)).StatusCode, "the key with another spec")
	require.Equal(t, 400, b.do(t, post("t-1", "intent-2", `{"spec":`)).StatusCode, "a body that is no JSON")
	require.Equal(t, want, testenv.EMFRecords(t, b.logs.String()))

	require.Equal(t, 202, b.do(t, post("t-1", "intent-2", body)).StatusCode, "a second job")
	require.Equal(t, append(want, want[0]), testenv.EMFRecords(t, b.logs.String()))
}

func TestACreateWritesNoMetricsWithoutAFunctionName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, 202, b.do(t, post("t-1", "intent-1", `{"spec":{"page_size":"5"}}`)).StatusCode)
	require.Empty(t, testenv.EMFRecords(t, b.logs.String()))
}
