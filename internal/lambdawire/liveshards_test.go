package lambdawire

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
	"github.com/fifoworker/fifoworker/pkg/jobs"
)

// TestLiveShardsIsBoundedAtExactlyItsBounds: every function that writes
// jobs or walks the indexes on DynamoDB names LIVE_SHARDS as a problem
// one past either bound (jobs.MinLiveShards, jobs.MaxLiveShards) and not
// at them.
func TestLiveShardsIsBoundedAtExactlyItsBounds(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	cfg := aws.Config{Region: "eu-west-1"}
	functions := map[string]func(*startup.Env) error{
		"intake":  func(env *startup.Env) error { _, err := Intake(env, cfg, log); return err },
		"worker":  func(env *startup.Env) error { _, err := Worker(env, cfg, log); return err },
		"sweeper": func(env *startup.Env) error { _, err := Sweeper(env, cfg, log); return err },
	}
	for name, open := range functions {
		for v, ok := range map[string]bool{
			strconv.Itoa(jobs.MinLiveShards - 1): false, strconv.Itoa(jobs.MinLiveShards): true,
			strconv.Itoa(jobs.MaxLiveShards): true, strconv.Itoa(jobs.MaxLiveShards + 1): false, "sixteen": false,
		} {
			err := open(startup.NewEnvFrom(map[string]string{"LIVE_SHARDS": v}))
			require.Error(t, err, "%s: the other settings are missing", name)
			if ok {
				require.NotContains(t, err.Error(), "LIVE_SHARDS", "%s %s", name, v)
			} else {
				require.ErrorContains(t, err, `LIVE_SHARDS="`+v+`"`, name)
			}
		}
	}
}

type checker struct{ err error }

func (c checker) CheckLiveShards(context.Context) error { return c.err }

// TestTheSweeperRunsOnlyOnARecordedShardCount: a run whose LIVE_SHARDS is
// below the recorded count fails, naming it, and sweeps nothing; one that
// passes the check sweeps.
func TestTheSweeperRunsOnlyOnARecordedShardCount(t *testing.T) {
	t.Parallel()
	ran := 0
	run := func(context.Context, sweeper.Options) (sweeper.Report, error) { ran++; return sweeper.Report{}, nil }
	shrunk := errors.Join(jobs.ErrLiveShardsShrunk, errors.New("LiveShards 16, but jobs were written with 64"))
	_, err := checkingLiveShards(checker{shrunk}, run)(t.Context(), sweeper.Options{})
	require.ErrorIs(t, err, jobs.ErrLiveShardsShrunk)
	require.ErrorContains(t, err, "LIVE_SHARDS")
	require.Zero(t, ran, "nothing swept on too few shards")
	_, err = checkingLiveShards(checker{}, run)(t.Context(), sweeper.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, ran)
}
