package pgopen

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/rds/auth"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// DSNVar names the local stack's server (`fifoworker local up` exports
// it; pkg/pgtest's DSNVar is the same name). When it is set it replaces
// every POSTGRES_* setting but POSTGRES_MAX_CONNS: a local server on
// 127.0.0.1 with trust authentication, no TLS and no token.
const DSNVar = "FIFOWORKER_POSTGRES_DSN"

// Bounds of POSTGRES_MAX_CONNS.
const (
	// DefaultMaxConns is the connections one function instance opens at
	// most: a Lambda instance runs one invocation at a time, whose lanes
	// (ten at most) share them.
	DefaultMaxConns = 4
	// MaxMaxConns bounds the setting: an instance needs no more than its
	// lanes, and every instance multiplies it.
	MaxMaxConns = 64
)

// MaxConnLifetime is how long the pool reuses a connection; the next
// statement then dials a new one, with a new token. Not for the token's
// sake: a token is checked when a connection opens, and a connection
// opened with it outlives it (AWS's IAM database authentication page: the
// token "doesn't affect the session after it is established"). For RDS
// Proxy's: it closes a client connection idle for its IdleClientTimeout,
// 30 minutes by default (RDS Proxy connection considerations, Aurora User
// Guide; template-postgres.yaml keeps the default). A connection the pool
// reuses has been idle no longer than it has lived, so under this
// lifetime it was never closed so; database/sql checks the age when it
// hands a connection out (its idle-time limit only in a background
// sweep, which races a thawed Lambda's first statement), and otherwise the
// statement after a long freeze would first ping a connection the proxy
// closed (a round trip lost, or, where no reset comes back, a wait to the
// statement's deadline). A new connection costs a TLS handshake and the proxy's check
// of the token every 20 minutes per connection.
const MaxConnLifetime = 20 * time.Minute

// errIAMNeedsCredentials is the problem of a deployed function whose AWS
// configuration has no credentials or region to sign its token with.
var errIAMNeedsCredentials = errors.New("an IAM authentication token needs the function's credentials and region (AWS_REGION and the role's credentials Lambda sets)")

// Open returns the pool of the function's database, or nil when a setting
// is wrong (env names it). Settings:
//   - FIFOWORKER_POSTGRES_DSN: locally only, the stack's server
//     (postgres://user@127.0.0.1:port/db?sslmode=disable); replaces:
//   - POSTGRES_HOST (the RDS Proxy's endpoint), POSTGRES_PORT (default
//     5432), POSTGRES_DATABASE, POSTGRES_USER: each new connection presents
//     an IAM authentication token for that user (signed locally with cfg's
//     credentials for cfg's region, no request; valid 15 minutes, so one is
//     signed per connection) as its password, over TLS verified against the
//     system's roots for POSTGRES_HOST (sslmode verify-full). No password
//     is read from anywhere.
//   - POSTGRES_MAX_CONNS: the pool's bound (default 4, 1 to 64), open and
//     idle alike; each connection is reused for MaxConnLifetime.
//
// The pool connects lazily: Open itself sends nothing. It returns nil
// too when env had a problem already, a setting the caller read before.
func Open(env *startup.Env, cfg aws.Config) *sql.DB {
	maxConns := env.Int("POSTGRES_MAX_CONNS", DefaultMaxConns, 1, MaxMaxConns)
	var db *sql.DB
	if dsn := env.StringOr(DSNVar, ""); dsn != "" {
		db = openLocal(env, dsn)
	} else {
		db = openIAM(env, cfg)
	}
	if db != nil && env.Err() != nil {
		_ = db.Close() // nothing was dialled: a misconfigured function gets no pool
		db = nil
	}
	if db == nil {
		return nil
	}
	bound(db, maxConns)
	return db
}

// bound sets db's bounds: maxConns connections, open and idle alike, each
// reused until it is MaxConnLifetime old.
func bound(db *sql.DB, maxConns int) {
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(MaxConnLifetime)
}

// openLocal opens the pool on the local server dsn names.
func openLocal(env *startup.Env, dsn string) *sql.DB {
	conf, err := pgwire.ParseDSN(dsn)
	if err != nil {
		// ParseDSN's error quotes no password; the DSN holds none anyway.
		env.Problem(DSNVar, fmt.Errorf("not a PostgreSQL connection string: %w", err))
		return nil
	}
	return open(env, DSNVar, conf)
}

// openIAM opens the pool on POSTGRES_HOST with an IAM token per connection.
func openIAM(env *startup.Env, cfg aws.Config) *sql.DB {
	conf, ok := iamConfig(env, cfg)
	if !ok {
		return nil
	}
	return open(env, "POSTGRES_HOST", conf)
}

// open returns the pool of conf's connections, or nil when conf has a
// problem, named as setting's. The driver (internal/base/pgwire) sends
// each statement as the unnamed one (Parse, Bind, Execute and Sync in
// one round trip) and never prepares a named statement: RDS Proxy pins a
// client's session to one database connection when it sees one (its
// guide on pinning), and a pinned session is no longer shared, so behind
// the proxy every pooled connection of every function instance would
// hold a database connection of its own, which is what the proxy is there
// to avoid (docs/BENCHMARKS.md, "Connections under Lambda's scaling, and
// RDS Proxy").
func open(env *startup.Env, setting string, conf pgwire.Config) *sql.DB {
	c, err := pgwire.NewConnector(conf)
	if err != nil {
		env.Problem(setting, err)
		return nil
	}
	return sql.OpenDB(c)
}

// iamConfig is the connection configuration of POSTGRES_HOST, whose
// Password signs each new connection's token; false when env has a
// problem it names.
func iamConfig(env *startup.Env, cfg aws.Config) (pgwire.Config, bool) {
	host := env.String("POSTGRES_HOST")
	port := env.Int("POSTGRES_PORT", 5432, 1, 65535)
	database := env.String("POSTGRES_DATABASE")
	user := env.String("POSTGRES_USER")
	if host == "" || database == "" || user == "" {
		return pgwire.Config{}, false // named by env
	}
	if strings.ContainsAny(host, " '\\=/:,") {
		env.Problem("POSTGRES_HOST", fmt.Errorf("%q is not a host name", host))
		return pgwire.Config{}, false
	}
	if cfg.Credentials == nil || cfg.Region == "" {
		env.Problem("POSTGRES_USER", errIAMNeedsCredentials)
		return pgwire.Config{}, false
	}
	endpoint := net.JoinHostPort(host, strconv.Itoa(port))
	return pgwire.Config{
		Host: host, Port: port, Database: database, User: user,
		// sslmode verify-full: the chain against the system's roots, and
		// the name; no plaintext fallback.
		TLS: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12},
		Password: func(ctx context.Context) (string, error) {
			token, err := auth.BuildAuthToken(ctx, endpoint, cfg.Region, user, cfg.Credentials)
			if err != nil {
				return "", fmt.Errorf("pgopen: IAM authentication token for %s at %s: %w", user, endpoint, err)
			}
			return token, nil
		},
	}, true
}
