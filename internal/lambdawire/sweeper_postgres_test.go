package lambdawire

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/dev/samtemplate"
	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

// SWEEP_PURGE_LIMIT, the rows a PostgreSQL sweeper's run purges, is taken
// from 1 to sweeper.MaxItemsLimit and refused, named, outside.
func TestSweeperPostgresTakesThePurgeLimitWithinItsBounds(t *testing.T) {
	t.Parallel()
	tpl, err := samtemplate.Load("../../template-postgres.yaml")
	require.NoError(t, err)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	for limit, ok := range map[int]bool{0: false, 1: true, sweeper.MaxItemsLimit: true, sweeper.MaxItemsLimit + 1: false} {
		env := templateEnv(t, tpl, "SweeperFunction")
		env["SWEEP_PURGE_LIMIT"] = strconv.Itoa(limit)
		_, err := SweeperPostgres(pgopen.Open)(startup.NewEnvFrom(env), cfg, slog.New(slog.DiscardHandler))
		if ok {
			require.NoError(t, err, limit)
		} else {
			require.ErrorContains(t, err, "SWEEP_PURGE_LIMIT", limit)
		}
	}
}
