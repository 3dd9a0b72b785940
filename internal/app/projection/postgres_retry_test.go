package projection

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

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

// TestAgainGivesUpOnTheLastRoundWithTheServersError: a deadlock on a round
// before the last is waited out and run again; on round maxRounds (the
// bound, exactly) the statement is not run again and the caller gets the
// server's error itself, not a "kept changing" that hides the SQLSTATE. A
// cancelled wait returns the context's error.
func TestAgainGivesUpOnTheLastRoundWithTheServersError(t *testing.T) {
	t.Parallel()
	deadlock := fmt.Errorf("apply: %w", sqlStateError("40P01"))
	synctest.Test(t, func(t *testing.T) {
		retry, err := again(t.Context(), maxRounds-1, deadlock)
		require.NoError(t, err)
		require.True(t, retry, "round %d of %d: run again", maxRounds-1, maxRounds)
		retry, err = again(t.Context(), maxRounds, deadlock)
		require.ErrorIs(t, err, sqlStateError("40P01"))
		require.False(t, retry, "round %d of %d: give up", maxRounds, maxRounds)
		retry, err = again(t.Context(), 1, nil)
		require.NoError(t, err)
		require.False(t, retry, "no error: go on")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		retry, err = again(ctx, 1, deadlock)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, retry)
	})
}
