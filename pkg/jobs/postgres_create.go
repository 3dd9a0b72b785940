package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fifoworker/fifoworker/internal/base/pgcode"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// Create implements Store. A new intent costs one round trip: one
// statement inserts the intent's row, the job's row and the outbox row of
// version 0, all or none. An intent that already has its job costs two
// (the statement writes nothing; one more reads the intent and its job);
// one whose job is gone (deleted after it expired) three (the write, the
// read, and the statement that writes the new job over the intent's row,
// on the condition that it is still that row).
//
// Concurrent creates of one intent make one job: the intent's primary key
// makes the second insert wait for the first's transaction and then insert
// nothing (ON CONFLICT DO NOTHING); the second then reads the committed
// intent and its job. A job id already taken fails the statement (a unique
// violation, which undoes the intent's row too), and the job that has the
// id decides, as resolveCreate says.
func (s *PostgresStore) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	if err := req.validate(); err != nil {
		return CreateResult{}, createError(&req, err)
	}
	now := s.cfg.now()
	var dangling *intentMarker
	var last error // the error that made the last round try again, for the give-up
	for range maxRounds {
		last = nil
		job, marker := newJob(&req, dangling, now, &s.cfg)
		created, err := s.insert(ctx, &job, &marker, dangling)
		switch {
		case err == nil && created != nil:
			return CreateResult{Job: *created}, nil
		case lostRace(err):
			// Above Read Committed, an insert that met an intent's or a
			// job's row committed after its snapshot fails instead of
			// finding it; nothing was written. The next round's does.
			last = err
			continue
		case isUniqueViolation(err):
			// The job id is taken: that job decides.
			taken := err
			existing, err := s.getJob(ctx, job.ID)
			if err != nil {
				return CreateResult{}, createError(&req, err)
			}
			if existing == nil {
				// Deleted meanwhile (try again), or the key was not the
				// job's: the give-up then says which it was.
				dangling, last = nil, taken
				continue
			}
			res, _, err := resolveCreate(&req, nil, existing)
			return res, createError(&req, err)
		case err != nil:
			return CreateResult{}, createError(&req, err)
		}
		// The intent's row was in the way (or, over a dangling one, has
		// changed): read it and its job.
		m, existing, err := s.intent(ctx, req.Tenant, req.IntentID)
		if err != nil {
			return CreateResult{}, createError(&req, err)
		}
		if m == nil {
			dangling = nil // deleted meanwhile: try again
			continue
		}
		res, free, err := resolveCreate(&req, m, existing)
		if !free {
			return res, createError(&req, err)
		}
		dangling = m
	}
	if last != nil {
		return CreateResult{}, createError(&req, fmt.Errorf("the intent's rows kept changing; giving up: %w", last))
	}
	return CreateResult{}, createError(&req, errors.New("the intent's rows kept changing; giving up"))
}

// insert writes job, its intent's row m and its outbox row in one
// statement, and returns the job as written; nil when the intent's row was
// in the way: there is one (dangling nil), or it is no longer dangling.
// Over dangling, the intent's row is updated on the condition that it is
// still dangling (the job it names and its creation time).
func (s *PostgresStore) insert(ctx context.Context, job *Job, m *intentMarker, dangling *intentMarker) (*Job, error) {
	st := &statement{}
	id, tenant, intent := st.arg(job.ID), st.arg(m.Tenant), st.arg(m.IntentID)
	hash, created, expires := st.arg(m.SpecSHA256), st.arg(job.CreatedAt.UnixMilli()), st.arg(m.ExpiresAt.Unix())
	outbox, err := st.jsonb(jobitem.OutboxJSON(job.Outbox))
	if err != nil {
		return nil, err
	}
	history, err := st.jsonb(jobitem.EncodeHistory(job.History))
	if err != nil {
		return nil, err
	}
	spec := "NULL::jsonb"
	if len(job.Spec) > 0 {
		if spec, err = st.jsonb(job.Spec); err != nil {
			return nil, err
		}
	}
	intentRow := `INSERT INTO job_intents (tenant, intent_id, job_id, spec_sha256, created_at, expires_at)
	VALUES (` + tenant + `, ` + intent + `, ` + id + `, ` + hash + `, ` + created + `, ` + expires + `)
	ON CONFLICT (tenant, intent_id) DO NOTHING
	RETURNING job_id`
	if dangling != nil {
		intentRow = `UPDATE job_intents SET job_id = ` + id + `, spec_sha256 = ` + hash + `, created_at = ` + created +
			`, expires_at = ` + expires + `
	WHERE tenant = ` + tenant + ` AND intent_id = ` + intent + ` AND job_id = ` + st.arg(dangling.JobID) +
			` AND created_at = ` + st.arg(dangling.CreatedAt.UnixMilli()) + `
	RETURNING job_id`
	}
	query := `WITH m AS (
	` + intentRow + `
), j AS (
	INSERT INTO jobs (job_id, intent_id, tenant, status, generation, version, progress, outbox, spec, created_at, updated_at, history)
	SELECT ` + id + `, ` + intent + `, ` + tenant + `, ` + st.arg(string(job.Status)) + `, 0, 0, 0, ` + outbox + `, ` + spec + `, ` +
		created + `, ` + created + `, ` + history + ` FROM m
	RETURNING to_jsonb(new) AS img
), o AS (
	INSERT INTO job_outbox (job_id, version, image, prev_image, created_at)
	SELECT ` + id + `, 0, img, NULL, ` + created + ` FROM j
)
SELECT img FROM j`
	var img []byte
	err = s.db.QueryRowContext(ctx, query, st.args...).Scan(&img)
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

// intent reads the intent's row and the job it names (nil when that is
// gone), in one statement and so one snapshot; nil when there is no row.
func (s *PostgresStore) intent(ctx context.Context, tenant, intentID string) (*intentMarker, *Job, error) {
	m := intentMarker{Key: IntentKey(tenant, intentID), Tenant: tenant, IntentID: intentID}
	var created, expires int64
	var img []byte
	err := s.db.QueryRowContext(ctx, `SELECT m.job_id, m.spec_sha256, m.created_at, m.expires_at, to_jsonb(j)
		FROM job_intents m LEFT JOIN jobs j ON j.job_id = m.job_id
		WHERE m.tenant = $1 AND m.intent_id = $2`, tenant, intentID).Scan(&m.JobID, &m.SpecSHA256, &created, &expires, &img)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	m.CreatedAt, m.ExpiresAt = time.UnixMilli(created).UTC(), time.Unix(expires, 0).UTC()
	if img == nil {
		return &m, nil, nil
	}
	j, err := jobitem.FromPostgresImage(img)
	if err != nil {
		return nil, nil, fmt.Errorf("job %s of intent %s: %w", m.JobID, intentID, err)
	}
	return &m, &j, nil
}

// lostRace reports whether err is PostgreSQL's serialization_failure
// (40001) or deadlock_detected (40P01): the statement lost a race to a
// concurrent write and changed nothing. Under Read Committed, the store's
// statements re-check the row instead; above it (a database's default
// isolation), they fail so.
func lostRace(err error) bool { return pgcode.LostRace(err) }

// isUniqueViolation reports whether err is PostgreSQL's unique_violation
// (SQLSTATE 23505), as the driver's error reports it (SQLState), without
// importing the driver.
func isUniqueViolation(err error) bool { return pgcode.UniqueViolation(err) }
