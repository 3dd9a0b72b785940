package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// PostgresStore is the Store on PostgreSQL 18 (the schema of
// MigratePostgres). Every transition after creation is one statement: the
// shared state machine's guard as an UPDATE's WHERE, its patch as the SET,
// the outbox row inserted by a data-modifying CTE of the same statement,
// and, when the WHERE refuses the row, the row as the statement saw it,
// from which decide tells the error or recognises the caller's own
// earlier write without another round trip. The package documentation
// says why Read Committed is enough.
//
// It talks database/sql and imports no driver: the caller opens DB with
// one (the functions use internal/base/pgwire), so a program that runs the
// DynamoDB store links no PostgreSQL driver. PostgreSQL has no TTL: rows
// whose expires_at has passed stay, readable, until PurgeExpired deletes
// them, as DynamoDB's TTL would some time after expiry.
type PostgresStore struct {
	db  *sql.DB
	cfg config
}

var (
	_ Store     = (*PostgresStore)(nil)
	_ ListStore = (*PostgresStore)(nil)
	_ Lister    = (*PostgresStore)(nil)
)

// PostgresConfig configures a PostgresStore.
type PostgresConfig struct {
	// DB is a pool on a database that MigratePostgres has brought to this
	// version, opened with a driver (the functions': internal/base/pgwire).
	// Required. The store
	// runs every statement on its own (autocommit), at the pool's default
	// isolation: Read Committed (PostgreSQL's default) re-checks a write
	// that waited; above it a write that waited fails (40001), and the
	// store reads the row as it is now (one more round trip) and decides
	// again on it, as it does after a deadlock (40P01).
	DB *sql.DB
	// Config holds the settings the store shares with the other stores;
	// its zero value is the defaults.
	Config
}

// Validate reports the first field that cannot work, wrapping
// ErrInvalidConfig.
func (c PostgresConfig) Validate() error {
	if c.DB == nil {
		return fmt.Errorf("%w: DB is nil", ErrInvalidConfig)
	}
	return c.Config.Validate()
}

// NewPostgresStore returns a store on cfg.DB, or an error wrapping
// ErrInvalidConfig. It does not connect.
func NewPostgresStore(cfg PostgresConfig) (*PostgresStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &PostgresStore{db: cfg.DB, cfg: c}, nil
}

