// Package pgopen opens a function's PostgreSQL database: the one package
// of the wiring that imports the project's driver (internal/base/pgwire)
// and the RDS IAM authentication token signer. Only the PostgreSQL
// bootstraps (functions/<name>/main_postgres.go, built with the postgres
// tag) and the local pipeline import it, passing Open to
// internal/lambdawire's PostgreSQL builders; internal/lambdawire itself
// imports database/sql alone, so a DynamoDB bootstrap links no driver
// (internal/dev/pipeline's tests hold it).
//
// Open does no network: the pool dials its first connection when a
// statement first needs one, so a function's init stays within its budget
// and a database that is down fails the invocation, not the init.
package pgopen
