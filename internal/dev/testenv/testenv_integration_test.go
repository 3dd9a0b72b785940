//go:build integration

package testenv_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fifoworker/fifoworker/internal/dev/testenv"
)

// A test's clients leave no keep-alive connection goroutines behind once the
// test is over, so goleak checks in integration tests stay meaningful.
func TestClientsCloseTheirIdleConnectionsAtCleanup(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Run("uses a client", func(t *testing.T) {
		_, err := testenv.SQS(t).ListQueues(context.Background(), &sqs.ListQueuesInput{})
		require.NoError(t, err)
	})
	require.NoError(t, goleak.Find(before))
}

func TestNamesAreUniqueAndValid(t *testing.T) {
	t.Parallel()
	a, b := testenv.Name(t, "Queue_X"), testenv.Name(t, "Queue_X")
	require.NotEqual(t, a, b)
	require.Regexp(t, `^[a-z0-9-]{1,48}$`, a)
}
