package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// The listings' statements, each on its partial index (0002).
const (
	// liveSQL lists live jobs before $1 (epoch ms), after the position
	// ($2, $3), $4 at most.
	liveSQL = `SELECT job_id, updated_at FROM jobs
		WHERE status IN ('pending', 'running') AND updated_at < $1 AND (updated_at, job_id) > ($2, $3)
		ORDER BY updated_at, job_id LIMIT $4`
	// finishedSQL lists final jobs whose key is after $1 and before the
	// bound $2, $3 at most.
	finishedSQL = `SELECT job_id, finished_key FROM jobs
		WHERE finished_key IS NOT NULL AND finished_key > $1 AND finished_key < $2
		ORDER BY finished_key LIMIT $3`
)

// Live implements Lister: LiveAfter from the start.
func (s *PostgresStore) Live(ctx context.Context, updatedBefore time.Time, limit int) ([]string, error) {
	return liveIDs(s.LiveAfter(ctx, LivePosition{}, updatedBefore, limit))
}

// LiveAfter implements LivePager: one statement on the partial index
// jobs_live (updated_at, job_id of the jobs that are not final), which
// orders ties by id byte by byte (COLLATE "C"), as LivePosition does. The
// listing is exact and strongly consistent: the index is the table's.
func (s *PostgresStore) LiveAfter(ctx context.Context, after LivePosition, updatedBefore time.Time, limit int) ([]LivePosition, error) {
	if err := validateLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, liveSQL, updatedBefore.UnixMilli(), after.UpdatedAt, after.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("jobs: live: %w", err)
	}
	var out []LivePosition
	for rows.Next() {
		var p LivePosition
		if err := rows.Scan(&p.ID, &p.UpdatedAt); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("jobs: live: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs: live: %w", err)
	}
	return out, nil
}

// Finished implements FinishedLister: one statement on the partial index
// jobs_finished, of the generated column finished_key (FinishedKey of
// each final job, NULL for a live one), compared byte by byte.
func (s *PostgresStore) Finished(ctx context.Context, after string, before time.Time, limit int) ([]FinishedJob, error) {
	if err := validateFinishedLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, finishedSQL, after, FinishedBound(before), limit)
	if err != nil {
		return nil, fmt.Errorf("jobs: finished: %w", err)
	}
	var out []FinishedJob
	for rows.Next() {
		var f FinishedJob
		if err := rows.Scan(&f.ID, &f.Key); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("jobs: finished: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs: finished: %w", err)
	}
	return out, nil
}

// GetMany implements BatchGetter: one statement for all ids (passed as one
// JSON array, which any driver sends as text). Rows that do not decode
// are collected into an *UndecodableError, returned with the others.
func (s *PostgresStore) GetMany(ctx context.Context, ids []string) (map[string]Job, error) {
	unique, err := uniqueIDs(ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Job, len(unique))
	if len(unique) == 0 {
		return out, nil
	}
	list, err := json.Marshal(unique)
	if err != nil {
		return nil, fmt.Errorf("jobs: get many: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT job_id, to_jsonb(j) FROM jobs j
		WHERE job_id IN (SELECT jsonb_array_elements_text($1::text::jsonb))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("jobs: get many: %w", err)
	}
	defer func() { _ = rows.Close() }()
	bad := map[string]error{}
	for rows.Next() {
		var id string
		var img []byte
		if err := rows.Scan(&id, &img); err != nil {
			return nil, fmt.Errorf("jobs: get many: %w", err)
		}
		j, err := jobitem.FromPostgresImage(img)
		if err != nil {
			bad[id] = err
			continue
		}
		out[id] = j
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("jobs: get many: %w", err)
	}
	if len(bad) > 0 {
		return out, &UndecodableError{Items: bad}
	}
	return out, nil
}
