package pgsource_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The relay's function links what this package and its nudges reach: no
// service client of the SDK (DynamoDB's above all: the job item comes from
// pkg/jobs/jobitem, never pkg/jobs), and no PostgreSQL driver: neither
// the functions' (internal/base/pgwire, with which the wiring opens the
// pool) nor pgx.
func TestTheRelayLinksNoServiceClientNorDriver(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"github.com/fifoworker/fifoworker/internal/app/outbox/pgsource").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/fifoworker/fifoworker/pkg/jobs/jobitem", "the list is the package's")
	for _, d := range deps {
		require.False(t, strings.HasPrefix(d, "github.com/aws/aws-sdk-go-v2/service/"), "links %s", d)
		require.NotEqual(t, "github.com/fifoworker/fifoworker/pkg/jobs", d, "links the job stores (and DynamoDB's client)")
		require.False(t, strings.HasPrefix(d, "github.com/jackc/"), "links %s", d)
		require.NotEqual(t, "github.com/fifoworker/fifoworker/internal/base/pgwire", d, "links the driver")
	}
}
