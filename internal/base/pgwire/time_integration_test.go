//go:build integration

package pgwire_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// A time.Time argument reaches the server as the instant it is: in a
// zone whose offset has seconds (local mean time before 1937 in
// Amsterdam: +00:19:32) too, and cut to the server's microseconds as pgx
// cut it, never rounded up into the next second.
func TestATimeArgumentIsItsInstant(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	for _, at := range []time.Time{
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.FixedZone("AMT", 19*60+32)),
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.FixedZone("", -(3*3600+30*60+52))),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		var back time.Time
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT $1::timestamptz`, at).Scan(&back))
		want := at.Truncate(time.Microsecond)
		require.True(t, want.Equal(back), "sent %v, the server has %v", at, back.UTC())
	}
}
