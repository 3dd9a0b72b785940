//go:build integration

package sweeper_test

import (
	"database/sql"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/testenv"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// purgeBundle is a sweeper on PostgreSQL's jobs and quarantine, purging
// both, with a job and a released group of tombstones (one message, one
// hold) whose expires_at are before, at and after the sweep's now.
type purgeBundle struct {
	db    *sql.DB
	now   time.Time
	quar  *quarantine.PostgresStore
	logs  *testenv.Buffer
	sweep func(limit int) sweeper.Report
}

const purgeQueue = "commands.fifo"

func newPurgeBundle(t *testing.T) *purgeBundle {
	t.Helper()
	ctx := t.Context()
	db := pgtest.DB(t)
	require.NoError(t, jobs.MigratePostgres(ctx, db))
	require.NoError(t, quarantine.MigratePostgres(ctx, db))
	clock := jobstest.NewClock(jobstest.Start)
	store, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	quar, err := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: db})
	require.NoError(t, err)
	b := &purgeBundle{db: db, now: clock.Now().Add(time.Minute).Truncate(time.Second), quar: quar, logs: &testenv.Buffer{}}
	for name, off := range map[string]int64{"expired": -1, "bound": 0, "live": 1} {
		_, err := store.Create(ctx, jobs.CreateRequest{JobID: name, IntentID: "intent-" + name, Tenant: "t-1"})
		require.NoError(t, err)
		seq, err := quarantine.SeqKey("1")
		require.NoError(t, err)
		_, err = quar.Park(ctx, purgeQueue, name, []quarantine.Parked{{Sequence: seq, MessageID: "m-" + name, Body: "b"}}, true, "boom", clock.Now())
		require.NoError(t, err)
		_, err = quar.Discard(ctx, purgeQueue, name, seq, clock.Now())
		require.NoError(t, err)
		at := b.now.Unix() + off
		for _, q := range []string{
			`UPDATE jobs SET expires_at = $2 WHERE job_id = $1`,
			`UPDATE quarantine_messages SET expires_at = $2 WHERE group_id = $1::bytea`,
			`UPDATE quarantine_holds SET expires_at = $2 WHERE group_id = $1::bytea`,
		} {
			res, err := db.ExecContext(ctx, q, name, at)
			require.NoError(t, err)
			n, err := res.RowsAffected()
			require.NoError(t, err)
			require.Equal(t, int64(1), n, q)
		}
	}
	// The relay has published every transition, and no intent expires:
	// what is purged is the job and the tombstones.
	_, err = db.ExecContext(ctx, `DELETE FROM job_outbox; UPDATE job_intents SET expires_at = 1e12`)
	require.NoError(t, err)
	candidates, err := candidate.New(candidate.Config{Client: newBucket(t, clock.Now), Bucket: testBucket, SpoolDir: t.TempDir()})
	require.NoError(t, err)
	b.sweep = func(limit int) sweeper.Report {
		t.Helper()
		sw, err := sweeper.New(sweeper.Config{
			Jobs: store, Candidates: candidates, Now: func() time.Time { return b.now },
			Purgers: []sweeper.Purger{store, quar}, PurgeLimit: limit, FunctionName: "sweeper",
			Logger: slog.New(slog.NewJSONHandler(b.logs, nil)),
		})
		require.NoError(t, err)
		r, err := sw.Run(ctx, sweeper.Options{})
		require.NoError(t, err)
		return r
	}
	return b
}

// left is which of the three jobs, tombstone messages and holds are left.
func (b *purgeBundle) left(t *testing.T) (jobIDs, messages, holds []string) {
	t.Helper()
	q := func(sql string) []string {
		rows, err := b.db.QueryContext(t.Context(), sql)
		require.NoError(t, err)
		defer func() { _ = rows.Close() }()
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	return q(`SELECT job_id FROM jobs ORDER BY 1`),
		q(`SELECT convert_from(group_id, 'UTF8') FROM quarantine_messages ORDER BY 1`),
		q(`SELECT convert_from(group_id, 'UTF8') FROM quarantine_holds ORDER BY 1`)
}

// TestASweepPurgesPostgresExpiredRows: a run deletes the job and the
// tombstones (message and released hold) whose expires_at is before its
// now, keeps those expiring at now (DynamoDB's TTL deletes only what
// expired strictly before) and after it, reports the count and its
// metric.
func TestASweepPurgesPostgresExpiredRows(t *testing.T) {
	t.Parallel()
	b := newPurgeBundle(t)
	r := b.sweep(0)
	require.Equal(t, 3, r.Purged, "the expired job, message and hold")
	jobIDs, messages, holds := b.left(t)
	require.Equal(t, []string{"bound", "live"}, jobIDs)
	require.Equal(t, []string{"bound", "live"}, messages)
	require.Equal(t, []string{"bound", "live"}, holds)
	require.Contains(t, b.logs.String(), `"PurgedRows":3`)
	require.Zero(t, b.sweep(0).Purged, "nothing more has expired")
}

// TestASweepPurgesAtMostPurgeLimitRows: a run deletes exactly PurgeLimit
// rows in all when more have expired, the next one the rest.
func TestASweepPurgesAtMostPurgeLimitRows(t *testing.T) {
	t.Parallel()
	b := newPurgeBundle(t)
	b.now = b.now.Add(time.Second) // "bound" has expired too: six rows
	// Three: the two jobs, then one tombstone, the limit's rest.
	require.Equal(t, 3, b.sweep(3).Purged, "the limit, over both stores")
	jobIDs, messages, holds := b.left(t)
	require.Equal(t, []string{"live"}, jobIDs)
	require.Equal(t, 6, len(jobIDs)+len(messages)+len(holds), "nine rows, three purged")
	require.Equal(t, 3, b.sweep(5).Purged, "the rest, under the limit")
	jobIDs, messages, holds = b.left(t)
	require.Equal(t, []string{"live"}, jobIDs)
	require.Equal(t, []string{"live"}, messages)
	require.Equal(t, []string{"live"}, holds)
}
