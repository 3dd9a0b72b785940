package projection

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// sqlStateError is an error with a SQLSTATE, as the driver's
// (pgconn.PgError) is.
type sqlStateError string

func (e sqlStateError) Error() string    { return "ERROR (SQLSTATE " + string(e) + ")" }
func (e sqlStateError) SQLState() string { return string(e) }

// TestRetryableIsADeadlockOrASerializationFailure: a statement is run
// again only after the two errors that say it lost a race and changed
// nothing, however wrapped; never after another error of the server (a
// constraint's) or of anything else.
func TestRetryableIsADeadlockOrASerializationFailure(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		sqlStateError("40P01"):                          true, // deadlock_detected
		sqlStateError("40001"):                          true, // serialization_failure
		fmt.Errorf("query: %w", sqlStateError("40P01")): true,
		sqlStateError("23514"):                          false, // check_violation
		sqlStateError("55P03"):                          false, // lock_not_available
		errors.New("40P01"):                             false,
	} {
		require.Equal(t, want, retryable(err), "%v", err)
	}
}
