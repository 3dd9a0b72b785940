//go:build integration

package pgsource_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource/nudge"
)

// A job's rows deleted by something that does not take the job's lock
// while a pass publishes them: the pass's delete finds fewer rows than it
// published, so it fails with ErrNotHeld and rolls back, and the row it
// still held (v1) is published again by the next Drain rather than
// silently dropped.
func TestAPassWhoseRowsAnotherDeletedFailsWithErrNotHeld(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 1)
	b.sink.after = func(ctx context.Context, msgs []outbox.Message) {
		if msgs[0].Version == 0 {
			_, err := b.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM job_outbox WHERE job_id = 'job-1' AND version = 0`)
			require.NoError(t, err)
		}
	}
	_, err := b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.ErrorIs(t, err, pgsource.ErrNotHeld)
	require.Equal(t, 1, b.rows(t), "v1 not deleted: the pass rolled back")
	b.sink.after = nil
	_, err = b.relay(t, pgsource.Config{}).Drain(t.Context())
	require.NoError(t, err)
	require.Zero(t, b.rows(t))
	require.Equal(t, []string{"job-1/v0", "job-1/v1", "job-1/v1"}, b.sink.byJob()["job-1"])
}

// A row whose previous image is not an earlier version of its job (here
// its own version's) is refused, not published as a transition from it.
func TestARowHoldingALaterPreviousImageIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 2)
	_, err := b.db.ExecContext(t.Context(), `UPDATE job_outbox SET prev_image = image WHERE job_id = 'job-1' AND version = 1`)
	require.NoError(t, err)
	rep, err := b.relay(t, pgsource.Config{}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, 1, rep.Failed)
	require.Equal(t, map[string][]string{"job-1": {"job-1/v0"}}, b.sink.byJob())
	require.Equal(t, 2, b.rows(t))
}

// A job that a pass locked but did not read because the read's limit
// (what MaxRows leaves) was reached is not a job whose rows were gone: it
// stays in the run, which publishes up to MaxRows. Here job-000's
// messages are refused; the first pass reads its two rows and job-001's
// first, so job-002 is locked and not read; the run must still publish
// job-001's second row and job-002's first (3 rows, its bound), not stop
// with job-002's rows left until the next trigger.
func TestAJobLockedButNotReadUnderTheBoundStaysInTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := jobIDs("job", 3)
	for _, id := range ids {
		b.create(t, id, 1)
	}
	b.sink.refuse = func(m outbox.Message) error {
		if m.JobID == "job-000" {
			return errors.New("throttled")
		}
		return nil
	}
	rep, err := b.relay(t, pgsource.Config{Jobs: 3, RowsPerJob: 2, MaxRows: 3}).Drain(bounded(t))
	require.NoError(t, err)
	require.Equal(t, 3, rep.Rows)
	require.Equal(t, pgsource.StopBound, rep.Stop)
	require.Equal(t, map[string][]string{"job-001": {"job-001/v0", "job-001/v1"}, "job-002": {"job-002/v0"}}, b.sink.byJob())
}

// A nudge standing for exactly one commit (the bound: at least one) is a
// trigger: the relay drains for it.
func TestHandleDrainsForANudgeOfOneCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.create(t, "job-1", 0)
	event, err := json.Marshal(nudge.Payload{Type: nudge.PayloadType, FirstCommit: time.Now(), Commits: 1})
	require.NoError(t, err)
	rep, err := b.relay(t, pgsource.Config{}).Handle(t.Context(), event)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Rows)
	require.Zero(t, b.rows(t))
}
