//go:build integration

package pgmigrate_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgmigrate"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

func files(kv ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
	}
	return m
}

var (
	v1 = files("0001_widgets.sql", `CREATE TABLE widgets (id text PRIMARY KEY)`)
	v2 = files("0001_widgets.sql", `CREATE TABLE widgets (id text PRIMARY KEY)`,
		"0002_colour.sql", `ALTER TABLE widgets ADD COLUMN colour text NOT NULL DEFAULT 'red'`)
)

func names(ms []pgmigrate.Migration) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Component+"/"+m.Name)
	}
	return out
}

func TestApplyToAnEmptyDatabaseAndAgain(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	got, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
	require.NoError(t, err)
	require.Equal(t, []string{"w/0001_widgets.sql", "w/0002_colour.sql"}, names(got))
	_, err = db.ExecContext(ctx, `INSERT INTO widgets (id) VALUES ('a')`)
	require.NoError(t, err)
	got, err = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
	require.NoError(t, err)
	require.Empty(t, got, "a current schema applies nothing")
	cur, err := pgmigrate.Current(ctx, db)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"w": 2}, cur)
}

func TestApplyToThePreviousVersionsSchemaKeepsItsRows(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	_, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v1})
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO widgets (id) VALUES ('old')`)
	require.NoError(t, err)
	got, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
	require.NoError(t, err)
	require.Equal(t, []string{"w/0002_colour.sql"}, names(got))
	var colour string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT colour FROM widgets WHERE id = 'old'`).Scan(&colour))
	require.Equal(t, "red", colour)
}

func TestApplyRefusesAnEditedOrAMissingMigration(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	_, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
	require.NoError(t, err)
	edited := files("0001_widgets.sql", `CREATE TABLE widgets (id text PRIMARY KEY, x int)`,
		"0002_colour.sql", `ALTER TABLE widgets ADD COLUMN colour text NOT NULL DEFAULT 'red'`)
	_, err = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: edited})
	require.ErrorIs(t, err, pgmigrate.ErrChanged)
	_, err = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v1})
	require.ErrorIs(t, err, pgmigrate.ErrNewer, "an older program on a newer schema")
}

func TestAFailingMigrationLeavesTheSchemaAsItWas(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	bad := files("0001_widgets.sql", `CREATE TABLE widgets (id text PRIMARY KEY)`, "0002_bad.sql", `ALTER TABLE nowhere ADD COLUMN x int`)
	_, err := pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "other", FS: files("0001_gadgets.sql", `CREATE TABLE gadgets (id text)`)},
		pgmigrate.Set{Component: "w", FS: bad})
	require.ErrorContains(t, err, "0002_bad.sql")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE tablename IN ('widgets', 'gadgets', 'fifoworker_schema')`).Scan(&n))
	require.Zero(t, n, "nothing of the failed run stays, the other component's migration neither")
}

func TestConcurrentAppliesApplyEachFileOnce(t *testing.T) {
	ctx, db := t.Context(), pgtest.DB(t)
	db.SetMaxOpenConns(8)
	var wg sync.WaitGroup
	results := make([][]pgmigrate.Migration, 6)
	errs := make([]error, 6)
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = pgmigrate.Apply(ctx, db, pgmigrate.Set{Component: "w", FS: v2})
		})
	}
	wg.Wait()
	total := 0
	for i := range results {
		require.NoError(t, errs[i])
		total += len(results[i])
	}
	require.Equal(t, 2, total, "each file applied by exactly one of the racers")
	requireRecorded(ctx, t, db, 2)
}

func requireRecorded(ctx context.Context, t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM fifoworker_schema`).Scan(&n))
	require.Equal(t, want, n)
}

func TestMalformedSets(t *testing.T) {
	for name, s := range map[string]pgmigrate.Set{
		"gap":            {Component: "w", FS: files("0001_a.sql", "SELECT 1", "0003_c.sql", "SELECT 1")},
		"bad name":       {Component: "w", FS: files("1_a.sql", "SELECT 1")},
		"not sql":        {Component: "w", FS: files("0001_a.txt", "SELECT 1")},
		"empty":          {Component: "w", FS: fstest.MapFS{}},
		"bad component":  {Component: "W-1", FS: v1},
		"starts above 1": {Component: "w", FS: files("0002_b.sql", "SELECT 1")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Read()
			require.ErrorIs(t, err, pgmigrate.ErrMalformed)
		})
	}
}
