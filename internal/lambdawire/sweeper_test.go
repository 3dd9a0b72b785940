package lambdawire

import (
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
)

func TestSweeperNamesEveryMisconfiguredSetting(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	_, err := Sweeper(NewEnvFrom(map[string]string{
		"MAX_GENERATIONS": "5", "SWEEP_GRACE": "soon", "SWEEP_STUCK_AFTER": "10ms", "SWEEP_MAX_ITEMS": "0",
		"SWEEP_REPAIR_AFTER": "59s",
	}), aws.Config{}, log)
	require.ErrorContains(t, err, "JOBS_TABLE is not set")
	require.ErrorContains(t, err, "CANDIDATES_BUCKET is not set")
	require.ErrorContains(t, err, "VIEWS_TABLE is not set")
	require.ErrorContains(t, err, "TOTALS_TABLE is not set")
	require.ErrorContains(t, err, `SWEEP_REPAIR_AFTER="59s"`)
	require.ErrorContains(t, err, `MAX_GENERATIONS="5"`)
	require.ErrorContains(t, err, `SWEEP_GRACE="soon"`)
	require.ErrorContains(t, err, `SWEEP_STUCK_AFTER="10ms"`)
	require.ErrorContains(t, err, `SWEEP_MAX_ITEMS="0"`)

	h, err := Sweeper(NewEnvFrom(map[string]string{
		"JOBS_TABLE": "jobs", "CANDIDATES_BUCKET": "candidates", "VIEWS_TABLE": "views", "TOTALS_TABLE": "totals",
		"SWEEP_GRACE": "1s", "SWEEP_REPAIR_AFTER": "1m",
	}), aws.Config{Region: "eu-west-1"}, log)
	require.NoError(t, err)
	require.NotNil(t, h)
}
