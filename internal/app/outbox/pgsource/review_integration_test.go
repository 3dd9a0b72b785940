//go:build integration

package pgsource_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/outbox"
	"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource"
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
