//go:build integration

package jobs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The listings and the purge read their partial indexes, never a whole
// table: with sequential scans priced out, the plan of each of the store's
// statements names its indexes (so its predicate implies theirs) and scans
// no table in full (the purge's check of a job's outbox rows reads
// job_outbox's primary key, which needs both job_id columns in one
// collation).
func TestPostgresListingsReadTheirPartialIndexes(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	ctx := t.Context()
	conn, err := b.raw.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, `SET enable_seqscan = off`)
	require.NoError(t, err)
	for name, q := range jobs.PostgresQueries {
		rows, err := conn.QueryContext(ctx, "EXPLAIN "+q.SQL, q.Args...)
		require.NoError(t, err, name)
		var plan []string
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan = append(plan, line)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		text := strings.Join(plan, "\n")
		for _, index := range q.Indexes {
			require.Regexp(t, `(using|Bitmap Index Scan on) `+index+` `, text, "%s's plan:\n%s", name, text)
		}
		require.NotContains(t, text, "Seq Scan", "%s's plan:\n%s", name, text)
	}
}
