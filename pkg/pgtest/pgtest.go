// Package pgtest gives integration tests a PostgreSQL database of their
// own on the server FIFOWORKER_POSTGRES_DSN names: `fifoworker local up`
// starts a PostgreSQL 18 server on 127.0.0.1 and sets the variable, and so
// does `fifoworker local run -- CMD` for its command.
//
// Each call of DB creates a new, empty database, so that tests (and test
// packages running side by side) share the server but never a table, and
// drops it when the test ends. A test without the variable fails, saying
// what to set: an integration test never skips.
//
// It is a library, like the packages whose tests use it: it imports only
// the pgx driver and the standard library.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// DSNVar is the variable that names the server: a PostgreSQL URL or
// keyword/value connection string whose user may create databases.
const DSNVar = "FIFOWORKER_POSTGRES_DSN"

// RequireServer returns the server's connection string, or fails the test
// saying what to set.
func RequireServer(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNVar)
	if dsn == "" {
		t.Fatalf("integration test needs a PostgreSQL server: %s is not set. "+
			"In this repository, make test starts one, or: eval \"$(go run ./cmd/fifoworker local up)\"", DSNVar)
	}
	return dsn
}

// DB returns a pool on a new, empty database of the server, closed and
// dropped when the test ends.
func DB(t testing.TB) *sql.DB {
	t.Helper()
	db := sql.OpenDB(stdlib.GetConnector(*Config(t)))
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Config returns the connection settings of a new, empty database of the
// server, dropped when the test ends: for a test that opens its own pools
// (pgx's or database/sql's, as stdlib.GetConnector).
func Config(t testing.TB) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(RequireServer(t))
	if err != nil {
		t.Fatalf("pgtest: %s: %v", DSNVar, err)
	}
	name := databaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", cfg.Host, err)
	}
	defer func() { _ = admin.Close(context.Background()) }()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() { drop(t, cfg, name) })
	own := cfg.Copy()
	own.Database = name
	// As the functions' pools send statements (unnamed, never a prepared
	// statement RDS Proxy would pin a session for): the stores are tested
	// in the mode they run in.
	own.DefaultQueryExecMode = pgx.QueryExecModeExec
	return own
}

// drop removes the database, disconnecting whatever the test left open.
func drop(t testing.TB, cfg *pgx.ConnConfig, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Errorf("pgtest: drop %s: %v", name, err)
		return
	}
	defer func() { _ = admin.Close(context.Background()) }()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop %s: %v", name, err)
	}
}

// databaseName is "t_" and the test's name, lower case, letters and digits
// kept and the rest as '_', cut to leave room for 8 random hex digits:
// at most 63 bytes, PostgreSQL's identifier limit.
func databaseName(t testing.TB) string {
	var b strings.Builder
	b.WriteString("t_")
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 50 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b.WriteString("_" + hex.EncodeToString(rnd[:]))
	return b.String()
}
