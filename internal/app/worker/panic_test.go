package worker_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// panicsInExt is a task whose Ext panics: the worker asks it before Run.
type panicsInExt struct{ task.Task }

func (panicsInExt) Ext(task.Job) string { panic("injected: Ext panics") }

// A task that panics, in Run or in Ext, under pkg/fifo: the panic is the
// message's failure (fifo's Panicked), never a crash. Nothing is accepted
// or uploaded, the job is not completed, and each delivery takes the job
// over with a new generation until the recovery policy ends it
// (recovery_exhausted) at the claim after the last.
func TestAPanickingTaskIsNeverAccepted(t *testing.T) {
	t.Parallel()
	runs := task.Func("txt", func(ctx context.Context, in task.Input) (task.Output, error) {
		if _, err := io.WriteString(in.Out, "half a result\n"); err != nil {
			return task.Output{}, err
		}
		if err := in.Progress(ctx, 1); err != nil {
			return task.Output{}, err
		}
		panic("injected: Run panics")
	})
	for name, panicking := range map[string]task.Task{"Run": runs, "Ext": panicsInExt{runs}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, jobs.Config{Recovery: jobs.RecoveryPolicy{MaxGenerations: 2}})
			_, msg := b.create(t, "job-42", nil)
			batch := events.SQSEvent{Records: []events.SQSMessage{msg}}
			// Deliveries come a visibility timeout (6 minutes) apart; each
			// invocation's deadline lies after the store's now at its start.
			for i, timeout := range []time.Duration{time.Minute, 7 * time.Minute} {
				proc, err := fifo.New(fifo.Config{Handler: b.worker(panicking).Handle})
				require.NoError(t, err)
				resp, err := proc.Process(invocation(t, fmt.Sprintf("req-%d", i+1), timeout), batch)
				require.NoError(t, err)
				require.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: msg.MessageId}}, resp.BatchItemFailures,
					"delivery %d: the message is received again", i+1)
				job := b.get(t, "job-42")
				require.Equal(t, jobs.StatusRunning, job.Status, "delivery %d", i+1)
				require.EqualValues(t, i+1, job.Generation, "delivery %d: one generation spent", i+1)
				require.Zero(t, job.Result, "delivery %d: nothing accepted", i+1)
				require.Empty(t, b.s3.keys(), "delivery %d: nothing uploaded", i+1)
				b.clock.Advance(6 * time.Minute)
			}
			proc, err := fifo.New(fifo.Config{Handler: b.worker(mustNotRun(t)).Handle})
			require.NoError(t, err)
			resp, err := proc.Process(invocation(t, "req-3", 13*time.Minute), batch)
			require.NoError(t, err)
			require.Empty(t, resp.BatchItemFailures, "the job is failed and the command acknowledged")
			job := b.get(t, "job-42")
			require.Equal(t, jobs.StatusFailed, job.Status)
			require.Equal(t, jobs.CodeRecoveryExhausted, job.Error.Code)
			require.Empty(t, b.s3.keys())
		})
	}
}
