// Package pgmigrate applies versioned SQL migrations to a PostgreSQL
// database: each component (the job store, the projections, the quarantine)
// keeps its own numbered files, and the database records which of them it
// has applied, with a digest of each, in fifoworker_schema.
//
// Apply runs in one transaction under an advisory lock, so that two
// functions starting at once apply each file once, and a file that fails
// leaves the schema as it was (PostgreSQL's DDL is transactional; a
// migration therefore cannot use CREATE INDEX CONCURRENTLY). It refuses a
// database whose recorded files differ from the ones given (an applied
// file edited afterwards) or that holds a version the files do not (a
// binary older than the schema): both are a deployment error that applying
// more SQL would hide. Apply's transaction is Read Committed whatever the
// database's default, so that a racer that waited for the lock reads what
// the winner recorded; and a file that ends it (a COMMIT, ROLLBACK or END
// among its statements) is reported as ErrNotTransactional, since what
// ran before that end cannot be rolled back.
package pgmigrate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
)

// Errors of Apply; each is wrapped with the component and file.
var (
	// ErrMalformed is a set whose files are not named NNNN_name.sql, whose
	// numbers do not run 1, 2, 3, … without a gap, or whose component is
	// not [a-z0-9_]+.
	ErrMalformed = errors.New("pgmigrate: malformed migration set")
	// ErrChanged is an applied migration whose file differs now.
	ErrChanged = errors.New("pgmigrate: an applied migration has changed")
	// ErrNewer is a database that has applied a version of a component the
	// files do not have.
	ErrNewer = errors.New("pgmigrate: the database's schema is newer than this program")
	// ErrNotTransactional is a file that ended Apply's transaction (a
	// COMMIT, ROLLBACK or END among its statements): what ran before it
	// may be committed and the lock released, so the schema must be
	// repaired by hand.
	ErrNotTransactional = errors.New("pgmigrate: a migration ended the transaction it runs in")
)

// Set is one component's migrations: the files NNNN_name.sql in FS's
// root, applied in number order from 0001.
type Set struct {
	Component string
	FS        fs.FS
}

// Migration is one file of a set.
type Migration struct {
	Component string
	Version   int
	Name      string // the file name
	SQL       string
	SHA256    string
}

// Table is the table Apply records applied migrations in.
const Table = "fifoworker_schema"

// lockKey is the advisory lock Apply holds: an arbitrary constant
// (fifoworker's migrations, "fwmigr" in ASCII).
const lockKey = 0x66776d696772

var (
	fileName      = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)
	componentName = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
)

// Read returns the set's migrations in version order.
func (s Set) Read() ([]Migration, error) {
	if !componentName.MatchString(s.Component) {
		return nil, fmt.Errorf("%w: component %q: want [a-z0-9_]{1,64}", ErrMalformed, s.Component)
	}
	entries, err := fs.ReadDir(s.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: %s: %w", s.Component, err)
	}
	var out []Migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			return nil, fmt.Errorf("%w: %s: %q is not a file named NNNN_name.sql", ErrMalformed, s.Component, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if v != len(out)+1 {
			return nil, fmt.Errorf("%w: %s: %s: want version %d next", ErrMalformed, s.Component, e.Name(), len(out)+1)
		}
		body, err := fs.ReadFile(s.FS, e.Name())
		if err != nil {
			return nil, fmt.Errorf("pgmigrate: %s: %w", s.Component, err)
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Component: s.Component, Version: v, Name: e.Name(), SQL: string(body), SHA256: hex.EncodeToString(sum[:])})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no migrations", ErrMalformed, s.Component)
	}
	return out, nil
}

// Apply applies the migrations of sets the database has not applied yet,
// all in one transaction, and returns them in the order applied (none when
// the schema is current).
func Apply(ctx context.Context, db *sql.DB, sets ...Set) ([]Migration, error) {
	var all [][]Migration
	for _, s := range sets {
		ms, err := s.Read()
		if err != nil {
			return nil, err
		}
		all = append(all, ms)
	}
	// Read Committed whatever the database's default: under Repeatable
	// Read the snapshot would be taken by the lock's statement, before the
	// lock is granted, and a racer that waited would not see what the
	// winner recorded, and apply its files again.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	applied, err := apply(ctx, tx, all)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("pgmigrate: commit: %w", err)
	}
	return applied, nil
}

