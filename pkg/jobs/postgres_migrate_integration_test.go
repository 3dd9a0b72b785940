//go:build integration

package jobs_test

import (
	"database/sql"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// On an empty database MigratePostgres applies every version; applied
// again it applies nothing and the schema stays.
func TestPostgresMigrationsOnAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	require.NoError(t, jobs.MigratePostgres(t.Context(), db))
	cur, err := pgmigrate.Current(t.Context(), db)
	require.NoError(t, err)
	ms, err := jobs.PostgresMigrations().Read()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ms), 2, "at least two versions: the previous version's test needs one")
	require.Equal(t, map[string]int{"jobs": len(ms)}, cur)
	for _, index := range []string{"jobs_live", "jobs_finished", "jobs_expiry", "job_intents_expiry"} {
		var n int
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_indexes WHERE indexname = $1`, index).Scan(&n))
		require.Equal(t, 1, n, index)
	}
}

// firstVersions is the job store's first n migrations: the schema a
// deployment of an earlier version holds.
func firstVersions(t *testing.T, n int) pgmigrate.Set {
	t.Helper()
	ms, err := jobs.PostgresMigrations().Read()
	require.NoError(t, err)
	require.Less(t, n, len(ms))
	prev := fstest.MapFS{}
	for _, m := range ms[:n] {
		prev[m.Name] = &fstest.MapFile{Data: []byte(m.SQL), Mode: fs.ModePerm}
	}
	return pgmigrate.Set{Component: "jobs", FS: prev}
}

// execAll runs statements on db.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		_, err := db.ExecContext(t.Context(), s)
		require.NoError(t, err, s)
	}
}

// On an earlier version's schema holding rows (a live job, a final job,
// the intent of each, an unpublished outbox row), MigratePostgres applies
// the rest: the rows survive as they were, the final job joins the
// finished listing and the live one the live listing, and the store works
// on them. From the previous version (0001 and 0002: 0003's history
// column is added to old rows) and from the first (0002's finished_key
// and indexes are built on old rows too).
func TestPostgresMigrationsOnThePreviousVersionWithRows(t *testing.T) {
	t.Parallel()
	ms, err := jobs.PostgresMigrations().Read()
	require.NoError(t, err)
	for _, n := range []int{len(ms) - 1, 1} {
		t.Run(fmt.Sprintf("from %s", ms[n-1].Name), func(t *testing.T) {
			t.Parallel()
			migrateRowsFrom(t, firstVersions(t, n))
		})
	}
}

func migrateRowsFrom(t *testing.T, earlier pgmigrate.Set) {
	t.Helper()
	db := pgtest.DB(t)
	ctx := t.Context()
	applied, err := pgmigrate.Apply(ctx, db, earlier)
	require.NoError(t, err)
	require.NotEmpty(t, applied)
	const at = int64(1_793_782_800_000) // epoch ms
	execAll(t, db,
		`INSERT INTO jobs (job_id, intent_id, tenant, status, generation, version, progress, outbox, spec, created_at, updated_at)
		 VALUES ('job-live', 'intent-live', 't-1', 'pending', 0, 0, 0, '{"id": "job-live/v0", "type": "job.run", "version": 0}',
		         '{"source": "articles"}', 1793782800000, 1793782800000)`,
		`INSERT INTO jobs (job_id, intent_id, tenant, status, generation, version, lease_owner, lease_expires_at, progress, outbox,
		                   error, created_at, updated_at, expires_at)
		 VALUES ('job-done', 'intent-done', 't-1', 'failed', 1, 2, 'attempt-a', 1793782860000, 0,
		         '{"id": "job-done/v2", "type": "job.failed", "version": 2, "payload": {"attempt_id": "attempt-a", "code": "source_gone"}}',
		         '{"code": "source_gone", "message": ""}', 1793782800000, 1793782801000, 1796374801)`,
		`INSERT INTO job_intents (tenant, intent_id, job_id, spec_sha256, created_at, expires_at)
		 SELECT tenant, intent_id, job_id, '`+jobs.SpecSHA256(map[string]string{"source": "articles"})+`', created_at, created_at / 1000 + 2592000
		 FROM jobs WHERE job_id = 'job-live'`,
		`INSERT INTO job_outbox (job_id, version, image, prev_image, created_at)
		 SELECT job_id, version, to_jsonb(j), NULL, created_at FROM jobs j WHERE job_id = 'job-live'`,
	)
	before := map[string][]byte{}
	for _, id := range []string{"job-live", "job-done"} {
		var img []byte
		require.NoError(t, db.QueryRowContext(ctx, `SELECT to_jsonb(j) FROM jobs j WHERE job_id = $1`, id).Scan(&img))
		before[id] = img
	}

	require.NoError(t, jobs.MigratePostgres(ctx, db))

	clock := jobstest.NewClock(time.UnixMilli(at).Add(time.Hour))
	store, err := jobs.NewPostgresStore(jobs.PostgresConfig{DB: db, Config: jobs.Config{Now: clock.Now}})
	require.NoError(t, err)
	for id, img := range before {
		want, err := jobitem.FromPostgresImage(img)
		require.NoError(t, err)
		got, err := store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s survives the migration", id)
	}
	live, err := store.Live(ctx, clock.Now(), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"job-live"}, live)
	done, err := store.Finished(ctx, "", clock.Now(), 10)
	require.NoError(t, err)
	require.Equal(t, []jobs.FinishedJob{{ID: "job-done", Key: jobs.FinishedKey("job-done", time.UnixMilli(at+1000))}}, done)

	res, err := store.Create(ctx, jobs.CreateRequest{IntentID: "intent-live", Tenant: "t-1", JobID: "job-live",
		Spec: map[string]string{"source": "articles"}})
	require.NoError(t, err)
	require.True(t, res.Existing, "the intent's row answers for it")
	claimed, err := store.Claim(ctx, jobs.ClaimRequest{JobID: "job-live", AttemptID: "attempt-a", LeaseUntil: clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, int64(1), claimed.Version)
	require.Equal(t, []jobs.Transition{{Version: 1, Status: jobs.StatusRunning, Generation: 1,
		At: time.UnixMilli(clock.Now().UnixMilli()).UTC(), Event: jobs.EventStarted}}, claimed.History,
		"a row written before the history gets one from its next transition")
	var rows int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM job_outbox WHERE job_id = 'job-live'`).Scan(&rows))
	require.Equal(t, 2, rows, "the old version's outbox row and the claim's")
}
