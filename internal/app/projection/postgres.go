package projection

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/backoff"
	"github.com/fifoworker/fifoworker/internal/base/pgcode"
	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// PostgresStore is the Store on PostgreSQL: the tables projection_views,
// projection_cursors and projection_totals (MigratePostgres creates them).
// Apply is one statement, in Read Committed: it writes the view on its
// version gate, moves the cursor on its gap check and adds to the totals
// when the cursor moved, and returns the cursor it read, which tells a
// duplicate from a gap without another round trip. Recover is one read of
// the cursor and one statement that moves it, conditioned on the cursor
// read, with the view and the totals.
//
// Why Read Committed is enough: the cursor moves by an UPDATE whose WHERE
// names the cursor the event follows (or an INSERT ... ON CONFLICT DO
// NOTHING for the first version), and an UPDATE that finds its row
// changed by a transaction that committed after the statement began, or
// waits for one that holds the row, evaluates its WHERE again on the
// newest version of the row, under the row's lock, before it writes. So
// two deliveries of one event, or an event and a recovery, cannot both
// move the cursor from the same place; the totals are added in the same
// statement (one transaction) by INSERT ... ON CONFLICT DO UPDATE, which
// adds to the newest committed counters under their row's lock, so no
// addition is lost to another job's. The view is written by INSERT ... ON
// CONFLICT DO UPDATE ... WHERE its version gate, which is evaluated on the
// newest version of the row under its lock in the same way.
type PostgresStore struct {
	db     *sql.DB
	shards int
}

var _ Store = (*PostgresStore)(nil)

// PostgresConfig configures a PostgresStore.
type PostgresConfig struct {
	// DB is the database, whose schema MigratePostgres has brought to this
	// program's version; the caller opens it with a driver (the functions': internal/base/pgwire)
	// and bounds the pool. Required.
	DB *sql.DB
	// Shards is how many rows each tenant's totals are spread over (0:
	// DefaultShards; at most MaxShards), so that its jobs' events do not
	// all queue for one row's lock. The cursors are not sharded and a read
	// sums every row, so the count may change at any time.
	Shards int
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c PostgresConfig) Validate() error {
	switch {
	case c.DB == nil:
		return fmt.Errorf("%w: DB is nil", ErrInvalidConfig)
	case c.Shards < 0 || c.Shards > MaxShards:
		return fmt.Errorf("%w: Shards is %d; want 1 to %d (0: %d)", ErrInvalidConfig, c.Shards, MaxShards, DefaultShards)
	}
	return nil
}

// NewPostgresStore returns a store on cfg.DB, or an error wrapping
// ErrInvalidConfig.
func NewPostgresStore(cfg PostgresConfig) (*PostgresStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	shards := cfg.Shards
	if shards == 0 {
		shards = DefaultShards
	}
	return &PostgresStore{db: cfg.DB, shards: shards}, nil
}

//go:embed postgres/*.sql
var postgresFiles embed.FS

// MigrationComponent is the component the projection's migrations are
// recorded under in pgmigrate's table.
const MigrationComponent = "projection"

// MigratePostgres brings the projection's tables to this program's schema
// (pgmigrate: one transaction under an advisory lock; a database with a
// newer or an edited schema is refused).
func MigratePostgres(ctx context.Context, db *sql.DB) error {
	files, err := fs.Sub(postgresFiles, "postgres")
	if err != nil {
		return fmt.Errorf("projection: migrate: %w", err)
	}
	if _, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: MigrationComponent, FS: files}); err != nil {
		return fmt.Errorf("projection: migrate: %w", err)
	}
	return nil
}

// Apply implements Store in one statement (round trip). It runs again
// only when the cursor moved between the statement's snapshot and its
// write, which a concurrent delivery or recovery of the same job does:
// the statement then counted nothing, and the cursor it read (the
// snapshot's) is older than the one that refused it.
func (s *PostgresStore) Apply(ctx context.Context, v View, delta int64) (Result, error) {
	if err := v.validate(); err != nil {
		return Result{}, applyError(&v, err)
	}
	var res Result
	if !adds(&v, delta) {
		return s.skip(ctx, &v, delta)
	}
	args := moveArgs(&v, Cursor{Progress: v.Progress - delta}, false, shardOf(v.JobID, s.shards), delta, completedOf(v.Status))
	for round := 1; round <= maxRounds; round++ {
		m, err := s.move(ctx, applySQL, args)
		if retry, err := again(ctx, round, err); err != nil {
			return res, applyError(&v, err)
		} else if retry {
			continue
		}
		// A round that ran again finds the view it wrote in the one before.
		res.ViewUpdated = res.ViewUpdated || m.viewed
		if m.counted {
			res.Outcome, res.Cursor = Applied, v.Version
			return res, nil
		}
		out, err := judge(m.cursor, &v, delta)
		if err != nil {
			return res, err
		}
		if out != Applied {
			res.Outcome, res.Cursor = out, m.cursor.Version
			return res, nil
		}
	}
	return res, applyError(&v, errors.New("the cursor kept changing; giving up"))
}

// skip writes the view of an event that adds nothing (skipSQL: one
// statement); a view held final at an older version makes the event a
// mismatch (pastFinal), at the cost of a read of the cursor.
func (s *PostgresStore) skip(ctx context.Context, v *View, delta int64) (Result, error) {
	var viewed bool
	var version sql.NullInt64
	var status sql.NullString
	if err := s.db.QueryRowContext(ctx, skipSQL, snapshotArgs(v)...).Scan(&viewed, &version, &status); err != nil {
		return Result{}, applyError(v, err)
	}
	held := View{Version: version.Int64, Status: jobs.Status(status.String)}
	if !viewed && version.Valid && pastFinal(&held, v) {
		cur, err := s.Cursor(ctx, v.Tenant, v.JobID)
		if err != nil {
			return Result{}, applyError(v, err)
		}
		return Result{}, skippedPastFinal(v, delta, cur)
	}
	return Result{Outcome: Skipped, ViewUpdated: viewed}, nil
}

