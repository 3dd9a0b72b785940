//go:build integration

package lambdawire

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// The wired sweeper on the template's tables: a job created an hour ago by
// an intake of 64 shards, in a shard above 15, is stuck. After a deploy
// that lowered LIVE_SHARDS to 16, every run fails naming both counts and
// sweeps nothing (it would not see the job); with 64 again, the run finds
// and nudges it.
func TestTheWiredSweeperNeverWalksFewerShardsThanJobsWereWrittenWith(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	db := DynamoDB(cfg)
	res := deployTemplateResources(t, cfg, db, "shards", "JobsTable", "ViewsTable", "TotalsTable", "CandidatesBucket")

	id := ""
	for i := 0; id == ""; i++ {
		if n, _ := strconv.Atoi(jobs.LiveShardOf("job-"+strconv.Itoa(i), 64)); n >= 16 {
			id = "job-" + strconv.Itoa(i)
		}
	}
	hourAgo := func() time.Time { return time.Now().Add(-time.Hour) }
	intake, err := jobs.NewDynamoStore(jobs.DynamoConfig{Client: db, Table: res["JobsTable"], LiveShards: 64, Config: jobs.Config{Now: hourAgo}})
	require.NoError(t, err)
	_, err = intake.Create(t.Context(), jobs.CreateRequest{JobID: id, IntentID: "intent-" + id, Tenant: "t-1"})
	require.NoError(t, err)

	sweep := func(shards string) (sweeper.Report, error) {
		run, err := Sweeper(startup.NewEnvFrom(map[string]string{
			"JOBS_TABLE": res["JobsTable"], "CANDIDATES_BUCKET": res["CandidatesBucket"],
			"VIEWS_TABLE": res["ViewsTable"], "TOTALS_TABLE": res["TotalsTable"], "LIVE_SHARDS": shards,
		}), cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		return run(t.Context(), sweeper.Options{})
	}
	_, err = sweep("16")
	require.ErrorIs(t, err, jobs.ErrLiveShardsShrunk)
	require.ErrorContains(t, err, "LIVE_SHARDS: jobs: live shards below the recorded count: LiveShards 16, but jobs were written with 64")
	j, err := intake.Get(t.Context(), id)
	require.NoError(t, err)
	require.Zero(t, j.Version, "nothing swept")

	rep, err := sweep("64")
	require.NoError(t, err)
	require.Equal(t, 1, rep.Stuck)
	require.Equal(t, 1, rep.Nudged)
}
