//go:build integration

package pgwire_test

import (
	"database/sql/driver"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// A session whose text the driver would misread from now on (a SET of
// client_encoding, whose other encoding would also garble each argument,
// or of DateStyle) fails the statement that changed it, naming the
// setting, and is broken: nothing more is read or written in it.
func TestASettingTheDriverCannotReadBreaksTheSession(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	ctx := t.Context()
	for set, want := range map[string]string{
		`SET client_encoding = 'LATIN1'`: "client_encoding is LATIN1",
		`SET DateStyle = 'German'`:       "DateStyle is German",
	} {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, set)
		require.ErrorContains(t, err, want, set)
		var s string
		err = conn.QueryRowContext(ctx, `SELECT $1::text`, "é").Scan(&s)
		require.ErrorIs(t, err, driver.ErrBadConn, "%s: then got %q", set, s)
		_ = conn.Close()
	}
	_, err := db.ExecContext(ctx, `SET client_encoding = 'UTF8'`)
	require.NoError(t, err, "UTF8 and ISO dates are what the session has already")
}
