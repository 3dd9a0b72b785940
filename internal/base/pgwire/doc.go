// Package pgwire is fifoworker's PostgreSQL driver for database/sql: the
// frontend/backend protocol (version 3.0) spoken directly, with only what
// the stores, the relay and the migrations use, so that a PostgreSQL
// function's bootstrap stays within its 10 MB goal. pgx, which it
// replaces in the functions, linked 2.5 MB more: its type system (pgtype),
// its protocol package and golang.org/x/text's SASLprep tables.
//
// What it speaks:
//   - TCP to Config.Host, with TLS first when Config.TLS is set (the
//     SSLRequest, then a TLS client handshake) or, sslmode=prefer, when the
//     server offers it.
//   - Authentication by trust, cleartext password (what RDS Proxy asks of a
//     client presenting an IAM token), MD5 or SCRAM-SHA-256 (without channel
//     binding; a password is used as its bytes, the SASLprep of ASCII).
//   - Every statement with arguments as an unnamed statement of the extended
//     protocol: Parse, Bind, Describe, Execute and Sync in one write, so one
//     round trip, and never a named prepared statement (RDS Proxy pins a
//     session that prepares one). Arguments go as text, []byte as binary (a
//     bytea's bytes), []string and []int64 as array literals; the server
//     infers each parameter's type from the statement, so a statement casts
//     where it means a type ($1::jsonb).
//   - A statement without arguments through the simple protocol, which
//     allows several statements in one string (a migration file).
//   - Results in text format, read whole before the call returns (the
//     stores read bounded pages), decoded by the column's type: integers
//     and oid as int64, float4/8 as float64, bool, bytea as []byte, json and
//     jsonb as []byte, date and timestamps as time.Time, the rest as string.
//
// A context that ends during a call breaks the connection (a deadline set
// on the socket, then the socket closed), which database/sql then drops:
// the call returns the context's error. What it had sent is not
// withdrawn: a statement runs to its end (and commits, outside a
// transaction), and the server ends the session when it finds the socket
// closed. An ended context loses the answer, not the write; the stores'
// fenced writes are built for such a lost answer. A server's error is *Error, whose SQLState
// internal/base/pgcode reads; the connection stays usable after it.
//
// The pool's reset (database/sql's, before it hands a session out)
// refuses a session left in a transaction, and one the server ended
// while it sat idle (a non-blocking read of its socket finds the
// server's goodbye or the socket's end): database/sql then runs the call
// on a new session, nothing having been sent on the dead one. A SET of
// client_encoding or DateStyle, which the start-up checks, fails its
// statement and breaks the session.
package pgwire
