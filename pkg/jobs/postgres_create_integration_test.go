//go:build integration

package jobs_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestPostgresCreateKeepsTheErrorOfAKeyTakenWithoutItsJob: a unique key
// the statement meets whose job is not there (here an outbox row left of
// a job deleted by hand, the one such key) is not a job deleted meanwhile
// for ever: once Create gives up, its error still carries the server's
// (SQLSTATE 23505, the constraint named), and nothing is written.
func TestPostgresCreateKeepsTheErrorOfAKeyTakenWithoutItsJob(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	ctx := t.Context()
	_, err := b.raw.ExecContext(ctx, `INSERT INTO job_outbox (job_id, version, image, created_at) VALUES ('job-42', 0, '{}', 0)`)
	require.NoError(t, err)
	_, err = b.store.Create(ctx, jobs.CreateRequest{JobID: "job-42", IntentID: "intent-7", Tenant: "t-1"})
	require.Error(t, err)
	var pg interface{ SQLState() string }
	require.True(t, errors.As(err, &pg), "the server's error is kept: %v", err)
	require.Equal(t, "23505", pg.SQLState())
	require.ErrorContains(t, err, "job_outbox_pkey")
	_, err = b.store.Get(ctx, "job-42")
	require.ErrorIs(t, err, jobs.ErrNotFound)
	var intents int
	require.NoError(t, b.raw.QueryRowContext(ctx, `SELECT count(*) FROM job_intents`).Scan(&intents))
	require.Zero(t, intents)
}
