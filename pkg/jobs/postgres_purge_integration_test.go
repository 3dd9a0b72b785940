//go:build integration

package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// PurgeExpired is PostgreSQL's stand-in for DynamoDB's TTL: it deletes
// rows whose expires_at is strictly before now (at it, a row stays), never
// a job whose outbox rows the relay has not published, at most limit rows
// a call, jobs first and then intents.
func TestPostgresPurgeExpiredDeletesWhatExpiredStrictlyBeforeNow(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)

	store := newPostgresStore(t, b.db, jobs.Config{Now: b.clock.Now, Retention: time.Hour, IntentRetention: 10 * time.Hour})
	b.store = store
	end := func(id string) jobs.Job {
		t.Helper()
		j := b.running(t, id)
		f, err := store.Fail(t.Context(), jobs.FailRequest{JobID: id, AttemptID: "attempt-a", Generation: j.Generation, Version: j.Version,
			Failure: jobs.Failure{Code: "source_gone"}})
		require.NoError(t, err)
		return f
	}
	a := end("job-a")
	b.clock.Advance(time.Second)
	bj := end("job-b")
	require.Equal(t, a.ExpiresAt.Add(time.Second), bj.ExpiresAt)
	_, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-c", IntentID: "intent-job-c", Tenant: "t-1"})
	require.NoError(t, err)

	purge := func(now time.Time, limit int) int {
		t.Helper()
		n, err := store.PurgeExpired(t.Context(), now, limit)
		require.NoError(t, err)
		return n
	}
	_, err = store.PurgeExpired(t.Context(), b.clock.Now(), 0)
	require.ErrorIs(t, err, jobs.ErrInvalid)

	require.Zero(t, purge(bj.ExpiresAt.Add(time.Minute), 10), "both expired, but their outbox rows are unpublished")
	_, err = b.raw.ExecContext(t.Context(), `DELETE FROM job_outbox`) // the relay published them
	require.NoError(t, err)

	require.Zero(t, purge(a.ExpiresAt, 10), "expires_at == now: not yet")
	require.Equal(t, 1, purge(a.ExpiresAt.Add(time.Second), 10), "job-a only: job-b expires at that now")
	_, err = store.Get(t.Context(), "job-a")
	require.ErrorIs(t, err, jobs.ErrNotFound)
	_, err = store.Get(t.Context(), "job-b")
	require.NoError(t, err)

	// Past every intent's expiry: job-b and the three intents, 3 a call.
	later := b.clock.Now().Add(11 * time.Hour)
	require.Equal(t, 3, purge(later, 3))
	require.Equal(t, 1, purge(later, 3))
	require.Zero(t, purge(later, 3))
	_, err = store.Get(t.Context(), "job-b")
	require.ErrorIs(t, err, jobs.ErrNotFound)
	c, err := store.Get(t.Context(), "job-c")
	require.NoError(t, err, "a live job never expires")
	var intents int
	require.NoError(t, b.raw.QueryRowContext(t.Context(), `SELECT count(*) FROM job_intents`).Scan(&intents))
	require.Zero(t, intents)
	// The live job's item answers for its intent once the intent's row is gone.
	res, err := store.Create(t.Context(), jobs.CreateRequest{JobID: "job-c", IntentID: "intent-job-c", Tenant: "t-1"})
	require.NoError(t, err)
	require.True(t, res.Existing)
	require.Equal(t, c, res.Job)
}
