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
// the functions' driver (internal/base/pgwire) and the standard library.
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

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
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
// dropped when the test ends, through the driver the functions run on
// (internal/base/pgwire).
func DB(t testing.TB) *sql.DB {
	t.Helper()
	db := sql.OpenDB(Connector(t, Config(t)))
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Connector returns the functions' driver's connector for cfg, failing
// the test on a bad cfg: for a test that opens its own pools or wraps the
// connector.
func Connector(t testing.TB, cfg pgwire.Config) *pgwire.Connector {
	t.Helper()
	c, err := pgwire.NewConnector(cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return c
}

// Config returns the connection settings of a new, empty database of the
// server, dropped when the test ends.
func Config(t testing.TB) pgwire.Config {
	t.Helper()
	cfg, err := pgwire.ParseDSN(RequireServer(t))
	if err != nil {
		t.Fatalf("pgtest: %s: %v", DSNVar, err)
	}
	name := databaseName(t)
	admin(t, cfg, "CREATE DATABASE "+quoteIdent(name))
	t.Cleanup(func() { admin(t, cfg, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)") })
	own := cfg
	own.Database = name
	return own
}

// admin runs statement on the server's own database (the one the
// variable names), failing the test when it cannot.
func admin(t testing.TB, cfg pgwire.Config, statement string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := sql.OpenDB(Connector(t, cfg))
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, statement); err != nil {
		t.Errorf("pgtest: %s: %v", statement, err)
		if !strings.HasPrefix(statement, "DROP") {
			t.FailNow()
		}
	}
}

// quoteIdent quotes a name as an SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
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
