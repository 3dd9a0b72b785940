package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/worker"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// FuzzHandleDecidesForGood: a command the decoder accepts is one the job
// store accepts too. Were it not, the claim would refuse it with
// jobs.ErrInvalid on every receive, a failure that looks as if it might
// pass, until the quarantine's threshold parked it; the decoder refuses
// such a body permanently instead, and the quarantine parks it at once.
func FuzzHandleDecidesForGood(f *testing.F) {
	valid := body(f, nil)
	for _, seed := range []string{
		valid,
		body(f, func(c *outbox.Command) { c.Tenant = strings.Repeat("t", 257) }),
		body(f, func(c *outbox.Command) { c.Tenant = "t-\n1" }),
		body(f, func(c *outbox.Command) { c.Tenant = "t-1#x" }),
		body(f, func(c *outbox.Command) { c.IntentID = "" }),
		body(f, func(c *outbox.Command) {
			c.JobID, c.CommandID = strings.Repeat("j", 128), strings.Repeat("j", 128)+"/v0"
		}),
	} {
		f.Add(seed)
	}
	ctx := context.Background()
	store, err := jobs.NewMemoryStore(jobs.Config{})
	require.NoError(f, err)
	_, err = store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "intent-42", Tenant: "t-1"})
	require.NoError(f, err)
	w := mustNew(f, worker.Config{Jobs: store, Candidates: memoryCandidates(f), Tasks: only(f, lines("x"))})
	f.Fuzz(func(t *testing.T, raw string) {
		inv, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		inv = lambdacontext.NewContext(inv, &lambdacontext.LambdaContext{AwsRequestID: "req-fuzz"})
		err := w.Handle(inv, events.SQSMessage{MessageId: "msg-1", Body: raw, Attributes: map[string]string{"MessageGroupId": "job-42"}})
		if _, decodeErr := outbox.DecodeCommand(raw); decodeErr != nil {
			require.True(t, fifo.IsPermanent(err), "a body the decoder refuses is permanent: %v", err)
			return
		}
		require.False(t, errors.Is(err, jobs.ErrInvalid), "the store refused what the decoder accepted: %v", err)
	})
}
