package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// metricsWorker is a worker running work that writes the job metrics to
// logs, stamped at 09:30.
func (b *testBundle) metricsWorker(work task.Task, logs *testenv.Buffer, function string) *worker.Worker {
	at := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
	return mustNew(b.t, worker.Config{Jobs: b.jobs, Candidates: b.candidates, Tasks: only(b.t, work),
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), FunctionName: function, Now: func() time.Time { return at }})
}

// TestAnAcceptLogsTheJobsLatencyOnce: the job created 1.5 s before its
// accept is one JobLatency of 1500 ms; its command delivered again writes
// none, nor does a job that fails.
func TestAnAcceptLogsTheJobsLatencyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	b.clock.Advance(1500 * time.Millisecond)
	logs := &testenv.Buffer{}
	w := b.metricsWorker(lines("a"), logs, "stack-worker")
	require.NoError(t, w.Handle(invocation(t, "req-1", time.Minute), msg))
	require.Equal(t, jobs.StatusCompleted, b.get(t, "job-42").Status)
	want := []string{fmt.Sprintf(`{"FunctionName":"stack-worker","JobLatency":1500,"_aws":{"CloudWatchMetrics":[{"Dimensions":[["FunctionName"]],`+
		`"Metrics":[{"Name":"JobLatency","Unit":"Milliseconds"}],"Namespace":"fifoworker/jobs"}],"Timestamp":%d}}`,
		time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC).UnixMilli())}
	require.Equal(t, want, testenv.EMFRecords(t, logs.String()))

	require.NoError(t, w.Handle(invocation(t, "req-2", time.Minute), msg), "the command again")
	_, failing := b.create(t, "job-43", nil)
	broken := task.Func("txt", func(context.Context, task.Input) (task.Output, error) {
		return task.Output{}, fifo.Permanent(errors.New("the source is gone"))
	})
	require.NoError(t, b.metricsWorker(broken, logs, "stack-worker").Handle(invocation(t, "req-3", time.Minute), failing))
	require.Equal(t, jobs.StatusFailed, b.get(t, "job-43").Status)
	require.Equal(t, want, testenv.EMFRecords(t, logs.String()))
}

func TestAnAcceptLogsNoMetricsWithoutAFunctionName(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, msg := b.create(t, "job-42", nil)
	logs := &testenv.Buffer{}
	require.NoError(t, b.metricsWorker(lines("a"), logs, "").Handle(invocation(t, "req-1", time.Minute), msg))
	require.Equal(t, jobs.StatusCompleted, b.get(t, "job-42").Status)
	require.Empty(t, testenv.EMFRecords(t, logs.String()))
}
