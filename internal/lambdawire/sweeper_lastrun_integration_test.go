//go:build integration

package lambdawire

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// The wired sweeper keeps each run's report beside its cursors, where the
// operator's console reads it; a dry run keeps none.
func TestTheWiredSweeperKeepsItsLastRun(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	res := deployTemplateResources(t, cfg, DynamoDB(cfg), "lastrun", "JobsTable", "ViewsTable", "TotalsTable", "CandidatesBucket")
	run, err := Sweeper(startup.NewEnvFrom(map[string]string{
		"JOBS_TABLE": res["JobsTable"], "CANDIDATES_BUCKET": res["CandidatesBucket"],
		"VIEWS_TABLE": res["ViewsTable"], "TOTALS_TABLE": res["TotalsTable"],
	}), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	kept, err := sweeper.NewS3LastRun(sweeper.S3LastRunConfig{Client: S3(cfg), Bucket: res["CandidatesBucket"]})
	require.NoError(t, err)

	_, err = run(t.Context(), sweeper.Options{DryRun: true})
	require.NoError(t, err)
	_, err = kept.LastRun(t.Context())
	require.ErrorIs(t, err, sweeper.ErrNoLastRun, "a dry run keeps nothing")

	rep, err := run(t.Context(), sweeper.Options{})
	require.NoError(t, err)
	last, err := kept.LastRun(t.Context())
	require.NoError(t, err)
	require.Equal(t, rep, last.Report)
	require.False(t, last.At.IsZero())
}
