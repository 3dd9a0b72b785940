// Package pgschema applies the PostgreSQL schema of the stores the
// functions run on: what template-postgres.yaml's DatabaseSchema custom
// resource does on the cluster (internal/lambdawire.Migrate) and what the
// local deployment does on the local stack's server
// (internal/dev/localdeploy). A package of its own so that both call the
// one list of components: the local deployment may not import the wiring,
// whose tests deploy locally.
package pgschema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fifoworker/fifoworker/internal/app/projection"
	"github.com/fifoworker/fifoworker/pkg/jobs"
	"github.com/fifoworker/fifoworker/pkg/quarantine"
)

// components are the stores' migrations, in the order Apply applies them.
// Each is its own transaction under pgmigrate's advisory lock, so a run
// that stops halfway applies the rest the next time.
var components = []struct {
	name  string
	apply func(ctx context.Context, db *sql.DB) error
}{
	{"jobs", jobs.MigratePostgres},
	{"projection", projection.MigratePostgres},
	{"quarantine", quarantine.MigratePostgres},
}

// Apply applies the jobs', the projection's and the quarantine's
// migrations to db, in that order; an error names the component.
func Apply(ctx context.Context, db *sql.DB) error {
	for _, c := range components {
		if err := c.apply(ctx, db); err != nil {
			return fmt.Errorf("migrate %s: %w", c.name, err)
		}
	}
	return nil
}
