// Package pgcode reads PostgreSQL's SQLSTATE from a driver's error without
// importing the driver: the project's (internal/base/pgwire.Error), pgx's
// *pgconn.PgError and lib/pq's error say it
// through a SQLState method, so the stores and the wiring that classify
// errors link no driver, and a program on DynamoDB none either.
package pgcode

import "errors"

// Of returns the SQLSTATE of the first error in err's chain that carries
// one, and whether there is one.
func Of(err error) (string, bool) {
	var coded interface{ SQLState() string }
	if !errors.As(err, &coded) {
		return "", false
	}
	return coded.SQLState(), true
}

// LostRace reports whether err is a statement's refusal by a competing
// transaction, rolled back whole, rather than a failure:
// serialization_failure (40001: above Read Committed, a write that waited
// for another transaction on its row fails instead of re-checking the row
// that transaction left) or deadlock_detected (40P01). The statement
// changed nothing, so it may be decided and sent again.
func LostRace(err error) bool {
	code, _ := Of(err)
	return code == "40001" || code == "40P01"
}

// UniqueViolation reports whether err is unique_violation (23505).
func UniqueViolation(err error) bool {
	code, _ := Of(err)
	return code == "23505"
}
