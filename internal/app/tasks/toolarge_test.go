package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/tasks"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// The export wraps a refused write as a retryable error, as it does every
// write error; the worker still fails the job for good when the write was
// refused for the candidate's size. An export of exactly MaxCandidateBytes
// completes; one byte less of bound, and the job fails after its first
// attempt with candidate_too_large, with nothing uploaded.
func TestExportOverMaxCandidateBytesFailsAtOnce(t *testing.T) {
	t.Parallel()
	be := fakeBackend(t)
	for i := range 30 {
		be.put(t, article("t-1", fmt.Sprintf("a%02d", i)))
	}
	r, _, err := exportRun(t, be, "t-1", map[string]string{tasks.SpecPageSize: "7"})
	require.NoError(t, err)
	size := int64(r.out.Len())

	for bound, want := range map[int64]jobs.Status{size: jobs.StatusCompleted, size - 1: jobs.StatusFailed} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			t.Parallel()
			store, err := jobs.NewMemoryStore(jobs.Config{})
			require.NoError(t, err)
			created, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-42", IntentID: "i-42", Tenant: "t-1",
				Spec: map[string]string{tasks.SpecPageSize: "7"}})
			require.NoError(t, err)
			s3, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{"candidates-test"}})
			require.NoError(t, err)
			candidates, err := candidate.New(candidate.Config{Client: s3, Bucket: "candidates-test", SpoolDir: t.TempDir(), MaxSize: bound, SpoolBudget: bound})
			require.NoError(t, err)
			w, err := worker.New(worker.Config{
				Jobs:       store,
				Candidates: candidates,
				Tasks:      registry(t, be.api, be.table),
			})
			require.NoError(t, err)
			msg := commandMessage(t, created.Job)
			for attempt := range 2 { // the second delivery finds the job final
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: fmt.Sprint("req-", attempt)})
				require.NoError(t, w.Handle(ctx, msg))
			}
			job, err := store.Get(t.Context(), "job-42")
			require.NoError(t, err)
			require.Equal(t, want, job.Status)
			require.EqualValues(t, 1, job.Generation, "one attempt")
			if want == jobs.StatusFailed {
				require.Equal(t, worker.CodeCandidateTooLarge, job.Error.Code)
				require.Zero(t, s3.Calls(s3mem.OpPutObject))
			} else {
				require.Equal(t, size, job.Result.Size)
			}
		})
	}
}

// commandMessage is the job.run message of a job just created.
func commandMessage(t *testing.T, job jobs.Job) events.SQSMessage {
	t.Helper()
	body, err := json.Marshal(outbox.Command{Type: jobs.MessageRun, CommandID: jobs.OutboxID(job.ID, job.Version),
		JobID: job.ID, IntentID: job.IntentID, Tenant: job.Tenant, Version: job.Version, IssuedAt: job.UpdatedAt})
	require.NoError(t, err)
	return events.SQSMessage{MessageId: "msg-1", Body: string(body), Attributes: map[string]string{"MessageGroupId": job.ID}}
}
