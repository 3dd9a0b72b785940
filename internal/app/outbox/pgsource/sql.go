package pgsource

import (
	"context"
	"database/sql"
	"fmt"
)

// lockSeed keys the per-job advisory locks: hashtextextended(job_id,
// lockSeed). Another seed is another set of locks, so every relay of a
// database must use this one. Two jobs whose keys collide (about n²/2^65
// for n jobs with rows at once) lose nothing: a relay holding one skips
// the other as held until its pass ends, and one pass may hold both (the
// lock is re-entrant within a transaction). A key that collides with
// pgmigrate's lock only skips that job while a migration runs.
const lockSeed = 0x6a6f625f6f757462 // "job_outb"

// lockQuery takes, in one round trip, the lock of each of the oldest jobs
// with rows (oldest by their first row) not in $1, at most $2 of them,
// and says which it got. pg_try_advisory_xact_lock never waits: a job
// another relay holds is skipped, and the lock is released by the
// transaction's end, commit or rollback, or by the connection's loss.
// The jobs are chosen in a MATERIALIZED CTE so that the lock function
// runs exactly once for each of them (never for a row a later filter or
// limit would drop, which would hold a lock nobody publishes under).
const lockQuery = `
WITH candidate AS MATERIALIZED (
	SELECT job_id FROM job_outbox
	WHERE job_id <> ALL($1::text[])
	GROUP BY job_id
	ORDER BY min(created_at), job_id
	LIMIT $2
)
SELECT job_id, pg_try_advisory_xact_lock(hashtextextended(job_id, $3)) FROM candidate`

// lockJobs locks up to n jobs with rows, leaving out skip. A page whose
// jobs other relays hold is skipped for the next page, so two relays
// started together spread over the outbox instead of one finding
// nothing. held counts the jobs skipped that way.
func lockJobs(ctx context.Context, tx *sql.Tx, skip []string, n int) (locked []string, held int, err error) {
	seen := append([]string{}, skip...)
	for len(locked) < n {
		want := n - len(locked)
		rows, err := tx.QueryContext(ctx, lockQuery, seen, want, int64(lockSeed))
		if err != nil {
			return locked, held, fmt.Errorf("pgsource: lock jobs: %w", err)
		}
		got := 0
		for rows.Next() {
			var id string
			var ok bool
			if err := rows.Scan(&id, &ok); err != nil {
				_ = rows.Close()
				return locked, held, fmt.Errorf("pgsource: lock jobs: %w", err)
			}
			got++
			seen = append(seen, id)
			if ok {
				locked = append(locked, id)
			} else {
				held++
			}
		}
		if err := rows.Close(); err != nil {
			return locked, held, fmt.Errorf("pgsource: lock jobs: %w", err)
		}
		if err := rows.Err(); err != nil {
			return locked, held, fmt.Errorf("pgsource: lock jobs: %w", err)
		}
		if got < want {
			break // no more jobs
		}
	}
	return locked, held, nil
}

// readQuery reads the first $2 rows of each job in $1, in job and version
// order, at most $3 in all.
const readQuery = `
SELECT job_id, version, image, prev_image FROM (
	SELECT job_id, version, image, prev_image,
		row_number() OVER (PARTITION BY job_id ORDER BY version) AS n
	FROM job_outbox WHERE job_id = ANY($1::text[])
) r
WHERE n <= $2
ORDER BY job_id, version
LIMIT $3`

// readRows reads the rows of the locked jobs.
func readRows(ctx context.Context, tx *sql.Tx, jobs []string, perJob, limit int) ([]row, error) {
	rs, err := tx.QueryContext(ctx, readQuery, jobs, perJob, limit)
	if err != nil {
		return nil, fmt.Errorf("pgsource: read rows: %w", err)
	}
	defer func() { _ = rs.Close() }()
	var out []row
	for rs.Next() {
		var rw row
		if err := rs.Scan(&rw.jobID, &rw.version, &rw.image, &rw.prevImage); err != nil {
			return nil, fmt.Errorf("pgsource: read rows: %w", err)
		}
		out = append(out, rw)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("pgsource: read rows: %w", err)
	}
	return out, nil
}

// published is the rows a pass published: exactly those it deletes.
type published struct {
	jobs     []string
	versions []int64
}

func (p *published) add(job string, version int64) {
	p.jobs = append(p.jobs, job)
	p.versions = append(p.versions, version)
}

// deleteQuery deletes exactly the rows named, never "the job's rows up to
// a version": a row committed while the pass held the lock is the next
// pass's to publish.
const deleteQuery = `
DELETE FROM job_outbox o
USING unnest($1::text[], $2::bigint[]) AS p(job_id, version)
WHERE o.job_id = p.job_id AND o.version = p.version`

// delete removes the published rows, or fails wrapping ErrNotHeld if any
// was already gone.
func (p *published) delete(ctx context.Context, tx *sql.Tx) error {
	if len(p.jobs) == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, deleteQuery, p.jobs, p.versions)
	if err != nil {
		return fmt.Errorf("pgsource: delete published rows: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("pgsource: delete published rows: %w", err)
	}
	if n != int64(len(p.jobs)) {
		return fmt.Errorf("%w: %d of %d rows left to delete", ErrNotHeld, n, len(p.jobs))
	}
	return nil
}
