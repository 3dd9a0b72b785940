package jobs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// purgeSQL deletes at most $2 rows that expired before $1 (epoch
// seconds), jobs first, and returns how many.
const purgeSQL = `WITH j AS (
	DELETE FROM jobs WHERE job_id IN (
		SELECT job_id FROM jobs x WHERE expires_at < $1
			AND NOT EXISTS (SELECT FROM job_outbox o WHERE o.job_id = x.job_id)
		ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
	RETURNING 1
), i AS (
	DELETE FROM job_intents WHERE (tenant, intent_id) IN (
		SELECT tenant, intent_id FROM job_intents WHERE expires_at < $1
		ORDER BY expires_at LIMIT greatest($2 - (SELECT count(*) FROM j), 0) FOR UPDATE SKIP LOCKED)
	RETURNING 1
)
SELECT (SELECT count(*) FROM j) + (SELECT count(*) FROM i)`

// PurgeExpired deletes at most limit rows whose expires_at is strictly
// before now (epoch seconds, as DynamoDB's TTL compares): final jobs, then
// intents, in one statement, oldest first, and returns how many it
// deleted. PostgreSQL has no TTL, so a deployment calls it on a schedule
// (the sweeper's run) until it returns fewer than limit. Until then an
// expired row is read like any other, as DynamoDB returns an expired item
// until TTL deletes it, and the rules of Create for an expired intent
// (the package documentation) hold in the same way.
//
// A job whose outbox rows are still there (not yet published by the relay)
// is not deleted: its messages would otherwise outlive it, and a new job
// of the same id would meet them. Rows another transaction holds locked
// are skipped (they are taken on a later call).
func (s *PostgresStore) PurgeExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, fmt.Errorf("jobs: purge expired: %w: limit %d is not positive", ErrInvalid, limit)
	}
	var n int
	err := s.db.QueryRowContext(ctx, purgeSQL, now.Unix(), limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("jobs: purge expired: %w", err)
	}
	return n, nil
}

// DeleteItem deletes one row at once, expired or not: key is a job id (the
// job's row, and its outbox rows, published or not), or IntentKey(tenant,
// intent) for an intent's row. It is jobstest.ItemDeleter, with which the
// conformance suite deletes exactly the rows DynamoDB's TTL would, in the
// order it wants; a tool may use it too. A key with no row is no error.
func (s *PostgresStore) DeleteItem(ctx context.Context, key string) error {
	if rest, ok := strings.CutPrefix(key, jobitem.IntentKeyPrefix); ok {
		// Tenants hold no '#', so the first one ends the tenant.
		tenant, intent, ok := strings.Cut(rest, "#")
		if !ok {
			return fmt.Errorf("jobs: delete %q: %w: not an intent key", key, ErrInvalid)
		}
		if _, err := s.db.ExecContext(ctx, `DELETE FROM job_intents WHERE tenant = $1 AND intent_id = $2`, tenant, intent); err != nil {
			return fmt.Errorf("jobs: delete %q: %w", key, err)
		}
		return nil
	}
	if err := ValidateID(key); err != nil {
		return fmt.Errorf("jobs: delete: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `WITH o AS (DELETE FROM job_outbox WHERE job_id = $1)
		DELETE FROM jobs WHERE job_id = $1`, key); err != nil {
		return fmt.Errorf("jobs: delete %s: %w", key, err)
	}
	return nil
}