// Recover implements Store: one read of the cursor and one statement; when
// the cursor moved since the read, both again.
func (s *PostgresStore) Recover(ctx context.Context, snap View) (Recovery, error) {
	if err := snap.validate(); err != nil {
		return Recovery{}, recoverError(&snap, err)
	}
	for round := 1; round <= maxRounds; round++ {
		from, err := s.Cursor(ctx, snap.Tenant, snap.JobID)
		if err != nil {
			return Recovery{}, recoverError(&snap, err)
		}
		r := planRecovery(from, &snap)
		var m moved
		if r.Moved() {
			m, err = s.move(ctx, recoverSQL[snap.Status.Final()], moveArgs(&snap, from, true, shardOf(snap.JobID, s.shards), r.Processed, r.Completed))
		} else {
			// The totals are there already; the view takes the snapshot
			// if viewTakes says so.
			m.counted = true
			m.viewed, err = s.putView(ctx, viewSQL[snap.Status.Final()], &snap)
		}
		if retry, err := again(ctx, round, err); err != nil {
			return Recovery{}, recoverError(&snap, err)
		} else if retry {
			continue
		}
		if m.counted {
			r.ViewUpdated = m.viewed
			return r, nil
		}
		// The cursor moved since it was read: read it again.
	}
	return Recovery{}, recoverError(&snap, errors.New("the cursor kept changing; giving up"))
}

// View implements Store.
func (s *PostgresStore) View(ctx context.Context, jobID string) (View, error) {
	v := View{JobID: jobID}
	var resultKey, errorCode sql.NullString
	var resultSize, updatedAt sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT tenant, status, generation, version, progress, result_key, result_size, error_code, updated_at
		FROM projection_views WHERE job_id = $1`, jobID).
		Scan(&v.Tenant, &v.Status, &v.Generation, &v.Version, &v.Progress, &resultKey, &resultSize, &errorCode, &updatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, ErrNotFound)
	case err != nil:
		return View{}, fmt.Errorf("projection: view %s: %w", jobID, err)
	}
	v.ResultKey, v.ResultSize, v.ErrorCode = resultKey.String, resultSize.Int64, errorCode.String
	if updatedAt.Valid {
		v.UpdatedAt = time.UnixMilli(updatedAt.Int64).UTC()
	}
	return v, nil
}

// Totals implements Store.
func (s *PostgresStore) Totals(ctx context.Context, tenant string) (Totals, error) {
	if err := validateTenant(tenant); err != nil {
		return Totals{}, fmt.Errorf("projection: totals: %w", err)
	}
	t := Totals{Tenant: tenant}
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(processed), 0), coalesce(sum(completed), 0) FROM projection_totals WHERE tenant = $1`, tenant).
		Scan(&t.Processed, &t.Completed)
	if err != nil {
		return Totals{}, fmt.Errorf("projection: totals of %s: %w", tenant, err)
	}
	return t, nil
}

// Cursor implements Store.
func (s *PostgresStore) Cursor(ctx context.Context, tenant, jobID string) (Cursor, error) {
	var c Cursor
	err := s.db.QueryRowContext(ctx, `SELECT version, progress, status FROM projection_cursors WHERE tenant = $1 AND job_id = $2`,
		tenant, jobID).Scan(&c.Version, &c.Progress, &c.Status)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Cursor{}, fmt.Errorf("projection: cursor of %s: %w", jobID, err)
	}
	return c, nil
}

// moved is what a move statement did.
type moved struct {
	counted bool   // the cursor moved and the totals were added to
	viewed  bool   // the view was written
	cursor  Cursor // the cursor in the statement's snapshot, before it
}

// move runs a statement of moveStatement's shape.
func (s *PostgresStore) move(ctx context.Context, query string, args []any) (moved, error) {
	var m moved
	var version, progress sql.NullInt64
	var status sql.NullString
	err := s.db.QueryRowContext(ctx, query, args...).Scan(&m.counted, &m.viewed, &version, &progress, &status)
	m.cursor = Cursor{Version: version.Int64, Progress: progress.Int64, Status: jobs.Status(status.String)}
	return m, err
}

// putView runs a statement of viewStatement's shape and reports whether
// it wrote the view.
func (s *PostgresStore) putView(ctx context.Context, query string, v *View) (bool, error) {
	var viewed bool
	err := s.db.QueryRowContext(ctx, query, snapshotArgs(v)...).Scan(&viewed)
	return viewed, err
}

// again tells what the error of a statement's round means: nil, go on; a
// deadlock or a serialization failure, run the statement again after a
// jittered wait (true); any other, give up.
func again(ctx context.Context, round int, err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	if !retryable(err) || round == maxRounds {
		return false, err
	}
	if err := backoff.Sleep(ctx, backoff.Delay(conflictBase, conflictMax, round)); err != nil {
		return false, err
	}
	return true, nil
}

// retryable reports whether err is PostgreSQL's answer to a statement that
// lost a race and changed nothing: deadlock_detected (40P01), which the
// statements' lock order (cursor, view, totals) should leave to other
// writers of the tables, and serialization_failure (40001), which a
// database whose default isolation is above Read Committed answers where
// Read Committed would re-check. The driver's error says its SQLSTATE
// (pgconn.PgError.SQLState); the store does not import the driver.
func retryable(err error) bool { return pgcode.LostRace(err) }
