package jobstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// testTextEveryStoreKeeps: the free text of a request (a failure's
// message, a cancel's or a nudge's reason, a spec's keys and values) is
// kept exactly when it is UTF-8 without NUL, whatever else it holds, and
// refused as invalid, with nothing written, when it is not: PostgreSQL's
// jsonb keeps no NUL, and JSON (DynamoDB's wire format too) no byte that is
// not UTF-8, which an encoder would replace without a word.
func testTextEveryStoreKeeps(t *testing.T, newStore NewStore) {
	b := setup(t, newStore)
	const kept = "tab\there, line\nbreak, \u2028, \U0001F642, \\u0000 as text, \x7f"
	for name, bad := range map[string]string{"nul": "a\x00b", "not-utf8": "a\xffb"} {
		t.Run(name, func(t *testing.T) {
			_, err := b.store.Create(b.ctx, jobs.CreateRequest{IntentID: "spec-value-" + name, Tenant: b.tenant,
				Spec: map[string]string{"k": bad}})
			require.ErrorIs(t, err, jobs.ErrInvalid, "spec value")
			_, err = b.store.Create(b.ctx, jobs.CreateRequest{IntentID: "spec-key-" + name, Tenant: b.tenant,
				Spec: map[string]string{bad: "v"}})
			require.ErrorIs(t, err, jobs.ErrInvalid, "spec key")
			_, err = b.store.Get(b.ctx, jobs.DeriveJobID(b.tenant, "spec-value-"+name))
			require.ErrorIs(t, err, jobs.ErrNotFound, "nothing created")

			j := b.create(t, "job-"+name)
			running := b.claim(t, j.ID, "a", time.Minute)
			_, err = b.store.Fail(b.ctx, jobs.FailRequest{JobID: j.ID, AttemptID: "a", Generation: running.Generation,
				Version: running.Version, Failure: jobs.Failure{Code: "x", Message: bad}})
			require.ErrorIs(t, err, jobs.ErrInvalid, "failure message")
			_, err = b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: j.ID, Reason: bad})
			require.ErrorIs(t, err, jobs.ErrInvalid, "cancel reason")
			_, err = b.store.Nudge(b.ctx, jobs.NudgeRequest{JobID: j.ID, Generation: running.Generation,
				Version: running.Version, Reason: bad})
			require.ErrorIs(t, err, jobs.ErrInvalid, "nudge reason")
			b.requireUnchanged(t, running)
		})
	}
	res, err := b.store.Create(b.ctx, jobs.CreateRequest{IntentID: "kept-" + b.suffix, Tenant: b.tenant,
		Spec: map[string]string{kept: kept}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{kept: kept}, b.get(t, res.Job.ID).Spec)
	running := b.claim(t, res.Job.ID, "a", time.Minute)
	failed, err := b.store.Fail(b.ctx, jobs.FailRequest{JobID: running.ID, AttemptID: "a", Generation: running.Generation,
		Version: running.Version, Failure: jobs.Failure{Code: "x", Message: kept}})
	require.NoError(t, err)
	require.Equal(t, kept, failed.Error.Message)
	require.Equal(t, failed, b.get(t, running.ID))
	other := b.create(t, "job-cancelled")
	cancelled, err := b.store.Cancel(b.ctx, jobs.CancelRequest{JobID: other.ID, Reason: kept})
	require.NoError(t, err)
	require.Equal(t, kept, cancelled.Error.Message)
	require.Equal(t, cancelled, b.get(t, other.ID))
}
