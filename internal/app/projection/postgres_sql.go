package projection

import (
	"strings"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The PostgresStore's statements. Each is a constant text with
// parameters (prepared once per connection by the driver's statement
// cache): the snapshot's ten ($1 to $10), and for a move of the cursor
// six more ($11 to $16).
var (
	// applySQL is Apply's statement: the view on its version gate
	// (viewOlder), whatever the cursor does.
	applySQL = moveStatement(viewOlder, false, false)
	// recoverSQL is Recover's when the cursor moves, by whether the
	// snapshot is final: the view (viewRewrite) only if the cursor moved.
	recoverSQL = map[bool]string{false: moveStatement(viewRewrite, false, true), true: moveStatement(viewRewrite, true, true)}
	// viewSQL is Recover's when the cursor is in step already: the view
	// alone (viewRecover).
	viewSQL = map[bool]string{false: viewStatement(viewRecover, false), true: viewStatement(viewRecover, true)}
	// skipSQL is Apply's for an event that adds nothing: the view alone,
	// on its version gate and unless it is final (viewSkipped), returning
	// the view held before.
	skipSQL = `WITH p AS (` + snapshotParams + `),
	prior AS (SELECT version, status FROM projection_views WHERE job_id = $1),
	viewed AS (` + viewUpsert("p", viewWhere(viewSkipped, false)) + `)
	SELECT EXISTS (SELECT FROM viewed), (SELECT version FROM prior), (SELECT status FROM prior)`
)

// snapshotParams names the snapshot's parameters, typed, as the columns of
// the one row of the CTE p.
const snapshotParams = `SELECT $1::text AS job_id, $2::text AS tenant, $3::text AS status, $4::bigint AS generation,
		$5::bigint AS version, $6::bigint AS progress, $7::text AS result_key, $8::bigint AS result_size,
		$9::text AS error_code, $10::bigint AS updated_at`

// moveParams adds a move's: the cursor it moves from (prev_version NULL:
// any version before the snapshot's; prev_status NULL: any status but a
// final one), what it adds to the totals and the shard of the totals it
// adds to.
const moveParams = snapshotParams + `,
		$11::bigint AS prev_version, $12::bigint AS prev_progress, $13::text AS prev_status,
		$14::bigint AS add_processed, $15::bigint AS add_completed, $16::integer AS shard`

// moveStatement is a statement that moves the job's cursor from prev to
// the snapshot and, if it moved, adds to the tenant's totals, and writes
// the view on condition cond (only if the cursor moved, when gated). Its
// one row says whether the cursor moved (counted), whether the view was
// written, and the cursor in the statement's snapshot (NULLs: none).
//
// The cursor moves by an UPDATE conditioned on prev, which under Read
// Committed is checked again on the newest version of the row once the
// row is locked; from no cursor (prev version 0), by an INSERT that does
// nothing on a conflict (it waits for a concurrent insert and finds it).
// The snapshot's cursor that the last SELECT returns may be older than
// the row the UPDATE checked: a refusal whose returned cursor the event
// follows after all is a cursor that moved meanwhile (Apply runs again).
//
// The sub-statements lock the cursor's row, then the view's, then the
// totals' (the main query reads counted before viewed; added, which
// nothing reads, runs last), so Apply and Recover take the rows of a job
// in the same order and hold the tenant's totals, which all its jobs
// share, for the shortest time. PostgreSQL does not promise that order
// for sub-statements; a deadlock it detects is retried (retryable).
func moveStatement(cond viewCond, final, gated bool) string {
	from := "p"
	if gated {
		from = "p WHERE EXISTS (SELECT FROM counted)"
	}
	return `WITH p AS (` + moveParams + `),
	moved AS (
		UPDATE projection_cursors AS c SET version = p.version, progress = p.progress, status = p.status
		FROM p
		WHERE c.tenant = p.tenant AND c.job_id = p.job_id AND c.progress = p.prev_progress
			AND (c.version = p.prev_version OR p.prev_version IS NULL AND c.version < p.version)
			AND (c.status = p.prev_status OR p.prev_status IS NULL AND c.status NOT IN (` + finalStatuses + `))
		RETURNING 1
	),
	created AS (
		INSERT INTO projection_cursors (tenant, job_id, version, progress, status)
		SELECT tenant, job_id, version, progress, status FROM p WHERE (prev_version = 0 OR prev_version IS NULL) AND prev_progress = 0
		ON CONFLICT (tenant, job_id) DO NOTHING
		RETURNING 1
	),
	counted AS (SELECT 1 FROM moved UNION ALL SELECT 1 FROM created),
	viewed AS (` + viewUpsert(from, viewWhere(cond, final)) + `),
	added AS (
		INSERT INTO projection_totals AS t (tenant, shard, processed, completed)
		SELECT p.tenant, p.shard, p.add_processed, p.add_completed FROM p, counted
		WHERE p.add_processed <> 0 OR p.add_completed <> 0
		ON CONFLICT (tenant, shard) DO UPDATE SET processed = t.processed + excluded.processed, completed = t.completed + excluded.completed
	)
	SELECT EXISTS (SELECT FROM counted), EXISTS (SELECT FROM viewed), c.version, c.progress, c.status
	FROM p LEFT JOIN projection_cursors AS c ON c.tenant = p.tenant AND c.job_id = p.job_id`
}

// viewStatement writes the view alone, on condition cond (an event's
// viewOlder, or a recovery's viewRecover), and returns whether it did.
func viewStatement(cond viewCond, final bool) string {
	return `WITH p AS (` + snapshotParams + `),
	viewed AS (` + viewUpsert("p", viewWhere(cond, final)) + `)
	SELECT EXISTS (SELECT FROM viewed)`
}

// viewUpsert writes the snapshot of the row that from yields into its
// view, on condition where when the view exists ("": always). Every
// column is set, NULLs included, so the row is exactly the snapshot.
func viewUpsert(from, where string) string {
	s := `INSERT INTO projection_views AS held
			(job_id, tenant, status, generation, version, progress, result_key, result_size, error_code, updated_at)
		SELECT job_id, tenant, status, generation, version, progress, result_key, result_size, error_code, updated_at
		FROM ` + from + `
		ON CONFLICT (job_id) DO UPDATE SET tenant = excluded.tenant, status = excluded.status,
			generation = excluded.generation, version = excluded.version, progress = excluded.progress,
			result_key = excluded.result_key, result_size = excluded.result_size, error_code = excluded.error_code,
			updated_at = excluded.updated_at`
	if where != "" {
		s += `
		WHERE ` + where
	}
	return s + `
		RETURNING 1`
}

// viewDiffers is true when the held view's content other than its version
// is not the snapshot's (IS DISTINCT FROM: NULLs, the attributes a
// snapshot lacks, compare as values).
const viewDiffers = `(held.tenant, held.status, held.generation, held.progress, held.result_key, held.result_size,
			held.error_code, held.updated_at) IS DISTINCT FROM (excluded.tenant, excluded.status, excluded.generation,
			excluded.progress, excluded.result_key, excluded.result_size, excluded.error_code, excluded.updated_at)`

// viewWhere is the condition on the held view (held) under which a
// snapshot (excluded) of status final or not replaces it: viewNewer for
// an event's, viewTakes for a recovery's, as DynamoStore's viewUpdate
// renders them for DynamoDB.
func viewWhere(cond viewCond, final bool) string {
	switch {
	case cond == viewRewrite && final:
		return ""
	case cond == viewRewrite:
		return "held.version <= excluded.version"
	case cond == viewRecover && final:
		return "held.version <> excluded.version OR " + viewDiffers
	case cond == viewRecover:
		return "held.version < excluded.version OR held.version = excluded.version AND " + viewDiffers
	case cond == viewSkipped:
		return "held.version < excluded.version AND held.status NOT IN (" + finalStatuses + ")"
	}
	return "held.version < excluded.version"
}

// finalStatuses is the SQL list of the final statuses, from jobs'
// constants (which hold no quote).
var finalStatuses = "'" + strings.Join([]string{
	string(jobs.StatusCompleted), string(jobs.StatusFailed), string(jobs.StatusCancelled),
}, "', '") + "'"

// snapshotArgs are the parameters $1 to $10 of v: an optional attribute v
// lacks (empty, zero) is NULL.
func snapshotArgs(v *View) []any {
	var updatedAt any
	if !v.UpdatedAt.IsZero() {
		updatedAt = v.UpdatedAt.UnixMilli()
	}
	return []any{v.JobID, v.Tenant, string(v.Status), v.Generation, v.Version, v.Progress,
		orNull(v.ResultKey), orNull(v.ResultSize), orNull(v.ErrorCode), updatedAt}
}

// moveArgs are the parameters of a move of the cursor from prev (exact:
// that very cursor; else any version before v's, at prev's progress, with
// any status but a final one) to v, adding processed and completed to the
// totals' shard.
func moveArgs(v *View, prev Cursor, exact bool, shard int, processed, completed int64) []any {
	var prevVersion, prevStatus any
	if exact {
		prevVersion, prevStatus = prev.Version, string(prev.Status)
	}
	return append(snapshotArgs(v), prevVersion, prev.Progress, prevStatus, processed, completed, shard)
}

// orNull is x, or nil (NULL) for its zero value.
func orNull[T comparable](x T) any {
	var zero T
	if x == zero {
		return nil
	}
	return x
}