// Claim implements Store. From pending it costs one round trip; a
// takeover costs two (the first statement learns the expired lease from
// the row it returns).
func (s *PostgresStore) Claim(ctx context.Context, req ClaimRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Renew implements Store: one round trip.
func (s *PostgresStore) Renew(ctx context.Context, req RenewRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Accept implements Store: one round trip.
func (s *PostgresStore) Accept(ctx context.Context, req AcceptRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Fail implements Store: one round trip.
func (s *PostgresStore) Fail(ctx context.Context, req FailRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Cancel implements Store: one round trip for a pending job, two for a
// running one.
func (s *PostgresStore) Cancel(ctx context.Context, req CancelRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Nudge implements Store: one round trip (a refusal is typed from the row
// the refused statement returns).
func (s *PostgresStore) Nudge(ctx context.Context, req NudgeRequest) (Job, error) {
	return s.transition(ctx, &req)
}

// Get implements Store: one round trip, reading the committed row.
func (s *PostgresStore) Get(ctx context.Context, id string) (Job, error) {
	if err := ValidateID(id); err != nil {
		return Job{}, fmt.Errorf("jobs: get: %w", err)
	}
	j, err := s.getJob(ctx, id)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	if j == nil {
		return Job{}, fmt.Errorf("jobs: get %s: %w", id, ErrNotFound)
	}
	return *j, nil
}

func (s *PostgresStore) getJob(ctx context.Context, id string) (*Job, error) {
	var img []byte
	err := s.db.QueryRowContext(ctx, `SELECT to_jsonb(j) FROM jobs j WHERE job_id = $1`, id).Scan(&img)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j, err := jobitem.FromPostgresImage(img)
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// transition runs decide against the row, starting from what the request
// expects: each round is one statement that either writes (the guard held
// on the row it found) or returns the row, on which decide runs again.
func (s *PostgresStore) transition(ctx context.Context, req request) (Job, error) {
	return runRounds(req, &s.cfg, func(st *step, now time.Time) (Job, *Job, error) {
		next, old, err := s.update(ctx, req.jobID(), st, now)
		if lostRace(err) {
			// Above Read Committed (a database's or role's default), an
			// UPDATE that waited for a competing write fails instead of
			// checking its WHERE again; it wrote nothing, and returned no
			// row. Refused on the row as it is now (a read in a snapshot
			// of its own, which sees the competitor's commit), so that the
			// next round is decided on it: refused on the item the step
			// was decided on, the next round would spend its statement
			// learning what this read learns, and a busy row's transition
			// run out of rounds twice as fast.
			cur, err := s.getJob(ctx, req.jobID())
			if err != nil {
				return Job{}, nil, err
			}
			return Job{}, cur, errConditionFailed
		}
		return next, old, err
	}, func(*Job) error {
		// The row refused is the statement's snapshot. The UPDATE may have
		// waited for a competing write and refused the newer row its WHERE
		// re-checked, while the snapshot's row, older, still satisfies the
		// guard: the next round's statement, with a newer snapshot, sees
		// the newer row. Unlike DynamoStore's, such a refusal is no bug.
		return nil
	})
}

// update makes the write of st in one statement. When the WHERE refuses
// the row it returns errConditionFailed and the row as the statement's
// snapshot holds it (nil if there is none).
func (s *PostgresStore) update(ctx context.Context, id string, st *step, now time.Time) (Job, *Job, error) {
	query, args, err := updateStatement(id, st, now)
	if err != nil {
		return Job{}, nil, err
	}
	var written bool
	var img []byte
	err = s.db.QueryRowContext(ctx, query, args...).Scan(&written, &img)
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, nil, errConditionFailed // no row at all
	}
	if err != nil {
		return Job{}, nil, err
	}
	j, err := jobitem.FromPostgresImage(img)
	if err != nil {
		return Job{}, nil, err
	}
	if !written {
		return Job{}, &j, errConditionFailed
	}
	return j, nil, nil
}

// statement collects a statement's parameters.
type statement struct{ args []any }

// arg adds v and returns its placeholder.
func (s *statement) arg(v any) string {
	s.args = append(s.args, v)
	return "$" + strconv.Itoa(len(s.args))
}

// jsonb adds v as JSON text and returns its placeholder cast to jsonb
// (text, so that the driver sends it as it is).
func (s *statement) jsonb(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return s.arg(string(b)) + "::text::jsonb", nil
}

// updateStatement renders st as one statement: the guard as the UPDATE's
// WHERE, the patch as its SET, the outbox row of the new version inserted
// from the UPDATE's RETURNING (PostgreSQL 18's old and new rows), and, if
// the UPDATE wrote nothing, the row as the statement's snapshot holds it.
// It returns one row (written, image): the new row when written, else the
// current one; no row when there is no job.
func updateStatement(id string, st *step, now time.Time) (string, []any, error) {
	s := &statement{}
	key := s.arg(id)
	g := st.guard
	where := []string{
		"job_id = " + key,
		"status = " + s.arg(string(g.status)),
		"generation = " + s.arg(g.generation),
		"version = " + s.arg(g.version),
	}
	if g.owner != "" {
		where = append(where, "lease_owner = "+s.arg(g.owner))
	}
	if g.tenant != "" {
		where = append(where, "tenant = "+s.arg(g.tenant))
	}
	if !g.expiredBefore.IsZero() {
		// A NULL lease fails "<", as a missing attribute does on DynamoDB.
		where = append(where, "lease_expires_at < "+s.arg(g.expiredBefore.UnixMilli()))
	}
	sets, err := patchSets(s, &st.patch)
	if err != nil {
		return "", nil, err
	}
	query := `WITH w AS (
	UPDATE jobs SET ` + strings.Join(sets, ", ") + `
	WHERE ` + strings.Join(where, " AND ") + `
	RETURNING to_jsonb(old) AS prev, to_jsonb(new) AS img
), o AS (
	INSERT INTO job_outbox (job_id, version, image, prev_image, created_at)
	SELECT ` + key + `, ` + s.arg(st.patch.version) + `, img, prev, ` + s.arg(now.UnixMilli()) + ` FROM w
)
SELECT true, img FROM w
UNION ALL
SELECT false, to_jsonb(j) FROM jobs j WHERE j.job_id = ` + key + ` AND NOT EXISTS (SELECT FROM w)`
	return query, s.args, nil
}

// patchSets lists what a patch sets, column by column: the columns of
// jobitem's attributes.
func patchSets(s *statement, p *patch) ([]string, error) {
	outbox, err := s.jsonb(jobitem.OutboxJSON(p.outbox))
	if err != nil {
		return nil, err
	}
	sets := []string{
		"status = " + s.arg(string(p.status)),
		"generation = " + s.arg(p.generation),
		"version = " + s.arg(p.version),
		"outbox = " + outbox,
		"updated_at = " + s.arg(p.updatedAt.UnixMilli()),
		// One slot of the history, merged into the row's (NULL on a row
		// written before the column existed): the object has at most
		// MaxHistory keys, so the row keeps the last MaxHistory entries.
		"history = coalesce(history, '{}'::jsonb) || jsonb_build_object(" +
			s.arg(jobitem.HistorySlot(p.version)) + "::text, " + s.arg(jobitem.EncodeTransition(p.entry())) + "::text)",
	}
	if p.leaseOwner != nil {
		sets = append(sets, "lease_owner = "+s.arg(*p.leaseOwner))
	}
	if p.leaseExpiresAt != nil {
		sets = append(sets, "lease_expires_at = "+s.arg(p.leaseExpiresAt.UnixMilli()))
	}
	if p.result != nil {
		sets = append(sets, "result_key = "+s.arg(p.result.Key), "result_sha256 = "+s.arg(p.result.SHA256),
			"result_size = "+s.arg(p.result.Size))
	}
	if p.progress != nil {
		sets = append(sets, "progress = "+s.arg(*p.progress))
	}
	if p.failure != nil {
		f, err := s.jsonb(jobitem.FailureJSON(*p.failure))
		if err != nil {
			return nil, err
		}
		sets = append(sets, "error = "+f)
	}
	if p.expiresAt != nil {
		sets = append(sets, "expires_at = "+s.arg(p.expiresAt.Unix()))
	}
	return sets, nil
}
