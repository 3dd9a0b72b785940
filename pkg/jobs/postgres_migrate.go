package jobs

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
)

// migrations are the job store's schema versions: 0001 the tables (jobs,
// job_intents, job_outbox), 0002 the listings' finished_key column and the
// partial indexes of the live and finished listings and of PurgeExpired,
// 0003 the jobs' history column (jobitem.AttrHistory; NULL on the rows
// before it, until their next transition).
//
//go:embed postgres/*.sql
var migrations embed.FS

// PostgresMigrations is the job store's migration set (component "jobs"),
// for a caller that applies several components' sets in one
// pgmigrate.Apply.
func PostgresMigrations() pgmigrate.Set {
	sub, err := fs.Sub(migrations, "postgres")
	if err != nil {
		panic(err) // the embedded directory is there: go:embed checked it
	}
	return pgmigrate.Set{Component: "jobs", FS: sub}
}

// MigratePostgres brings db's job store schema to this version: the
// migrations it has not applied yet, in one transaction
// (internal/base/pgmigrate). A schema newer than this program, or an
// applied migration that has changed, is an error and nothing is applied.
func MigratePostgres(ctx context.Context, db *sql.DB) error {
	if _, err := pgmigrate.Apply(ctx, db, PostgresMigrations()); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}
