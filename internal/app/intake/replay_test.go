package intake_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/intake"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestAReplayOfAnAcceptedRequestIsAnsweredWithItsJob: a request accepted
// before its spec's check changed (a "task" of its own, from before the
// key named the job's task) is replayed with the same Idempotency-Key and
// spec: it gets its job, 200, as any replay does, not the 400 the check now
// gives a new request; nothing is written. The same key with another
// spec, a fresh key, another tenant's key and a job of another intent at
// the key's id are refused as before.
func TestAReplayOfAnAcceptedRequestIsAnsweredWithItsJob(t *testing.T) {
	t.Parallel()
	const body = `{"spec":{"task":"nightly","page_size":"5"}}`
	b := setup(t) // no check: what intake was before tasks had names
	first := b.do(t, post("t-1", "intent-1", body))
	require.Equal(t, 202, first.StatusCode, first.Body)
	var created intake.CreatedView
	require.NoError(t, json.Unmarshal([]byte(first.Body), &created))

	checked, err := intake.New(intake.Config{Store: b.store, Presigner: b.presigner, Now: b.clock.Now,
		ValidateSpec: func(spec map[string]string) error {
			if spec["task"] != "" {
				return errors.New(`task "nightly" is unknown`)
			}
			return nil
		}})
	require.NoError(t, err)
	b.handler = checked
	writes := b.store.writes.Load()

	replay := b.do(t, post("t-1", "intent-1", body))
	require.Equal(t, 200, replay.StatusCode, replay.Body)
	var again intake.CreatedView
	require.NoError(t, json.Unmarshal([]byte(replay.Body), &again))
	require.Equal(t, created, again)
	require.Equal(t, "/jobs/"+created.JobID, replay.Headers["Location"])
	require.Equal(t, writes, b.store.writes.Load(), "a replay writes nothing")

	// Another tenant's job where t-2's intent would put its own (the
	// derived id names the tenant, so only a job created with an explicit
	// id can be there): not t-2's replay.
	b.seed(t, jobs.DeriveJobID("t-2", "intent-3"), "t-1", "intent-3", map[string]string{"task": "nightly", "page_size": "5"})
	// The tenant's job, with the same spec, at the id t-1's intent-4 would
	// get, but of another intent (created with an explicit id): not
	// intent-4's replay, as jobs' Create would not take it for one either.
	b.seed(t, jobs.DeriveJobID("t-1", "intent-4"), "t-1", "intent-5", map[string]string{"task": "nightly", "page_size": "5"})
	writes = b.store.writes.Load()
	for _, tc := range []struct{ tenant, key, body string }{
		{"t-1", "intent-1", `{"spec":{"task":"nightly","page_size":"6"}}`}, // another spec
		{"t-1", "intent-2", body}, // a new request
		{"t-2", "intent-1", body}, // another tenant's intent
		{"t-2", "intent-3", body}, // a job at its id, of another tenant
		{"t-1", "intent-4", body}, // a job at its id, of another intent
	} {
		resp := b.do(t, post(tc.tenant, tc.key, tc.body))
		require.Equal(t, 400, resp.StatusCode, "%+v: %s", tc, resp.Body)
		require.Equal(t, intake.CodeInvalidSpec, errorOf(t, resp).Code)
	}
	require.Equal(t, writes, b.store.writes.Load(), "a refused spec writes nothing")
	job, err := b.memory.Get(t.Context(), created.JobID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, job.Status)
}

// A refused spec whose replay cannot be looked up, the store failing, is
// answered as the store's failure (retryable), not as a refusal the
// replay may not deserve.
func TestARefusedSpecWhoseReplayCannotBeLookedUp(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *intake.Config) {
		c.ValidateSpec = func(map[string]string) error { return errors.New("never") }
	})
	b.store.Store = failingGet{b.memory}
	resp := b.do(t, post("t-1", "intent-1", `{"spec":{}}`))
	require.Equal(t, 500, resp.StatusCode, resp.Body)
	require.Equal(t, intake.CodeInternal, errorOf(t, resp).Code)
	require.Zero(t, b.store.writes.Load())
}

type failingGet struct{ jobs.Store }

func (failingGet) Get(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, errors.New("injected: the table is unreachable")
}
