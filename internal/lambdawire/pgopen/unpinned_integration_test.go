//go:build integration

package pgopen_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// The pool prepares no statement on the server: RDS Proxy pins a session
// that does (pgopen.go, open). pg_prepared_statements lists what the
// session has prepared, the statement that reads it included when it was
// prepared, so a driver caching statements (as pgx does by default) shows
// at least one.
func TestThePoolPreparesNoStatement(t *testing.T) {
	env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: pgtest.RequireServer(t)})
	db := pgopen.Open(env, aws.Config{})
	require.NoError(t, env.Err())
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	var one int
	require.NoError(t, conn.QueryRowContext(t.Context(), `SELECT $1::int`, 1).Scan(&one))
	var prepared int
	require.NoError(t, conn.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_prepared_statements WHERE $1::int = 1`, 1).Scan(&prepared))
	require.Zero(t, prepared, "the session prepared statements")
}
