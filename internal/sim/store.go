package sim

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// Store is what holds the jobs, the projection and the quarantine.
type Store int

const (
	// StoreMemory: jobs.MemoryStore, projection.MemoryStore and
	// quarantine.MemoryStore.
	StoreMemory Store = iota
	// StorePostgres: jobs.PostgresStore, projection.PostgresStore and
	// quarantine.PostgresStore on Config.DB, a database of the run's own
	// that the run migrates. Every time they are given is the simulated
	// clock's. One fiber runs at a time, so each statement ends before the
	// next starts and a seed replays as it does on the memory stores.
	StorePostgres
)

func (s Store) String() string {
	switch s {
	case StoreMemory:
		return "memory"
	case StorePostgres:
		return "postgres"
	}
	return fmt.Sprintf("Store(%d)", int(s))
}

// jobStore is what the journal needs of the job store: the transitions,
// and the listings the sweeper reads through the fault plan.
type jobStore interface {
	jobs.Store
	jobs.Lister
	jobs.FinishedLister
	jobs.BatchGetter
}

var (
	_ jobStore = (*jobs.MemoryStore)(nil)
	_ jobStore = (*jobs.PostgresStore)(nil)
)

// stores are the three stores of a run, under the fault plan and the
// observers.
type stores struct {
	jobs       jobStore
	projection projection.Store
	quarantine quarantine.Store
}

// newStores makes the stores cfg names, all on the world's clock.
func newStores(ctx context.Context, cfg Config, jc jobs.Config) (stores, error) {
	if cfg.Store == StoreMemory {
		mem, err := jobs.NewMemoryStore(jc)
		return stores{jobs: mem, projection: projection.NewMemoryStore(), quarantine: quarantine.NewMemoryStore()}, err
	}
	for _, migrate := range []func(context.Context, *sql.DB) error{jobs.MigratePostgres, projection.MigratePostgres, quarantine.MigratePostgres} {
		if err := migrate(ctx, cfg.DB); err != nil {
			return stores{}, err
		}
	}
	js, jerr := jobs.NewPostgresStore(jobs.PostgresConfig{DB: cfg.DB, Config: jc})
	ps, perr := projection.NewPostgresStore(projection.PostgresConfig{DB: cfg.DB})
	qs, qerr := quarantine.NewPostgresStore(quarantine.PostgresConfig{DB: cfg.DB})
	if err := errors.Join(jerr, perr, qerr); err != nil {
		return stores{}, err
	}
	return stores{jobs: js, projection: ps, quarantine: qs}, nil
}

// outboxRow is a row of job_outbox, as the relay reads it.
type outboxRow struct {
	version     int64
	image, prev []byte // prev nil for a creation
}

// outboxRows reads the job's outbox rows in version order.
func (w *World) outboxRows(ctx context.Context, id string, version int64) ([]outboxRow, error) {
	q := `SELECT version, image, prev_image FROM job_outbox WHERE job_id = $1 ORDER BY version`
	args := []any{id}
	if version >= 0 {
		q = `SELECT version, image, prev_image FROM job_outbox WHERE job_id = $1 AND version = $2`
		args = append(args, version)
	}
	rows, err := w.cfg.DB.QueryContext(context.WithoutCancel(ctx), q, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.version, &r.image, &r.prev); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// checkOutboxRow checks that the transition the journal saw applied is
// the outbox row of its version, written with it: the row's images decode
// to the journal's (before, after). With the memory stores there is no
// outbox table.
func (w *World) checkOutboxRow(ctx context.Context, before *jobs.Job, after jobs.Job) {
	if w.cfg.Store != StorePostgres {
		return
	}
	rows, err := w.outboxRows(ctx, after.ID, after.Version)
	if err != nil {
		w.fail(fmt.Errorf("read the outbox of %s: %w", jobs.OutboxID(after.ID, after.Version), err))
		return
	}
	if len(rows) != 1 {
		w.violate("the transition %s has %d outbox rows, want 1", jobs.OutboxID(after.ID, after.Version), len(rows))
		return
	}
	if err := sameTransition(rows[0], before, after); err != nil {
		w.violate("the outbox row %s is not the transition the journal saw: %v", jobs.OutboxID(after.ID, after.Version), err)
	}
}

// checkOutboxEnd checks the whole outbox against the journal: each job's
// rows still present are the end of its stream, transition by transition,
// and the records before them are those the relay took: none when the
// relay publishes the journal's stream (nothing deletes a row), each one
// published with the outbox relay (which deletes a row once its messages
// are acknowledged). No row belongs to a job the journal never saw
// created.
func (w *World) checkOutboxEnd(ctx context.Context) {
	if w.cfg.Store != StorePostgres {
		return
	}
	var orphans int
	err := w.cfg.DB.QueryRowContext(ctx, `SELECT count(DISTINCT job_id) FROM job_outbox WHERE job_id <> ALL($1::text[])`, w.jobIDs).Scan(&orphans)
	if err != nil {
		w.fail(fmt.Errorf("count the outbox's jobs: %w", err))
		return
	}
	if orphans > 0 {
		w.violate("the outbox holds rows of %d jobs the journal never saw created", orphans)
	}
	for _, id := range w.jobIDs {
		rows, err := w.outboxRows(ctx, id, -1)
		if err != nil {
			w.fail(fmt.Errorf("read the outbox of %s: %w", id, err))
			return
		}
		records := w.streams[id].records
		taken := len(records) - len(rows)
		if taken < 0 || (taken > 0 && !w.cfg.OutboxRelay) {
			w.violate("job %s has %d outbox rows; its stream %d records", id, len(rows), len(records))
			continue
		}
		for _, r := range records[:taken] {
			if r.published == 0 {
				w.violate("the relay took the outbox row %s and never published it", jobs.OutboxID(id, r.cur.Version))
			}
		}
		for i, r := range records[taken:] {
			if err := sameTransition(rows[i], r.prev, r.cur); err != nil {
				w.violate("the outbox row %d of %s is not its stream's record %d: %v", i, id, taken+i, err)
				break
			}
		}
	}
}

// sameTransition reports how row differs from the transition (prev, cur):
// its images decode (jobitem.FromPostgresImage) to the same jobs, compared
// in their canonical encoding.
func sameTransition(row outboxRow, prev *jobs.Job, cur jobs.Job) error {
	if row.version != cur.Version {
		return fmt.Errorf("version %d, the job's %d", row.version, cur.Version)
	}
	if err := sameImage("image", row.image, &cur); err != nil {
		return err
	}
	if prev == nil {
		if row.prev != nil && !bytes.Equal(row.prev, []byte("null")) {
			return fmt.Errorf("a creation with the previous image %s", row.prev)
		}
		return nil
	}
	if row.prev == nil {
		return errors.New("no previous image, but the job existed before")
	}
	return sameImage("previous image", row.prev, prev)
}

// sameImage decodes image and compares it with want.
func sameImage(what string, image []byte, want *jobs.Job) error {
	got, err := jobitem.FromPostgresImage(image)
	if err != nil {
		return fmt.Errorf("the %s does not decode: %w", what, err)
	}
	a, aerr := jobitem.EncodePostgresImage(got)
	b, berr := jobitem.EncodePostgresImage(*want)
	if err := errors.Join(aerr, berr); err != nil {
		return fmt.Errorf("the %s: %w", what, err)
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("the %s is\n  %s\nthe journal's\n  %s", what, a, b)
	}
	return nil
}