func apply(ctx context.Context, tx *sql.Tx, sets [][]Migration) ([]Migration, error) {
	// The transaction's id, assigned now, tells whether a file ended the
	// transaction: the statements after it would run in another.
	var xid string
	if err := tx.QueryRowContext(ctx, `SELECT pg_advisory_xact_lock($1), pg_current_xact_id()::text`, int64(lockKey)).Scan(new(any), &xid); err != nil {
		return nil, fmt.Errorf("pgmigrate: lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+Table+` (
		component  text        NOT NULL,
		version    integer     NOT NULL,
		name       text        NOT NULL,
		sha256     text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (component, version))`); err != nil {
		return nil, fmt.Errorf("pgmigrate: create %s: %w", Table, err)
	}
	var out []Migration
	for _, ms := range sets {
		done, err := recorded(ctx, tx, ms[0].Component)
		if err != nil {
			return nil, err
		}
		if err := check(ms, done); err != nil {
			return nil, err
		}
		for _, m := range ms[len(done):] {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return nil, fmt.Errorf("pgmigrate: %s: %s: %w", m.Component, m.Name, err)
			}
			if err := sameTransaction(ctx, tx, xid); err != nil {
				return nil, fmt.Errorf("%w: %s: %s: %w", ErrNotTransactional, m.Component, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+Table+` (component, version, name, sha256) VALUES ($1, $2, $3, $4)`,
				m.Component, m.Version, m.Name, m.SHA256); err != nil {
				return nil, fmt.Errorf("pgmigrate: %s: record %s: %w", m.Component, m.Name, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// sameTransaction fails unless tx still runs in the transaction xid: a
// file whose statements include a COMMIT, ROLLBACK or END ends it, and
// PostgreSQL runs the rest of the file, and what follows, outside it.
func sameTransaction(ctx context.Context, tx *sql.Tx, xid string) error {
	var now sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT pg_current_xact_id_if_assigned()::text`).Scan(&now); err != nil {
		return err
	}
	if now.String != xid {
		return fmt.Errorf("it ran in transaction %s, and the next statement in %q: what ran before its end may be committed, and the lock was released", xid, now.String)
	}
	return nil
}

// recorded returns the component's applied migrations in version order
// (SQL and Name left empty).
func recorded(ctx context.Context, tx *sql.Tx, component string) ([]Migration, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version, name, sha256 FROM `+Table+` WHERE component = $1 ORDER BY version`, component)
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: %s: read applied: %w", component, err)
	}
	defer func() { _ = rows.Close() }()
	var out []Migration
	for rows.Next() {
		m := Migration{Component: component}
		if err := rows.Scan(&m.Version, &m.Name, &m.SHA256); err != nil {
			return nil, fmt.Errorf("pgmigrate: %s: read applied: %w", component, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgmigrate: %s: read applied: %w", component, err)
	}
	return out, nil
}

// check holds the applied migrations done to the files ms: each applied
// version is a file, unchanged.
func check(ms, done []Migration) error {
	for i, d := range done {
		if i >= len(ms) {
			return fmt.Errorf("%w: %s: the database has applied version %d (%s); this program knows %d", ErrNewer, d.Component, d.Version, d.Name, len(ms))
		}
		if d.Version != ms[i].Version || d.SHA256 != ms[i].SHA256 {
			return fmt.Errorf("%w: %s: version %d was applied as %s (sha256 %s), the file is now %s (sha256 %s)",
				ErrChanged, d.Component, d.Version, d.Name, d.SHA256, ms[i].Name, ms[i].SHA256)
		}
	}
	return nil
}

// Current reports the version of each component the database has applied
// (0 for none), for a health check or a test.
func Current(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT component, max(version) FROM `+Table+` GROUP BY component`)
	if err != nil {
		return nil, fmt.Errorf("pgmigrate: current: %w", err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]int{}
	for rows.Next() {
		var c string
		var v int
		if err := rows.Scan(&c, &v); err != nil {
			return nil, fmt.Errorf("pgmigrate: current: %w", err)
		}
		out[c] = v
	}
	return out, rows.Err()
}
